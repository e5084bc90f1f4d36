"""The app in a real terminal (tmux) while the endpoint answers a broken stream with escapes
and a key: the pane's title, the clipboard and the bytes written to the pane stay clean."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.loopback import MODEL, load_scenario
from mala_tui.loopback.faults import BROKEN_STREAM_KEY
from mala_tui.loopback.scenario import SHIPPED_DIR
from tests.integration.test_permission_terminal import serve
from tests.support.polling import wait_until
from tests.support.terminal import screen as terminal_screen
from tests.support.terminal import tmux

pytestmark = pytest.mark.integration


@pytest.mark.usefixtures("tmux_installed")
def test_a_broken_stream_writes_nothing_raw_to_the_apps_terminal(tmp_path: Path) -> None:
    # A tmux server of its own: its clipboard (set-clipboard on: an OSC 52 becomes a paste
    # buffer) and its titles are this test's alone.
    socket = f"mala-tui-hostile-{os.getpid()}"

    def screen() -> str:
        return terminal_screen("app", socket=socket)

    scenario_file = tmp_path / "hostile.toml"
    scenario_file.write_text(
        (SHIPPED_DIR / "quickstart.toml").read_text(encoding="utf-8")
        + '\n[[faults]]\nkind = "broken_stream"\nat_request = 2\n',
        encoding="utf-8",
    )
    workspace, data, raw = tmp_path / "workspace", tmp_path / "data", tmp_path / "pane.raw"
    server, env_lines = serve(workspace, tmp_path / "home", str(scenario_file))
    status_file, pid_file, go = tmp_path / "status", tmp_path / "pid", tmp_path / "go"
    task = load_scenario("quickstart").task
    run = (
        f"exec {shlex.quote(sys.executable)} -m mala_tui --set agent.model={MODEL} "
        f"run {shlex.quote(task)} --cwd {shlex.quote(str(workspace))}"
    )
    inner = "; ".join([*env_lines, f"echo $$ > {shlex.quote(str(pid_file))}", run])
    command = (
        # Started once the pane's output is piped to a file, so every byte is seen.
        f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.1; done; "
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
        f"MALA_TUI_STORAGE__DATA_DIR={shlex.quote(str(data))} "
        f"sh -c {shlex.quote(inner)}; echo $? > {shlex.quote(str(status_file))}"
    )
    try:
        tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "app",
            "-x",
            "160",
            "-y",
            "48",
            command,
            socket=socket,
        )
        tmux("set-option", "-g", "set-clipboard", "on", socket=socket)
        tmux("set-option", "-g", "allow-rename", "on", socket=socket)
        tmux("pipe-pane", "-o", "-t", "app", f"cat >> {shlex.quote(str(raw))}", socket=socket)
        go.touch()
        wait_until(
            lambda: "done" in screen(), timeout=90, what="the session to finish", seen=screen
        )
        title = tmux("display-message", "-p", "-t", "app", "#{pane_title}", socket=socket)
        buffers = tmux("list-buffers", "-F", "#{buffer_sample}", socket=socket)
        tmux("send-keys", "-t", "app", "q", socket=socket)
        wait_until(status_file.exists, timeout=60, what="the app to exit", seen=screen)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
        if pid_file.exists() and not status_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
        server.terminate()
        server.communicate(timeout=30)
    assert status_file.read_text().strip() == "0"
    written = raw.read_bytes()
    assert b"\x1b]52;" not in written and b"\x1b]0;PWNED" not in written
    assert BROKEN_STREAM_KEY.encode() not in written and b"ghp_Gateway" not in written
    assert "PWNED" not in title and "PWNED" not in buffers
    stderr_logs = list(data.rglob("stderr/*.log"))
    assert stderr_logs and "Could not parse" in stderr_logs[0].read_text(encoding="utf-8")
