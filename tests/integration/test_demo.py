"""`mala-tui demo --headless` as a user runs it: four real CLI sessions on the loopback model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mala_tui.config import ContextSettings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.core.phases import Cause
from mala_tui.core.retry import RetryDecision
from mala_tui.core.run_view import RunState
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive

pytestmark = pytest.mark.integration

# The demo runs on the default thresholds (the test isolates it from any config file).
DEFAULTS = ContextSettings()
SOFT, HARD = DEFAULTS.soft_threshold, DEFAULTS.hard_threshold


def demo(data_dir: Path, *extra: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(data_dir))
    return subprocess.run(
        [sys.executable, "-m", "mala_tui", "demo", "--headless", *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def test_the_demo_shows_every_behaviour_and_leaves_nothing_behind(tmp_path: Path) -> None:
    done = demo(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    (run,) = list_runs(tmp_path)
    journal = read_events(run.directory / "events.jsonl")
    assert journal.skipped == []
    events = journal.events
    state = RunState().apply_all(events)
    assert {name: s.status for name, s in state.sessions.items()} == {
        "soft-zone-reader": EndStatus.DONE,
        "hard-zone-long-task": EndStatus.DONE,
        "stall-once": EndStatus.DONE,
        "normal-zone-helpers": EndStatus.DONE,
    }
    # Every session ran on the thresholds the figures below are compared with.
    assert {(s.soft_threshold, s.hard_threshold) for s in state.sessions.values()} == {(SOFT, HARD)}
    window = {name: s.window for name, s in state.sessions.items()}
    requests = [
        json.loads(line)
        for line in (run.directory / "loopback-requests.jsonl").read_text().splitlines()
    ]

    # Soft zone: it crossed the soft threshold and was masked there, the model saw the
    # placeholders, every mask brought it down, and it never reached hard. (A mask keeps
    # the newest result, here about a tenth of the window: what stays may lie above 15%.)
    soft = state.sessions["soft-zone-reader"]
    assert soft.masks and soft.restarts == []
    masks = [e for e in events if isinstance(e, ev.MaskApplied) and e.session == "soft-zone-reader"]
    # Measured at the soft threshold, or projected past it at a tool result.
    reached = [
        m.projected_tokens if m.trigger is Cause.PROJECTION else m.tokens_before for m in masks
    ]
    assert all(
        tokens is not None and tokens >= SOFT * window["soft-zone-reader"] for tokens in reached
    ), [(m.trigger, m.tokens_before, m.projected_tokens) for m in masks]
    assert max(p.tokens for p in soft.usage) < HARD * window["soft-zone-reader"]
    assert any(r["route"] == "soft-zone-reader" and r["masked_placeholders"] > 0 for r in requests)
    assert all(m.reclaimed is not None and m.reclaimed > 0 for m in soft.masks)
    measured = [
        e for e in events if isinstance(e, ev.MaskMeasured) and e.session == "soft-zone-reader"
    ]
    assert len(measured) == len(soft.masks)
    assert all(e.tokens_after < e.tokens_before for e in measured)

    # Hard zone: wound down at the hard threshold, checkpointed, restarted fresh, nothing redone.
    hard = state.sessions["hard-zone-long-task"]
    (wind_down,) = [
        e for e in events if isinstance(e, ev.WindDownSent) and e.session == "hard-zone-long-task"
    ]
    assert wind_down.tokens >= HARD * window["hard-zone-long-task"]
    assert len(hard.restarts) == 1 and hard.checkpoints[0].origin == "tagged"
    assert Path(hard.checkpoints[0].path).read_text().startswith("## Goal")
    assert (
        hard.restarts[0].tokens_after is not None
        and hard.restarts[0].tokens_after < hard.restarts[0].tokens_before
    )
    assert not any(r["redone"] for r in requests)
    workspace = run.directory / "demo" / "hard-zone-long-task" / "workspace" / "reports"
    assert len(list(workspace.glob("region_*.md"))) == 30

    # The stall: detected, the stuck process gone within the disconnect bound, resumed.
    stall = [e for e in events if e.session == "stall-once"]
    (timeout,) = [e for e in stall if isinstance(e, ev.IdleTimeoutSeen)]
    assert timeout.decision is RetryDecision.RESUME
    started = [e.pid for e in stall if isinstance(e, ev.ProcessStarted)]
    stuck_end = next(e for e in stall if isinstance(e, ev.ProcessEnded) and e.pid == started[0])
    assert stuck_end.at - timeout.at <= 10.0

    # The normal one: never masked or restarted, though it delegated to two background
    # subagents, each journaled from start to end, and it waited for both reports.
    normal = state.sessions["normal-zone-helpers"]
    assert (
        normal.masks == []
        and normal.restarts == []
        and max(p.tokens for p in normal.usage) < SOFT * window["normal-zone-helpers"]
    )
    helpers = [e for e in events if e.session == "normal-zone-helpers"]
    delegated = [e for e in helpers if isinstance(e, ev.SubagentStarted)]
    assert sorted(e.description for e in delegated) == [
        "Review modules 1-3",
        "Review modules 4-5 and the log",
    ]
    assert all(e.background for e in delegated)
    ends = [e for e in helpers if isinstance(e, ev.SubagentEnded)]
    assert sorted(e.how for e in ends) == [SubagentEnd.COMPLETED, SubagentEnd.COMPLETED]
    calls = [r for r in requests if r["route"] == "normal-zone-helpers" and r.get("agent_id")]
    assert len([e for e in helpers if isinstance(e, ev.SubagentCall)]) == len(calls) > 0
    assert normal.spend.calls > normal.main_spend.calls
    said = [
        e.excerpt
        for e in helpers
        if isinstance(e, ev.MessageRecorded) and e.role == "assistant" and e.kind == "text"
    ]
    assert "REPORT A:" in said[-1] and "REPORT B:" in said[-1]
    changes = run.directory / "demo" / "normal-zone-helpers" / "workspace" / "CHANGES.md"
    assert "reviewed by two helpers" in changes.read_text()

    # Every agent process started was seen ending, and none is alive.
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    ended = {e.pid for e in events if isinstance(e, ev.ProcessEnded)}
    assert pids and set(pids) <= ended
    assert [pid for pid in pids if alive(pid)] == []
    # The journal holds every event the run printed, in order, the run's end last.
    assert (
        isinstance(events[0], ev.RunStarted)
        and isinstance(events[-1], ev.RunEnded)
        and events[-1].ok
    )


#: `python -m mala_tui ARGS` with Ctrl-C live, as a terminal's foreground job has it: a
#: test runner started in the background has SIGINT ignored, and Python keeps an ignored
#: SIGINT ignored in the children it starts.
FOREGROUND = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'mala-tui'; runpy.run_module('mala_tui', run_name='__main__')"
)


def test_ctrl_c_stops_every_session_and_no_process_is_left(tmp_path: Path) -> None:
    env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(tmp_path))
    process = subprocess.Popen(
        [sys.executable, "-c", FOREGROUND, "demo", "--headless"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        pids: list[int] = []
        while time.monotonic() < deadline and len(pids) < 4:
            runs = list_runs(tmp_path)
            if runs:
                events = read_events(runs[0].directory / "events.jsonl").events
                pids = [
                    e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None
                ]
            time.sleep(0.2)
        assert len(pids) >= 4, "the four agents should have started"
        assert all(alive(pid) for pid in pids[:4])
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert "interrupted by Ctrl-C: every session was stopped" in out
    assert "Traceback" not in err
    events = read_events(list_runs(tmp_path)[0].directory / "events.jsonl").events
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    assert [pid for pid in pids if alive(pid)] == []
    statuses = {e.session: e.status for e in events if isinstance(e, ev.SessionEnded)}
    assert set(statuses.values()) <= {EndStatus.STOPPED, EndStatus.DONE} and len(statuses) == 4
    assert isinstance(events[-1], ev.RunEnded) and not events[-1].ok
