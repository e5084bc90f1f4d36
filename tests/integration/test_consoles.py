"""Runs that outlive their console, on the real CLI and the loopback: `run --detach`, consoles
attached from other terminals (`attach --headless` on real ptys), one answer among two
consoles, a console killed with kill -9, `stop`, a host killed with kill -9, and `resume`."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import select
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import MODEL, load_scenario
from mala_tui.runtime.consoles.sockets import live_host, read_host_file
from mala_tui.runtime.journal.writer import list_runs, read_events
from mala_tui.ui.headless import printer
from tests.integration.harness import alive
from tests.integration.test_permission_terminal import WITHOUT_BASH, serve
from tests.support.polling import wait_until

pytestmark = pytest.mark.integration

#: Seconds the loopback takes per answer where a test must catch a session mid-turn.
PACED_S = 2.0

ASKED = "asks to use Bash"


def environment(env_lines: list[str], data: Path) -> dict[str, str]:
    """The test's environment with the loopback's `export`/`unset` lines applied."""
    env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(data))
    for line in env_lines:
        if line.startswith("unset "):
            env.pop(line.split()[1], None)
        else:
            key, _, value = line.removeprefix("export ").partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    return env


def mala(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mala_tui", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def run_args(workspace: Path) -> list[str]:
    task = load_scenario("permission-request").task
    return [
        *("--set", "agent.allowed_tools=" + WITHOUT_BASH, "--set", f"agent.model={MODEL}"),
        *("run", task, "--cwd", str(workspace), "--permissions", "ask"),
    ]


class Console:
    """`mala-tui attach --headless` in a terminal of its own (a real pty), as a person has."""

    def __init__(self, run_id: str, env: dict[str, str], *, terminal: bool = True) -> None:
        command = [sys.executable, "-m", "mala_tui", "attach", run_id, "--headless"]
        self.master = -1
        if terminal:
            self.master, slave = pty.openpty()
            self.process = subprocess.Popen(
                command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
            )
            os.close(slave)
        else:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
            )
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        output = self.process.stdout
        fd = self.master if output is None else output.fileno()
        while True:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                if self.process.poll() is not None:
                    return
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            self._chunks.append(data)

    @property
    def output(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace").replace("\r\n", "\n")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait_for(self, text: str, seconds: float = 90) -> None:
        wait_until(
            lambda: text in self.output, timeout=seconds, what=repr(text), seen=lambda: self.output
        )

    def finish(self, seconds: float = 120) -> int:
        status = self.process.wait(timeout=seconds)
        self._reader.join(timeout=5)
        return status

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=5)
        if self.master >= 0:
            with contextlib.suppress(OSError):
                os.close(self.master)
        if self.process.stdout is not None:
            self.process.stdout.close()


def the_run(data: Path) -> Path:
    (found,) = list_runs(data)
    return found.directory


def test_a_detached_run_two_consoles_one_answer_and_a_console_killed(tmp_path: Path) -> None:
    workspace, data = tmp_path / "workspace", tmp_path / "data"
    server, env_lines = serve(workspace, tmp_path / "home")
    env = environment(env_lines, data)
    consoles: list[Console] = []
    told = tmp_path / "told"
    notify = f'printf "%s|%s\\n" "$MALA_NOTICE" "$MALA_WAITS" >> {shlex.quote(str(told))}'
    try:
        detached = mala(
            "--set", f"ui.notify_command={notify}", *run_args(workspace), "--detach", env=env
        )
        assert detached.returncode == 0, detached.stderr
        said = re.search(r"^run (\S+): journal in", detached.stdout, re.M)
        assert said is not None, detached.stdout
        run_id = said.group(1)
        # The data dir came from the environment: named, so the commands work pasted anywhere.
        assert f"attach: mala-tui attach {run_id} --data-dir {data}\n" in detached.stdout
        assert f"stop:   mala-tui stop {run_id} --data-dir {data}\n" in detached.stdout
        folder = the_run(data)
        host = live_host(folder)
        assert host is not None and alive(host.pid)
        # The host is in a session of its own: no terminal's hangup reaches it.
        assert os.getsid(host.pid) == host.pid != os.getsid(0)
        listed = mala("runs", env=env)
        assert re.search(rf"^{run_id}\s.*\slive\s", listed.stdout, re.M), listed.stdout
        # The question waits for a console: none is attached, and nothing refuses it.
        wait_until(
            lambda: any(isinstance(e, ev.PermissionRequested) for e in journal(folder)),
            timeout=90,
            what="the permission request",
        )
        first, second = Console(run_id, env), Console(run_id, env)
        doomed = Console(run_id, env, terminal=False)
        consoles += [first, second, doomed]
        # Asked while no console was attached: the notification command was run.
        wait_until(told.exists, timeout=30, what="the notification command")
        assert told.read_text() == (
            f"task-1 asks to use Bash \u00b7 run {run_id}|permission for Bash\n"
        )
        for console in (first, second):
            console.wait_for(ASKED)
        doomed.wait_for("live from here")
        doomed.process.send_signal(signal.SIGKILL)  # a console killed: the run goes on
        doomed.finish()
        # Attached again after it (a reconnect): it must show every event once.
        again = Console(run_id, env, terminal=False)
        consoles.append(again)
        again.wait_for("live from here")
        assert live_host(folder) is not None
        first.type("o\n")
        first.wait_for("permission_decided")
        # The second console withdraws the question answered at the first, unasked.
        second.wait_for("was answered elsewhere")
        for console in (first, second, again):
            assert console.finish() == 0, console.output
    finally:
        for console in consoles:
            console.close()
        server.terminate()
        server.communicate(timeout=30)
    events = journal(folder)
    assert (
        "--- request #1 of task-1 (Bash) was answered elsewhere: allowed once by the operator; "
        "no answer is needed here"
    ) in second.output
    assert "task-1: done - the agent finished its task" in first.output
    (decided,) = [e for e in events if isinstance(e, ev.PermissionDecided)]
    assert decided.decided_by == "operator"
    assert isinstance(events[-1], ev.RunEnded) and events[-1].ok
    # The console attached after the kill shows every notable event of the run once, in order.
    expected = io.StringIO()
    show = printer(expected)
    for event in events:
        show(event)
    lines = expected.getvalue().splitlines()
    assert len(lines) > 8
    assert [line for line in again.output.splitlines() if line in set(lines)] == lines
    # The host is gone with the run, and took its socket with it.
    assert host is not None
    wait_until(lambda: not alive(host.pid), timeout=30, what="the host to end with the run")
    assert not host.socket.exists() and read_host_file(folder) is None
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    assert pids and not any(alive(pid) for pid in pids)


def journal(folder: Path) -> list[ev.Event]:
    return read_events(folder / "events.jsonl").events


def test_stop_and_a_host_killed_with_kill_9_both_leave_a_run_that_resumes(tmp_path: Path) -> None:
    workspace, data = tmp_path / "workspace", tmp_path / "data"
    # Each answer paced: a resumed agent is still at work when its host is killed.
    server, env_lines = serve(workspace, tmp_path / "home", delay=PACED_S)
    env = environment(env_lines, data)
    consoles: list[Console] = []
    hosts: list[int] = []
    try:
        assert mala(*run_args(workspace), "--detach", env=env).returncode == 0
        folder = the_run(data)
        run_id = folder.name
        wait_until(
            lambda: any(isinstance(e, ev.PermissionRequested) for e in journal(folder)),
            timeout=90,
            what="the request",
        )
        first_host = live_host(folder)
        assert first_host is not None
        hosts.append(first_host.pid)
        stopped = mala("stop", run_id, env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert f"run {run_id} stopped" in stopped.stdout
        assert not alive(first_host.pid) and live_host(folder) is None
        events = journal(folder)
        assert isinstance(events[-1], ev.RunEnded)
        assert events[-1].reason == "stopped by mala-tui stop"
        assert mala("stop", run_id, env=env).returncode == 2  # nothing left to stop
        # Resumed in the background; then its host is killed with kill -9.
        assert mala("resume", run_id, "--detach", env=env).returncode == 0
        second_host = live_host(folder)
        assert second_host is not None
        hosts.append(second_host.pid)
        os.kill(second_host.pid, signal.SIGKILL)
        # Its last thread gone (its leader shows as a zombie before), nothing answers.
        wait_until(lambda: live_host(folder) is None, timeout=30, what="the host to die")
        # What the crash left: a socket nothing answers on, and a run that is not live.
        assert second_host.socket.exists() and not alive(second_host.pid)
        listed = mala("runs", env=env)
        assert re.search(rf"^{run_id}\s.*\srunning\?\s", listed.stdout, re.M), listed.stdout
        refused = mala("attach", run_id, "--headless", env=env)
        assert refused.returncode == 2
        assert f"run {run_id} is not live" in refused.stderr
        # Resumed again: the stale socket is replaced, and a console sees it to its end.
        assert mala("resume", run_id, "--detach", env=env).returncode == 0
        third_host = live_host(folder)
        if third_host is not None:  # (it may have run to its end already: nothing to ask)
            assert third_host.socket == second_host.socket
            hosts.append(third_host.pid)

        def since_resumed() -> list[ev.Event]:
            events = journal(folder)
            last = max(i for i, e in enumerate(events) if isinstance(e, ev.RunResumed))
            return events[last:]

        wait_until(
            lambda: any(
                isinstance(e, ev.RunEnded | ev.PermissionRequested) for e in since_resumed()
            ),
            timeout=90,
            what="a question, or the run's end",
        )
        if not any(isinstance(e, ev.RunEnded) for e in since_resumed()):
            console = Console(run_id, env)  # the agent asked again: answered from a console
            consoles.append(console)
            console.wait_for(ASKED)
            console.type("o\n")
            assert console.finish() == 0, console.output
            assert "task-1: done - the agent finished its task" in console.output
        resumed_by = [e.pid for e in since_resumed() if isinstance(e, ev.RunResumed)]
        assert resumed_by and resumed_by[0] is not None
        resumer = resumed_by[0]
        assert resumer not in (first_host.pid, second_host.pid)
        wait_until(lambda: not alive(resumer), timeout=60, what="the host to end with the run")
        assert not second_host.socket.exists()  # replaced, then removed at the run's end
    finally:
        for console in consoles:
            console.close()
        for pid in hosts:  # after a failure, nothing of the test outlives it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        server.terminate()
        server.communicate(timeout=30)
    events = journal(folder)
    assert isinstance(events[-1], ev.RunEnded) and events[-1].ok
    assert sum(isinstance(e, ev.RunResumed) for e in events) == 2
    # Numbered on across both resumes (a killed host's torn line holds no number).
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid is not None]
    assert pids and not any(alive(pid) for pid in pids)
