"""The app in a real terminal (tmux): sessions past agent.max_concurrent show as queued,
SIGTERM stops every session as `q` would, then exits 143, and a closed terminal detaches."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.runtime.consoles.sockets import live_host
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.support.polling import wait_until
from tests.support.terminal import screen, tmux

pytestmark = pytest.mark.integration


@pytest.mark.usefixtures("tmux_installed")
def test_queued_sessions_show_in_the_app_and_sigterm_shuts_it_down(tmp_path: Path) -> None:
    name = f"mala-tui-signal-{os.getpid()}"
    pid_file, status_file = tmp_path / "pid", tmp_path / "status"
    inner = (
        f"echo $$ > {shlex.quote(str(pid_file))}; exec {shlex.quote(sys.executable)} -m mala_tui "
        "--set agent.max_concurrent=2 demo"
    )
    command = (
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
        f"MALA_TUI_STORAGE__DATA_DIR={shlex.quote(str(tmp_path / 'data'))} "
        f"sh -c {shlex.quote(inner)}; echo $? > {shlex.quote(str(status_file))}"
    )
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", command)
    try:
        wait_until(
            lambda: screen(name).count("queued") >= 2,
            timeout=60,
            what="two queued sessions",
            seen=lambda: screen(name),
        )
        wait_until(
            lambda: _agents_started(tmp_path) >= 2,
            timeout=60,
            what="two agents running",
            seen=lambda: screen(name),
        )
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
        wait_until(
            status_file.exists, timeout=90, what="the app to exit", seen=lambda: screen(name)
        )
        assert status_file.read_text().strip() == "143"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    assert pids and [pid for pid in pids if alive(pid)] == []
    assert isinstance(events[-1], ev.RunEnded) and events[-1].reason == "stopped by SIGTERM"
    ended = {e.session: e.status for e in events if isinstance(e, ev.SessionEnded)}
    assert isinstance(events[0], ev.RunStarted)
    assert set(ended) == set(events[0].sessions) and set(ended.values()) <= {"stopped", "done"}


def _agents_started(data: Path) -> int:
    runs = list_runs(data / "data")
    if not runs:
        return 0
    events = read_events(runs[0].directory / "events.jsonl").events
    return sum(1 for e in events if isinstance(e, ev.ProcessStarted))


@pytest.mark.usefixtures("tmux_installed")
def test_closing_the_terminal_detaches_the_app_and_the_run_goes_on(tmp_path: Path) -> None:
    """The window closed under the app (SIGHUP, and every write to it failing from then
    on): the app exits rather than wait forever to restore a terminal that is gone, and
    the run, in its host's session of its own, goes on until `mala-tui stop` stops it."""
    name = f"mala-tui-hangup-{os.getpid()}"
    pid_file, data = tmp_path / "pid", tmp_path / "data"
    inner = f"echo $$ > {shlex.quote(str(pid_file))}; exec {shlex.quote(sys.executable)} -m mala_tui demo"
    command = (
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
        f"MALA_TUI_STORAGE__DATA_DIR={shlex.quote(str(data))} "
        f"sh -c {shlex.quote(inner)}"
    )
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", command)
    pid, host = 0, None
    try:
        wait_until(
            lambda: _agents_started(tmp_path) >= 2,
            timeout=60,
            what="two agents running",
            seen=lambda: screen(name),
        )
        pid = int(pid_file.read_text())
        (run,) = list_runs(data)
        host = live_host(run.directory)
        assert host is not None and host.pid != pid
        tmux("kill-session", "-t", name)
        wait_until(lambda: not alive(pid), timeout=90, what="the app to leave with its terminal")
        # The run goes on without it: still served, its agents still at work.
        before = len(read_events(run.directory / "events.jsonl").events)
        wait_until(
            lambda: len(read_events(run.directory / "events.jsonl").events) > before + 3,
            timeout=60,
            what="the run to go on",
        )
        assert live_host(run.directory) is not None
        assert not isinstance(read_events(run.directory / "events.jsonl").events[-1], ev.RunEnded)
        stopped = subprocess.run(
            [sys.executable, "-m", "mala_tui", "stop", run.run_id, "--data-dir", str(data)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert stopped.returncode == 0, stopped.stderr
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)
        for left in (pid, host.pid if host is not None else 0):
            if left and alive(left):
                os.kill(left, signal.SIGKILL)
    events = read_events(run.directory / "events.jsonl").events
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    assert pids and [p for p in pids if alive(p)] == []
    assert isinstance(events[-1], ev.RunEnded)
    assert events[-1].reason == "stopped by mala-tui stop"
