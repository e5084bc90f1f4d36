"""The fault suite's quick part: each fault met by real CLI sessions, nothing lost.

`python -m mala_tui.bench faults` runs the same trials at scale (dozens of stalls across
concurrent sessions, storms on several sessions, repeated kills).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mala_tui.bench.fault_harness import TrialRow, run_trial
from mala_tui.bench.kill_trial import kill_mid_run
from mala_tui.bench.model_faults import (
    TIGHT_WINDOW,
    error_sessions,
    reset_sessions,
    stall_sessions,
    too_long_sessions,
)
from mala_tui.loopback.faults import FaultKind

pytestmark = [pytest.mark.integration, pytest.mark.alone]


def assert_nothing_lost(row: TrialRow) -> None:
    assert row.lost == 0, row.reasons
    assert row.processes_left == 0
    assert row.journal_lines_lost == 0


async def test_stalls_across_sessions_recover_or_fail_fast_past_the_retry_limit(
    tmp_path: Path,
) -> None:
    # Three sessions meet two stalls each (within max_idle_retries = 2), one meets three.
    row = await run_trial("stalls", stall_sessions(3, 1), tmp_path)
    assert_nothing_lost(row)
    assert row.injected == 3 * 2 + 3
    assert (row.recovered, row.failed_fast) == (3, 1)
    (reason,) = row.reasons
    assert reason.startswith("idle for ") and reason.endswith("max retries (2) exceeded")


@pytest.mark.parametrize("kind", ["overloaded", "api_error"])
async def test_an_error_storm_longer_than_the_clis_retries_is_carried_by_mala_tui(
    kind: FaultKind, tmp_path: Path
) -> None:
    # Four errors in a row, the CLI allowed two retries: its third attempt fails, the turn
    # ends in api_error, and mala-tui's retry resumes the session past the storm.
    row = await run_trial(kind, error_sessions(kind, 1, storm=4, cli_retries=2), tmp_path)
    assert_nothing_lost(row)
    assert row.injected == 4
    assert row.recovered == 1


async def test_connection_resets_mid_stream_are_recovered(tmp_path: Path) -> None:
    row = await run_trial("reset", reset_sessions(1), tmp_path)
    assert_nothing_lost(row)
    assert row.injected == 2
    assert row.recovered == 1


async def test_a_window_too_small_is_recovered_from_a_harness_checkpoint(tmp_path: Path) -> None:
    row = await run_trial("too long", too_long_sessions(1), tmp_path, window=TIGHT_WINDOW)
    assert_nothing_lost(row)
    assert row.injected >= 1  # the model refused at least one prompt as too long
    assert row.recovered == 1


def test_kill_9_mid_run_leaves_no_process_and_a_readable_journal(tmp_path: Path) -> None:
    row = kill_mid_run(tmp_path, after_lines=40)
    assert row.processes_left == 0
    assert row.journal_lines >= 40
    assert row.journal_lines_lost == 0
    assert row.runs_lists_it and row.show_json_ok
    assert row.sessions_in_show == 4
