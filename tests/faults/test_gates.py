"""The fault suite's gate: counts as each trial expects, designed reasons only, nothing lost."""

from __future__ import annotations

from typing import Any

from mala_tui.bench.fault_harness import Expect, TrialRow, sort_outcome
from mala_tui.bench.faults import IDLE_LIMIT, rows_table
from mala_tui.core.actions import EndStatus


def row(**changes: Any) -> TrialRow:
    base: dict[str, Any] = {
        "fault": "stalls",
        "sessions": 4,
        "injected": 9,
        "recovered": 3,
        "failed_fast": 1,
        "lost": 0,
        "reasons": ("idle for 4 s: max retries (2) exceeded",),
        "processes_left": 0,
        "journal_lines_lost": 0,
        "wall_s": 1.0,
    }
    return TrialRow(**{**base, **changes})


STALLS = Expect(3, 1, (IDLE_LIMIT,))


def test_a_trial_as_designed_passes() -> None:
    assert STALLS.misses(row()) == []
    assert "| yes |" in rows_table([row()], [STALLS])


def test_counts_other_than_expected_fail() -> None:
    assert STALLS.misses(row(recovered=4, failed_fast=0, reasons=())) == [
        "expected 3 recovered and 1 failed fast, got 4 and 0"
    ]


def test_a_reason_that_is_not_a_designed_one_fails() -> None:
    found = STALLS.misses(row(reasons=("the agent process exited with code 1",)))
    assert found == ["not a designed reason: the agent process exited with code 1"]
    assert "NO: not a designed reason" in rows_table([row(reasons=("x",))], [STALLS])


def test_anything_lost_left_or_incomplete_fails() -> None:
    for broken in (
        row(lost=1, recovered=2),
        row(processes_left=1),
        row(journal_lines_lost=1),
        row(journal_complete=False),
        row(problems=("exit status 1, expected 143",)),
    ):
        assert STALLS.misses(broken), broken


def test_none_means_the_rest() -> None:
    assert Expect(None, 1, (IDLE_LIMIT,)).misses(row()) == []


def test_an_internal_error_is_lost_not_failed_fast() -> None:
    assert sort_outcome(EndStatus.FAILED, "internal error: KeyError('x')", False) == "lost"
    assert sort_outcome(EndStatus.FAILED, "idle for 4 s: max retries (2) exceeded", False) == (
        "failed fast"
    )
    assert sort_outcome(EndStatus.FAILED, "  ", False) == "lost"
    assert sort_outcome(EndStatus.DONE, "done", finished=False) == "lost"  # done without the work
    assert sort_outcome(EndStatus.DONE, "done", finished=True) == "recovered"
    assert sort_outcome(EndStatus.STOPPED, "stopped by the operator", False) == "lost"
    assert sort_outcome(EndStatus.STOPPED, "disk: full", False, designed_stop="full") == (
        "failed fast"
    )


def test_reasons_lose_their_trial_folders_but_nothing_else() -> None:
    from mala_tui.bench.fault_harness import _without_paths

    assert _without_paths("max retries (2) exceeded") == "max retries (2) exceeded"
    assert _without_paths("No space left on device (/tmp/x/runs/r/events.jsonl)") == (
        "No space left on device (…/events.jsonl)"
    )
