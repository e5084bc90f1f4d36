"""Events typed with the core's enums read journals written as plain strings, and write the same."""

from __future__ import annotations

import json

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Decision
from mala_tui.core.phases import Cause, Phase, Trigger
from mala_tui.core.retry import RetryDecision
from mala_tui.core.usage import UsageSource
from mala_tui.core.window import WindowSource

# Lines as a journal holds them, including ones from before these fields were typed
# (no mask or wind-down trigger at all: the defaults apply).
LINES = [
    {"type": "phase_changed", "at": 1.0, "session": "a", "before": "running",
     "after": "winding_down", "trigger": "hard_pressure"},
    {"type": "usage", "at": 2.0, "session": "a", "tokens": 5, "window": 10,
     "source": "cumulative", "window_source": "model table"},
    {"type": "approval_decided", "at": 3.0, "session": "a", "decision": "edit",
     "decided_by": "operator"},
    {"type": "session_ended", "at": 4.0, "session": "a", "status": "denied"},
    {"type": "idle_timeout", "at": 5.0, "session": "a", "idle_seconds": 3.0, "retry": 1,
     "decision": "fail_fast"},
    {"type": "mask_applied", "at": 6.0, "session": "a", "count": 1, "tool_use_ids": ["t"],
     "placeholders": ["p"], "estimated_tokens": 1, "tokens_before": 2, "total_masked": 1},
    {"type": "wind_down", "at": 7.0, "session": "a", "tokens": 9, "window": 10},
]  # fmt: skip


def test_string_values_read_back_as_the_core_enums() -> None:
    changed, usage, decided, ended, idle, masked, wind_down = map(ev.parse_event, LINES)
    assert isinstance(changed, ev.PhaseChanged)
    assert (changed.before, changed.after, changed.trigger) == (
        Phase.RUNNING,
        Phase.WINDING_DOWN,
        Trigger.HARD_PRESSURE,
    )
    assert changed.after is Phase.WINDING_DOWN
    assert isinstance(usage, ev.UsageRecorded) and usage.source is UsageSource.CUMULATIVE
    assert usage.window_source is WindowSource.TABLE
    assert isinstance(decided, ev.ApprovalDecided) and decided.decision is Decision.EDIT
    assert isinstance(ended, ev.SessionEnded) and ended.status is EndStatus.DENIED
    assert isinstance(idle, ev.IdleTimeoutSeen) and idle.decision is RetryDecision.FAIL_FAST
    assert isinstance(masked, ev.MaskApplied) and masked.trigger is Cause.SOFT_THRESHOLD
    assert isinstance(wind_down, ev.WindDownSent) and wind_down.trigger is Cause.HARD_THRESHOLD


@pytest.mark.parametrize("line", LINES, ids=[line["type"] for line in LINES])
def test_a_typed_event_is_written_back_as_the_same_strings(line: dict[str, object]) -> None:
    written = json.loads(ev.event_json(ev.parse_event(line)))
    assert {key: written[key] for key in line} == line


def test_a_value_outside_the_enum_is_a_clear_error() -> None:
    with pytest.raises(ev.BadEventError, match="phase_changed event: field after: Input should be"):
        ev.parse_event({**LINES[0], "after": "sleeping"})


@pytest.mark.parametrize("kind", [["x"], {}, None, 3, 2.5, True])
def test_a_type_that_is_not_a_string_is_an_unknown_event_not_a_crash(kind: object) -> None:
    with pytest.raises(ev.UnknownEventError, match="unknown event type"):
        ev.parse_event({"type": kind, "at": 1.0})
