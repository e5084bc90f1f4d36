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


@pytest.mark.parametrize("line", LINES, ids=[str(line["type"]) for line in LINES])
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


# Every place an error or a warning was recorded from, in any version (the history of
# `where=`, `ProblemItem(`, the runners' `error(` and the constants they were given).
WHERE_WRITTEN = [
    "agent", "api", "claude stderr", "hook", "host", "masking", "notify", "operator",
    "permission", "queue", "runtime", "snapshot", "usage", "window",
]  # fmt: skip

# Every value earlier versions wrote into the fields typed later (found in the history of
# their writers: restart_flow, the supervisor's desk, demo/run/bench/sample starts).
HISTORY: list[tuple[dict[str, object], str, list[str]]] = [
    (
        {"type": "approval_decided", "at": 1.0, "session": "a", "decision": "approve"},
        "decided_by",
        ["operator", "timeout", "policy"],
    ),
    (
        {"type": "restart", "at": 1.0, "session": "a", "continuation": 1, "reason": "r",
         "tokens_before": 9, "checkpoint_number": 1, "trigger": "hard_threshold"},
        "approved_by",
        ["operator", "auto", "timeout", "policy", "resume"],
    ),
    (
        {"type": "restart", "at": 1.0, "session": "a", "continuation": 1, "reason": "r",
         "tokens_before": 9, "checkpoint_number": 1, "approved_by": "auto"},
        "trigger",
        ["operator", "hard_threshold", "projection", "emergency", "budget", "node_lost",
         "resume"],
    ),
    (
        {"type": "run_started", "at": 1.0, "run_id": "r", "sessions": ["a"]},
        "mode",
        ["run", "demo", "faults", "bench", "sample"],
    ),
    (
        {"type": "api_error", "at": 1.0, "session": "a", "terminal_reason": "api_error",
         "status": 500, "retry": 1},
        "decision",
        ["resume", "fresh", "fail_fast", "give_up", "none"],
    ),
    (
        {"type": "permission_decided", "at": 1.0, "session": "a", "request_id": "1",
         "tool": "Bash", "answer": "deny"},
        "decided_by",
        ["operator", "policy", "timeout", "session-rule"],
    ),
    (
        {"type": "error", "at": 1.0, "session": "a", "message": "m"},
        "where",
        WHERE_WRITTEN,
    ),
    (
        {"type": "warning", "at": 1.0, "session": "a", "message": "m"},
        "where",
        WHERE_WRITTEN,
    ),
    (
        {"type": "message", "at": 1.0, "session": "a", "kind": "text"},
        "role",
        ["user", "assistant"],
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("base", "field", "value"),
    [(base, field, value) for base, field, values in HISTORY for value in values],
    ids=lambda part: part if isinstance(part, str) else "",
)
def test_every_value_an_earlier_version_wrote_reads_back_and_writes_the_same(
    base: dict[str, object], field: str, value: str
) -> None:
    line = {**base, field: value}
    event = ev.parse_event(line)
    typed = getattr(event, field)
    assert typed == value and type(typed) is not str  # an enum member, not a bare string
    assert json.loads(ev.event_json(event))[field] == value


def test_an_api_error_from_before_its_decision_was_recorded_reads_and_writes_back() -> None:
    base = HISTORY[4][0]
    for line in (base, {**base, "decision": ""}):
        event = ev.parse_event(line)
        assert isinstance(event, ev.ApiErrorSeen) and event.decision == ""
        assert json.loads(ev.event_json(event))["decision"] == ""


def test_a_restart_from_before_its_trigger_was_recorded_has_none() -> None:
    base = HISTORY[2][0]
    assert isinstance(older := ev.parse_event(base), ev.Restarted) and older.trigger is None
    assert isinstance(blank := ev.parse_event({**base, "trigger": ""}), ev.Restarted)
    assert blank.trigger is None


@pytest.mark.parametrize(
    ("base", "field"), [(base, field) for base, field, _ in HISTORY], ids=lambda p: str(p)[:12]
)
def test_a_value_no_version_wrote_is_a_clear_error(base: dict[str, object], field: str) -> None:
    with pytest.raises(ev.BadEventError, match=f"field {field}: Input should be"):
        ev.parse_event({**base, field: "somebody"})
