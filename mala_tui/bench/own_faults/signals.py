"""SIGTERM and SIGHUP mid-run: a headless demo gets the signal once every agent runs.

SIGTERM must stop every session, journal ``run_ended`` and exit 143. SIGHUP (its terminal
gone) must leave the run going, every agent still at work; the SIGTERM that follows stops it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mala_tui.bench.fault_harness import TrialRow, journal_complete
from mala_tui.bench.own_faults.headless_cli import left_under
from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.runtime.journal.writer import EVENTS_FILE, read_events

#: Sessions in the demo the signal trials stop.
DEMO_SESSIONS = 4


def signal_mid_run(
    folder: Path, number: signal.Signals, *, mala_tui: Sequence[str] = ()
) -> TrialRow:
    """Send `number` to a headless demo once every agent runs; read back what it left. A
    hangup must not stop it: SIGTERM is sent after it, and must."""
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    data = folder / "data"
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MALA_TUI_CONFIG_FILE=str(folder / "none.toml"))
    problems: list[str] = []
    with (folder / "stdout.txt").open("w") as stdout:
        process = subprocess.Popen(
            [*command, "demo", "--headless", "--data-dir", str(data)],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            running = min(DEMO_SESSIONS, Settings().agent.max_concurrent)
            journal = _wait_for_agents(data, running, process)
            stop = number
            if number is signal.SIGHUP:
                problems += _goes_on_after_hangup(process, journal)
                stop = signal.SIGTERM
            sent = time.monotonic()
            os.kill(process.pid, stop)
            status = process.wait(120)
            shutdown_s = time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
    if status != 128 + int(stop):
        problems.append(f"exit status {status}, expected {128 + int(stop)}")
    printed = (folder / "stdout.txt").read_text(errors="replace")
    if f"stopped by {stop.name}: every session was stopped" not in printed:
        problems.append("the command did not say why it stopped")
    left = left_under(data)
    contents = read_events(journal)
    raw = journal.read_bytes()
    lines = [line for line in raw.split(b"\n") if line.strip()]
    torn = bool(raw) and not raw.endswith(b"\n")
    events = contents.events
    sessions = next((e.sessions for e in events if isinstance(e, ev.RunStarted)), ())
    run_reason = events[-1].reason if events and isinstance(events[-1], ev.RunEnded) else ""
    if run_reason != f"stopped by {stop.name}":
        problems.append(f"run_ended says {run_reason!r}")
    ended = {e.session: e for e in events if isinstance(e, ev.SessionEnded)}
    recovered = sum(1 for e in ended.values() if e.status == "done")
    stopped = sum(1 for e in ended.values() if e.status == "stopped")
    runs = subprocess.run(
        [*command, "runs", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    if runs.returncode != 0 or "running?" in runs.stdout:
        problems.append("`runs` does not show the run as ended")
    said = "SIGHUP (goes on), then SIGTERM" if stop is not number else number.name
    return TrialRow(
        fault=f"{said} mid-run (headless demo, every agent running)",
        sessions=len(sessions),
        injected=1,
        recovered=recovered,
        failed_fast=stopped,
        lost=len(sessions) - recovered - stopped,
        reasons=(f"stopped by {stop.name}",) if stopped else (),
        processes_left=len(left),
        journal_lines_lost=len(lines) - len(events) - (1 if torn else 0),
        wall_s=round(shutdown_s, 1),
        journal_complete=journal_complete(events, sessions) and not torn,
        problems=tuple(problems),
    )


def _goes_on_after_hangup(process: subprocess.Popen[bytes], journal: Path) -> list[str]:
    """SIGHUP (the terminal gone) to a headless run: the run must go on without it, its
    agents still at work (the journal grows), nothing stopped or ended."""
    before = _count(journal, b"\n")
    os.kill(process.pid, signal.SIGHUP)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if _count(journal, b"\n") >= before + 5:
            break
        time.sleep(0.1)
    problems = []
    if process.poll() is not None:
        problems.append(f"a hangup ended the run (exit status {process.returncode})")
    elif _count(journal, b"\n") < before + 5:
        problems.append("the run did nothing after a hangup")
    if _count(journal, b'"type":"run_ended"') or _count(journal, b'"status":"stopped"'):
        problems.append("a hangup stopped sessions")
    return problems


def _wait_for_agents(data: Path, agents: int, process: subprocess.Popen[bytes]) -> Path:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        found = list((data / "runs").glob(f"*/{EVENTS_FILE}")) if data.exists() else []
        if found and _count(found[0], b'"type":"process_started"') >= agents:
            return found[0]
        time.sleep(0.05)
    raise RuntimeError(f"the demo did not start {agents} agents in time")


def _count(path: Path, needle: bytes) -> int:
    try:
        return path.read_bytes().count(needle)
    except OSError:
        return 0
