"""`mala-tui demo` in a real terminal (tmux): the gauges move, and quitting leaves nothing behind."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.support.polling import wait_until
from tests.support.terminal import screen, tmux

pytestmark = pytest.mark.integration

FIGURE = re.compile(r"(\d+)%\s+([\d.]+k?) / 200k")


@pytest.mark.usefixtures("tmux_installed")
def test_the_demo_in_a_real_terminal(tmp_path: Path) -> None:
    name = f"mala-tui-test-{os.getpid()}"
    status_file = tmp_path / "status"
    command = (
        # COLUMNS/LINES from the test runner's environment would pin the app's size.
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
        f"MALA_TUI_STORAGE__DATA_DIR={shlex.quote(str(tmp_path))} "
        f"{shlex.quote(sys.executable)} -m mala_tui demo; echo $? > {shlex.quote(str(status_file))}"
    )
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", command)
    try:
        wait_until(
            lambda: "mala-tui" in screen(name) and len(FIGURE.findall(screen(name))) >= 4,
            timeout=60,
            what="four gauges",
            seen=lambda: screen(name),
        )
        first = FIGURE.findall(screen(name))
        wait_until(
            lambda: FIGURE.findall(screen(name)) != first,
            timeout=60,
            what="the gauges to move",
            seen=lambda: screen(name),
        )
        assert "soft-zone-reader" in screen(name)
        tmux("send-keys", "-t", name, "q")
        # The run is hosted apart from its console: q asks whether to detach or to stop it.
        wait_until(
            lambda: "Leave run" in screen(name),
            timeout=30,
            what="the question at q",
            seen=lambda: screen(name),
        )
        assert "Detach" in screen(name) and "Stop the run" in screen(name)
        # A demo's model server ends with it: the question does not offer to resume it.
        # (the dialog wraps its lines: read them as one text)
        shown = " ".join(re.sub(r"[█\s]+", " ", screen(name)).split())
        assert "a demo cannot be resumed" in shown and "mala-tui resume" not in shown
        tmux("send-keys", "-t", name, "s")
        wait_until(
            status_file.exists, timeout=60, what="the app to exit", seen=lambda: screen(name)
        )
        # Quit mid-run: not every session finished, and the status says so, as headless.
        assert status_file.read_text().strip() == "1"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    (run,) = list_runs(tmp_path)
    events = read_events(run.directory / "events.jsonl").events
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    assert len(pids) >= 4
    assert [pid for pid in pids if alive(pid)] == []
    assert isinstance(events[-1], ev.RunEnded)
