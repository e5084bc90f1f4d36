"""The fault suite's trials of mala-tui's own world, small: real CLI sessions, nothing lost.

`python -m mala_tui.bench faults` runs them at full size (a hundred tasks at once).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from mala_tui.bench.fault_harness import Expect
from mala_tui.bench.faults import STOPPED_BY_SIGNAL
from mala_tui.bench.own_faults.disk_full import DISK_FULL_REASON, disk_full_trial
from mala_tui.bench.own_faults.hostile_endpoint import AUTH_FAILED, hostile_endpoint_trial
from mala_tui.bench.own_faults.many_tasks import many_tasks_trial
from mala_tui.bench.own_faults.poisoned_journal import poisoned_journal_trial
from mala_tui.bench.own_faults.signals import DEMO_SESSIONS, signal_mid_run

pytestmark = [pytest.mark.integration, pytest.mark.alone]


async def test_a_disk_that_fills_mid_run_stops_every_session_for_that_reason(
    tmp_path: Path,
) -> None:
    row = await disk_full_trial(tmp_path, 2)
    assert Expect(0, 2, (DISK_FULL_REASON,)).misses(row) == []


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_run_stops_the_demo_cleanly(number: signal.Signals, tmp_path: Path) -> None:
    row = signal_mid_run(tmp_path, number)
    assert Expect(0, DEMO_SESSIONS, (STOPPED_BY_SIGNAL,)).misses(row) == []


async def test_a_poisoned_journal_is_read_around(tmp_path: Path) -> None:
    row = await poisoned_journal_trial(tmp_path)
    assert Expect(1, 0).misses(row) == []


async def test_many_tasks_at_once_never_run_more_agents_than_the_limit(tmp_path: Path) -> None:
    row = await many_tasks_trial(tmp_path, 10)
    assert Expect(10, 0).misses(row) == []


async def test_a_hostile_endpoint_reaches_no_terminal_raw_and_leaves_no_key(
    tmp_path: Path,
) -> None:
    row = await hostile_endpoint_trial(tmp_path, 1)
    assert Expect(1, 1, (AUTH_FAILED,)).misses(row) == []
    assert row.injected >= 2  # the broken stream and the 401 both reached a session
