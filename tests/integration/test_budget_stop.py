"""A budget stops a real CLI session on the loopback model, its checkpoint kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.integration.test_run_command import run_scenario_headless

pytestmark = pytest.mark.integration


async def test_near_the_turn_limit_the_session_checkpoints_and_stops(tmp_path: Path) -> None:
    # Twelve steps of work; ten turns allowed. At the ninth call (90%) the agent is wound
    # down, writes its checkpoint, and the session stops there instead of going on.
    code, out, err, _ = await run_scenario_headless(
        tmp_path, "normal-zone", "--max-turns", "10", "--approve", "auto"
    )
    assert code == 1, out + err  # the task was not finished: the budget stopped it
    assert "task-1: stopped - budget: turns 9 of 10 (90%); checkpoint kept" in out
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    winds = [e for e in events if isinstance(e, ev.WindDownSent)]
    assert [w.trigger for w in winds] == ["budget"]
    (saved,) = [e for e in events if isinstance(e, ev.CheckpointSaved)]
    assert saved.origin == "tagged"  # the agent's own checkpoint, not one made for it
    assert Path(saved.path).read_text(encoding="utf-8").strip() == saved.text.strip()
    assert not [e for e in events if isinstance(e, ev.Restarted)]
    (ended,) = [e for e in events if isinstance(e, ev.SessionEnded)]
    assert ended.status == "stopped"
    meta = json.loads((run.directory / "run.json").read_text())
    assert meta["settings"]["budget"]["max_turns"] == 10
    assert meta["settings_sources"]["budget.max_turns"] == "command line --max-turns"
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid]
    assert pids and not any(alive(pid) for pid in pids)
