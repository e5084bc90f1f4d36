"""`mala-tui run` in a real terminal (tmux) on the loopback: a tool outside the allowed set
waits for permission; meanwhile the operator tells the agent to skip its last step; then
allows the tool from the app. The tool runs, and the agent, stopped at the clean point
after it, reads the message and leaves the skipped step out."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.loopback import MODEL, load_scenario
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.support.polling import wait_until
from tests.support.terminal import screen, tmux

pytestmark = pytest.mark.integration

WITHOUT_BASH = '["Read", "Write", "Edit", "Grep", "Glob"]'


def serve(
    workspace: Path,
    home: Path,
    scenario: str = "permission-request",
    delay: float = 0.0,
    log: Path | None = None,
) -> tuple[subprocess.Popen[str], list[str]]:
    """The loopback server in its own process, and the shell lines that point a CLI at it;
    `delay`: seconds before each answer (a session that must still be running when a
    test acts on it); `log`: where it writes its request log."""
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "mala_tui", "loopback", "serve"),
            *("--scenario", scenario, "--delay", str(delay)),
            *(("--log", str(log)) if log is not None else ()),
            *("--workspace", str(workspace), "--home", str(home)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    lines: list[str] = []
    for line in server.stdout:  # the banner ends with the claude command line
        if line.startswith(("export ", "unset ")):
            lines.append(line.strip())
        if "claude -p" in line:
            break
    return server, lines


@pytest.mark.usefixtures("tmux_installed")
def test_a_permission_allowed_and_a_message_sent_in_a_real_terminal(tmp_path: Path) -> None:
    workspace, data = tmp_path / "workspace", tmp_path / "data"
    server, env_lines = serve(workspace, tmp_path / "home")
    name = f"mala-tui-permission-{os.getpid()}"
    status_file, pid_file = tmp_path / "status", tmp_path / "pid"
    task = load_scenario("permission-request").task
    run = (
        f"exec {shlex.quote(sys.executable)} -m mala_tui "
        f"--set {shlex.quote('agent.allowed_tools=' + WITHOUT_BASH)} "
        f"--set agent.model={MODEL} run {shlex.quote(task)} --cwd {shlex.quote(str(workspace))} "
        "--permissions ask"
    )
    inner = "; ".join([*env_lines, f"echo $$ > {shlex.quote(str(pid_file))}", run])
    command = (
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
        f"MALA_TUI_STORAGE__DATA_DIR={shlex.quote(str(data))} "
        f"sh -c {shlex.quote(inner)}; echo $? > {shlex.quote(str(status_file))}"
    )
    try:
        tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", command)
        wait_until(
            lambda: "waiting for permission" in screen(name),
            timeout=90,
            what="the request",
            seen=lambda: screen(name),
        )
        # A message while the request waits: skip the report (step s003).
        tmux("send-keys", "-t", name, "t")
        wait_until(
            lambda: "Message to" in screen(name),
            timeout=30,
            what="the message box",
            seen=lambda: screen(name),
        )
        tmux("send-keys", "-t", name, "-l", "Skip: s003")
        tmux("send-keys", "-t", name, "C-s")
        wait_until(
            lambda: "1 message" in screen(name),
            timeout=30,
            what="the message queued",
            seen=lambda: screen(name),
        )
        tmux("send-keys", "-t", name, "P")
        # The notice says "asks to use Bash" too: the screen is the one with its buttons.
        wait_until(
            lambda: "Allow for this session" in screen(name),
            timeout=30,
            what="the request's screen",
            seen=lambda: screen(name),
        )
        assert "asks to use Bash" in screen(name)
        assert "wc -l logs/service.log > logs/summary.txt" in screen(name)
        tmux("send-keys", "-t", name, "o")
        summary = workspace / "logs" / "summary.txt"
        wait_until(summary.exists, timeout=60, what="the command to run", seen=lambda: screen(name))
        wait_until(
            lambda: "done" in screen(name),
            timeout=60,
            what="the session to finish",
            seen=lambda: screen(name),
        )
        tmux("send-keys", "-t", name, "q")
        wait_until(
            status_file.exists, timeout=60, what="the app to exit", seen=lambda: screen(name)
        )
        assert status_file.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)
        # After a failure the app may still be waiting on the loopback: end it by its pid.
        if pid_file.exists() and not status_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
        server.terminate()
        server.communicate(timeout=30)
    assert summary.read_text().strip().endswith("logs/service.log")
    assert not (workspace / "REPORT.md").exists()  # the step the message skipped
    (found,) = list_runs(data)
    events = read_events(found.directory / "events.jsonl").events
    (decided,) = [e for e in events if isinstance(e, ev.PermissionDecided)]
    assert (decided.answer, decided.decided_by) == (
        PermissionAnswer.ALLOW_ONCE,
        AnsweredBy.OPERATOR,
    )
    (delivered,) = [e for e in events if isinstance(e, ev.MessageDelivered)]
    assert delivered.how is Delivery.CLEAN_POINT
    order = [type(e) for e in events if isinstance(e, ev.PermissionDecided | ev.MessageDelivered)]
    assert order == [ev.PermissionDecided, ev.MessageDelivered]
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    assert pids and [pid for pid in pids if alive(pid)] == []
