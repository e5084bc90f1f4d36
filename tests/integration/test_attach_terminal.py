"""Two real terminals (tmux) on one run of the real CLI on the loopback: the run's own app in
the first, `mala-tui attach` in the second. A tool waits for permission; it is allowed from
the second terminal, the first sees it answered, and the second detaches leaving the run
to finish in the first."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.loopback import MODEL, load_scenario
from mala_tui.runtime.consoles.sockets import read_host_file
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.integration.test_permission_terminal import WITHOUT_BASH, serve
from tests.support.polling import wait_until

pytestmark = pytest.mark.integration


@pytest.mark.usefixtures("tmux_installed")
def test_a_second_terminal_attaches_and_allows_the_tool(tmp_path: Path) -> None:
    socket = f"mala-tui-attach-{os.getpid()}"  # a tmux server of this test's own

    def tmux(*args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", socket, *args], capture_output=True, text=True, check=True
        ).stdout

    def screen(window: str) -> str:
        return tmux("capture-pane", "-t", window, "-p")

    def wait_for(
        window: str, predicate: Callable[[], object], what: str, seconds: float = 90
    ) -> None:
        wait_until(predicate, what=what, timeout=seconds, seen=lambda: screen(window))

    workspace, data = tmp_path / "workspace", tmp_path / "data"
    server, env_lines = serve(workspace, tmp_path / "home")
    first_status, second_status = tmp_path / "first", tmp_path / "second"
    task = load_scenario("permission-request").task
    python = shlex.quote(sys.executable)
    run = (
        f"{python} -m mala_tui --set {shlex.quote('agent.allowed_tools=' + WITHOUT_BASH)} "
        f"--set agent.model={MODEL} run {shlex.quote(task)} --cwd {shlex.quote(str(workspace))} "
        "--permissions ask"
    )

    def terminal(window: str, command: str, status: Path) -> None:
        inner = "; ".join([*env_lines, command])
        line = (
            f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
            f"MALA_TUI_STORAGE__DATA_DIR={shlex.quote(str(data))} "
            f"sh -c {shlex.quote(inner)}; echo $? > {shlex.quote(str(status))}; sleep 600"
        )
        tmux("new-session", "-d", "-s", window, "-x", "160", "-y", "48", line)

    host = None
    try:
        terminal("first", run, first_status)
        wait_for("first", lambda: "waiting for permission" in screen("first"), "the request")
        (found,) = list_runs(data)
        host = read_host_file(found.directory)
        assert host is not None
        terminal("second", f"{python} -m mala_tui attach {found.run_id}", second_status)
        # The second console replays the run and shows the same waiting request.
        wait_for("second", lambda: "waiting for permission" in screen("second"), "the replay")
        tmux("send-keys", "-t", "second", "P")
        wait_for("second", lambda: "Allow for this session" in screen("second"), "the request")
        assert "wc -l logs/service.log > logs/summary.txt" in screen("second")
        tmux("send-keys", "-t", "second", "o")
        summary = workspace / "logs" / "summary.txt"
        wait_for("second", summary.exists, "the command to run")
        # Answered at one console, the question is gone from the other.
        wait_for("first", lambda: "done" in screen("first"), "the first to see the end")
        assert "waiting for permission" not in screen("first")
        wait_for("second", lambda: "done" in screen("second"), "the second to see the end")
        # The run has ended: nothing is left to detach from (`D` is hidden), `q` leaves.
        wait_for("second", lambda: "ended" in screen("second"), "the second to see the run end")
        tmux("send-keys", "-t", "second", "q")
        wait_for("second", second_status.exists, "the second console to leave")
        assert second_status.read_text().strip() == "0"
        wait_for("first", lambda: "Every session has ended" in screen("first"), "the run's end")
        tmux("send-keys", "-t", "first", "q")
        wait_for("first", first_status.exists, "the first console to exit")
        assert first_status.read_text().strip() == "0"
        shown = screen("first")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
        if host is not None and alive(host.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(host.pid, signal.SIGKILL)
        server.terminate()
        server.communicate(timeout=30)
    assert "task-1: done - the agent finished its task" in shown
    events = read_events(found.directory / "events.jsonl").events
    (decided,) = [e for e in events if isinstance(e, ev.PermissionDecided)]
    assert (decided.answer, decided.decided_by) == (
        PermissionAnswer.ALLOW_ONCE,
        AnsweredBy.OPERATOR,
    )
    assert isinstance(events[-1], ev.RunEnded) and events[-1].ok
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    assert pids and [pid for pid in pids if alive(pid)] == []
