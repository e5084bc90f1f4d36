"""The attach benchmark, small: a real host process, consoles that follow it, and a report
that says whether each console got every event once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mala_tui.bench import attach_bench


def test_consoles_follow_a_real_host_and_get_every_event_once(tmp_path: Path) -> None:
    load = attach_bench.Load(sessions=4, hz=8.0, steps=40)
    trials = [asyncio.run(attach_bench.trial(n, 2.0, load, tmp_path)) for n in (0, 2)]
    none, two = trials
    assert none.consoles == 0 and not none.lags_ms
    assert two.consoles == 2 and two.complete and two.lags_ms
    assert two.events_per_console > 0
    lines, _ = attach_bench.report(trials, None)
    assert lines[0].split()[:2] == ["consoles", "host"]
    assert lines[2].split()[0] == "2" and lines[2].endswith("yes")


def test_a_console_that_missed_an_event_is_reported_incomplete() -> None:
    broken = attach_bench.Trial(1, 3.0, (5.0, 6.0), 10.0, complete=False)
    lines, ok = attach_bench.report([broken], None)
    assert lines[1].endswith("NO") and not ok
