"""`python -m mala_tui.bench attach`: what consoles cost a run's host, and how late they hear.

Not a test: a measurement. A run's host (a process of its own, as `run --detach`
starts one) runs 50 scripted sessions at 4 items a second each (a paced scripted agent
reading files: a usage report, a tool call, its result; each item journals an event or
two), serving its control channel (runtime.consoles.channel). Then 0, 1, 3 and 10 headless
protocol clients attach, each a WebSocket on `/events` as `mala-tui attach` opens one,
all in this process, and follow the run for the measured window. Each trial is a fresh
host, measured over the same stretch of its run.

For each it prints:

- the host's CPU (its process CPU time over wall time; 100% is one core), and what each
  console adds to it ((host CPU with N - with none) / N);
- the lag from an event's journal line to a console: the event's own time (taken as the
  host records it, a few microseconds before the line is written) to when the console
  has the line, p50, p99 and max, over every event of every console;
- what each console got: every event of the window once, none missing, none twice (the
  sequence numbers are checked).

Then the real app is attached on its own (`mala-tui attach` in a pseudo-terminal,
drawing to it): the host's CPU with it, and the app's own. Aims (issue 21): lag p99 at
most 100 ms, and 10 consoles cost the host at most twice what one does. The exit status
is 1 when an aim is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import platform
import pty
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import aiohttp

SESSIONS: Final = 50
HZ: Final = 4.0
CONSOLES: Final = (0, 1, 3, 10)
WARMUP_SECONDS: Final = 3.0
LAG_AIM_MS: Final = 100.0
COST_AIM: Final = 2.0
"""10 consoles may cost the host at most this many times what one does."""


# -- the host ---------------------------------------------------------------------------------


async def _serve(folder: Path, sessions: int, hz: float, steps: int) -> None:
    """A scripted run served on its control channel until SIGTERM (or its end)."""
    from mala_tui.bench.paced import steps as paced_steps
    from mala_tui.config import AgentSettings, Settings
    from mala_tui.core.events import RunMode
    from mala_tui.prompt_files import load_prompts
    from mala_tui.runtime.backends.base import SessionSpec
    from mala_tui.runtime.backends.scripted import ScriptedBackend, ScriptedClient
    from mala_tui.runtime.consoles.channel import ControlChannel
    from mala_tui.runtime.journal.writer import RunJournal, new_run_id
    from mala_tui.runtime.questions.approvals import ApprovalMode
    from mala_tui.runtime.run.supervisor import Supervisor

    journal = RunJournal.create(folder, new_run_id(), {"mode": "bench"})
    clients = [ScriptedClient([paced_steps(steps)], pace=1.0 / hz) for _ in range(sessions * 4)]
    supervisor = Supervisor(
        settings=Settings(agent=AgentSettings(max_concurrent=sessions)),
        backend=ScriptedBackend(clients),
        prompts=load_prompts(),
        journal=journal,
        approval_mode=ApprovalMode.AUTO,
        mode=RunMode.BENCH,
    )
    for number in range(sessions):
        supervisor.add_session(
            SessionSpec(name=f"reader-{number:02d}", task="read every module", cwd=folder)
        )
    channel = ControlChannel(supervisor, journal.directory)
    await channel.start()
    main = asyncio.current_task()
    assert main is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main.cancel)
    try:
        await supervisor.run()
    except asyncio.CancelledError:
        pass
    finally:
        await channel.close()
        journal.close()


@dataclass(frozen=True)
class Load:
    """The run every trial's host runs."""

    sessions: int
    hz: float
    steps: int


def _start_host(folder: Path, load: Load) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "mala_tui.bench", "attach", "--serve", str(folder)),
            *("--sessions", str(load.sessions), "--hz", str(load.hz)),
            *("--steps", str(load.steps)),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )


def _run_folder(folder: Path, host: subprocess.Popen[bytes]) -> Path:
    from mala_tui.runtime.consoles.sockets import live_host

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and host.poll() is None:
        for run in (folder / "runs").glob("*") if (folder / "runs").exists() else ():
            if live_host(run) is not None:
                return run
        time.sleep(0.05)
    raise RuntimeError("the benchmark's host did not start")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _cpu_seconds(pid: int) -> float:
    """The process's user and system CPU time so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the consoles -----------------------------------------------------------------------------


@dataclass
class _MeasuredConsole:
    """A headless protocol client: what it got, and how late."""

    lags_ms: list[float] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    connected: asyncio.Event = field(default_factory=asyncio.Event)

    async def follow(self, socket: Path, after: int, since: list[float]) -> None:
        connector = aiohttp.UnixConnector(path=str(socket))
        async with (
            aiohttp.ClientSession(connector=connector) as client,
            client.ws_connect(
                "http://localhost/events",
                params={"after": str(after), "console": "benchmark"},
                max_msg_size=0,
            ) as ws,
        ):
            self.connected.set()
            async for message in ws:
                if message.type is not aiohttp.WSMsgType.TEXT:
                    break
                now = time.time()
                for line in message.data.split("\n"):
                    data = json.loads(line)
                    self.seqs.append(data["seq"])
                    if since and data["at"] >= since[0]:
                        self.lags_ms.append((now - data["at"]) * 1000)


def _info(socket: Path) -> dict[str, object]:
    from mala_tui.runtime.consoles.host_requests import UnixConnection

    connection = UnixConnection(socket, 10.0)
    try:
        connection.request("GET", "/info")
        answer: dict[str, object] = json.loads(connection.getresponse().read())
    finally:
        connection.close()
    return answer


@dataclass(frozen=True)
class Trial:
    consoles: int
    host_cpu: float
    """Percent of one core."""
    lags_ms: tuple[float, ...]
    events_per_console: float
    """Events a second each console got in the window."""
    complete: bool
    """Every console got every event once, in order, from where it attached."""
    app_cpu: float | None = None


async def trial(consoles: int, seconds: float, load: Load, root: Path) -> Trial:
    folder = Path(tempfile.mkdtemp(prefix=f"attach-{consoles}-", dir=root))
    host = _start_host(folder, load)
    tasks: list[asyncio.Task[None]] = []
    try:
        run = await asyncio.to_thread(_run_folder, folder, host)
        from mala_tui.runtime.consoles.sockets import live_host

        record = live_host(run)
        assert record is not None
        await asyncio.sleep(WARMUP_SECONDS)
        after = int(str((await asyncio.to_thread(_info, record.socket))["seq"]))
        clients = [_MeasuredConsole() for _ in range(consoles)]
        since: list[float] = []
        tasks = [
            asyncio.create_task(client.follow(record.socket, after, since)) for client in clients
        ]
        await asyncio.wait_for(asyncio.gather(*(c.connected.wait() for c in clients)), 30)
        since.append(time.time())
        cpu0, wall0 = _cpu_seconds(host.pid), time.monotonic()
        await asyncio.sleep(seconds)
        cpu1, wall1 = _cpu_seconds(host.pid), time.monotonic()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.to_thread(_stop, host)
    lags = tuple(lag for client in clients for lag in client.lags_ms)
    complete = all(
        client.seqs == list(range(after + 1, after + 1 + len(client.seqs))) for client in clients
    )
    per_console = statistics.mean(len(c.lags_ms) for c in clients) / seconds if clients else 0.0
    complete = complete and (bool(lags) or not clients)  # heard nothing: not complete
    return Trial(consoles, 100 * (cpu1 - cpu0) / (wall1 - wall0), lags, per_console, complete)


def app_trial(seconds: float, load: Load, root: Path) -> Trial:
    """The host with the real app attached, drawing in a pseudo-terminal (160x48)."""
    folder = Path(tempfile.mkdtemp(prefix="attach-app-", dir=root))
    host = _start_host(folder, load)
    app: subprocess.Popen[bytes] | None = None
    master = -1
    try:
        run = _run_folder(folder, host)
        time.sleep(WARMUP_SECONDS)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="160", LINES="48")
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(folder)
        app = subprocess.Popen(
            [sys.executable, "-m", "mala_tui", "attach", run.name],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        drain = threading.Thread(target=_drain, args=(master,), daemon=True)
        drain.start()
        time.sleep(WARMUP_SECONDS)  # the app replays the journal and draws its first frame
        cpu0, app0, wall0 = _cpu_seconds(host.pid), _cpu_seconds(app.pid), time.monotonic()
        time.sleep(seconds)
        cpu1, app1, wall1 = _cpu_seconds(host.pid), _cpu_seconds(app.pid), time.monotonic()
    finally:
        if app is not None:
            app.send_signal(signal.SIGTERM)  # an attached console detaches
            try:
                app.wait(30)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()
        if master >= 0:
            with contextlib.suppress(OSError):
                os.close(master)
        _stop(host)
    wall = wall1 - wall0
    return Trial(1, 100 * (cpu1 - cpu0) / wall, (), 0.0, True, 100 * (app1 - app0) / wall)


def _drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 65536):
            pass


# -- report -----------------------------------------------------------------------------------


def _percentile(values: tuple[float, ...], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def report(trials: list[Trial], app: Trial | None) -> tuple[list[str], bool]:
    """The table, and whether every aim was met."""
    base = next((t.host_cpu for t in trials if t.consoles == 0), 0.0)
    lines = [
        f"{'consoles':>8} {'host CPU':>9} {'per console':>11} {'lag p50':>8} {'lag p99':>8} "
        f"{'lag max':>8} {'events/s':>9} complete"
    ]
    for trial in trials:
        per = (trial.host_cpu - base) / trial.consoles if trial.consoles else 0.0
        lags = trial.lags_ms
        lines.append(
            f"{trial.consoles:>8} {trial.host_cpu:>8.1f}% {per:>10.2f}% "
            f"{_percentile(lags, 0.5):>6.1f}ms {_percentile(lags, 0.99):>6.1f}ms "
            f"{max(lags, default=0):>6.1f}ms {trial.events_per_console:>9.0f} "
            f"{'yes' if trial.complete else 'NO'}"
        )
    if app is not None:
        lines.append(
            f"the app attached on its own: host CPU {app.host_cpu:.1f}% "
            f"(+{app.host_cpu - base:.1f}% over none), the app's own CPU {app.app_cpu or 0:.1f}%"
        )
    one = next((t for t in trials if t.consoles == 1), None)
    ten = next((t for t in trials if t.consoles == 10), None)
    ok = all(t.complete for t in trials)
    worst = max((_percentile(t.lags_ms, 0.99) for t in trials if t.lags_ms), default=0.0)
    lines.append(f"aim: lag p99 <= {LAG_AIM_MS:.0f} ms: worst {worst:.1f} ms")
    ok = ok and worst <= LAG_AIM_MS
    if one is not None and ten is not None and one.host_cpu > 0:
        ratio = ten.host_cpu / one.host_cpu
        lines.append(f"aim: 10 consoles <= {COST_AIM:g}x the host CPU of one: {ratio:.2f}x")
        ok = ok and ratio <= COST_AIM
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench attach")
    parser.add_argument("--sessions", type=int, default=SESSIONS)
    parser.add_argument("--hz", type=float, default=HZ, help="items a second per session")
    parser.add_argument("--seconds", type=float, default=20.0, help="the measured window")
    parser.add_argument(
        "--consoles", type=int, nargs="+", default=list(CONSOLES), help="trials, by consoles"
    )
    parser.add_argument("--no-app", action="store_true", help="skip the real app's trial")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    # Enough steps that no session ends before the window does (3 items a step).
    steps = args.steps or int((WARMUP_SECONDS * 2 + args.seconds + 10) * args.hz / 3) + 5
    if args.serve is not None:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args.serve, args.sessions, args.hz, steps))
        return 0
    print(
        f"{args.sessions} scripted sessions at {args.hz:g} Hz, {args.seconds:g} s measured "
        f"per trial; {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores"
    )
    load = Load(args.sessions, args.hz, steps)
    with tempfile.TemporaryDirectory(prefix="mala-attach-bench-") as root:
        trials = [asyncio.run(trial(n, args.seconds, load, Path(root))) for n in args.consoles]
        app = None if args.no_app else app_trial(args.seconds, load, Path(root))
    lines, ok = report(trials, app)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
