"""The fault trials of mala-tui's own world: its disk, its signals, its journal, its load.

- disk full mid-run: the data dir is a small tmpfs (root can mount one; otherwise the
  journal's writes are made to fail as a full disk's would, and the row says so), filled
  while the sessions run. Every session must be stopped for that reason, the journal end
  with `run_ended`, and no agent process outlive the run.
- SIGTERM / SIGHUP mid-run: a headless demo gets the signal once every agent runs; it must
  stop every session, journal `run_ended`, and exit 143 / 129.
- a poisoned journal: lines of every wrong shape spliced into a finished run's journal;
  `runs` and `show --json` must read every good line and name every bad one.
- many tasks at once: never more agents at once than `agent.max_concurrent`, the rest
  queued, every one finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mala_tui.bench.faults import (
    Planned,
    Row,
    agent_processes_under,
    journal_complete,
    run_trial,
    trial_settings,
)
from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.loopback import load_scenario
from mala_tui.runtime.journal import EVENTS_FILE, RESERVE_FILE, RunJournal, read_events
from mala_tui.runtime.supervisor import Supervisor

# -- disk full ----------------------------------------------------------------------------------

#: Big enough for a run's files and its first lines; then filled on purpose.
DISK_BYTES = 1024 * 1024
DISK_FULL = "could not be written: No space left on device"
#: The designed reason of a session the full disk stopped (the simulation names no errno).
DISK_FULL_REASON = r"^the run's files could not be written: (No space left on device|\[Errno 28\])"
#: Sessions in the demo the signal trials stop.
DEMO_SESSIONS = 4


@contextlib.contextmanager
def small_disk(folder: Path, size: int = DISK_BYTES) -> Iterator[bool]:
    """A tmpfs of `size` bytes at `folder`; yields whether it could be mounted (root only).

    A size of 0 mounts nothing: the caller simulates the full disk instead."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = False
    if size > 0 and os.geteuid() == 0 and shutil.which("mount"):
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)],
            capture_output=True,
            check=False,
        )
        mounted = done.returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "--lazy", str(folder)], capture_output=True, check=False)


def fill(folder: Path) -> int:
    """Write a filler file in `folder` until the disk says it is full; the bytes written."""
    written = 0
    chunk = b"\0" * 4096
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            try:
                written += os.write(fd, chunk)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    return written
                raise
    finally:
        os.close(fd)


class SimulatedFullDisk(RunJournal):
    """Where no tmpfs can be mounted: once `full`, journal writes fail as on a full disk
    until the reserve file is given back (then they go through, as on the real one)."""

    full = False

    def _write_bytes(self, fd: int, data: bytes) -> int:
        if self.full and (self.directory / RESERVE_FILE).exists():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super()._write_bytes(fd, data)


async def disk_full_trial(folder: Path, sessions: int) -> Row:
    """Sessions run on a slow model; once each has its agent running, the disk fills."""
    base = load_scenario("quickstart")
    planned = [Planned(f"disk-{index:02d}", base) for index in range(sessions)]
    disk = folder / "disk"
    with small_disk(disk) as mounted:

        async def fill_when_running(supervisor: Supervisor) -> None:
            await agents_running(supervisor, sessions)
            journal = supervisor.journal
            if mounted:
                await asyncio.to_thread(fill, disk)
            elif isinstance(journal, SimulatedFullDisk):
                journal.full = True

        how = f"a {DISK_BYTES // 1024} KB tmpfs" if mounted else "simulated: no tmpfs mount"
        return await run_trial(
            f"disk full mid-run ({how})",
            planned,
            folder,
            data_dir=disk,
            journal_class=RunJournal if mounted else SimulatedFullDisk,
            meanwhile=fill_when_running,
            designed_stop=DISK_FULL if mounted else "could not be written",
            response_delay_s=0.3,
        )


async def agents_running(supervisor: Supervisor, count: int) -> None:
    """Until `count` agent processes have started."""
    started = asyncio.Event()
    seen = 0

    def listen(event: ev.Event) -> None:
        nonlocal seen
        if isinstance(event, ev.ProcessStarted):
            seen += 1
            if seen >= count:
                started.set()

    supervisor.listeners.events.append(listen)
    await started.wait()


# -- SIGTERM and SIGHUP -------------------------------------------------------------------------


def signal_mid_run(folder: Path, number: signal.Signals, *, mala_tui: Sequence[str] = ()) -> Row:
    """Send `number` to a headless demo once every agent runs; read back what it left."""
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
            sent = time.monotonic()
            os.kill(process.pid, number)
            status = process.wait(120)
            shutdown_s = time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
    if status != 128 + int(number):
        problems.append(f"exit status {status}, expected {128 + int(number)}")
    printed = (folder / "stdout.txt").read_text(errors="replace")
    if f"stopped by {number.name}: every session was stopped" not in printed:
        problems.append("the command did not say why it stopped")
    left = _left_under(data)
    contents = read_events(journal)
    raw = journal.read_bytes()
    lines = [line for line in raw.split(b"\n") if line.strip()]
    torn = bool(raw) and not raw.endswith(b"\n")
    events = contents.events
    sessions = next((e.sessions for e in events if isinstance(e, ev.RunStarted)), ())
    run_reason = events[-1].reason if events and isinstance(events[-1], ev.RunEnded) else ""
    if run_reason != f"stopped by {number.name}":
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
    return Row(
        fault=f"{number.name} mid-run (headless demo, every agent running)",
        sessions=len(sessions),
        injected=1,
        recovered=recovered,
        failed_fast=stopped,
        lost=len(sessions) - recovered - stopped,
        reasons=(f"stopped by {number.name}",) if stopped else (),
        processes_left=len(left),
        journal_lines_lost=len(lines) - len(events) - (1 if torn else 0),
        wall_s=round(shutdown_s, 1),
        journal_complete=journal_complete(events, sessions) and not torn,
        problems=tuple(problems),
    )


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


def _left_under(folder: Path) -> list[int]:
    """Agent processes still alive after a moment's grace; killed, so the trial leaves none."""
    left: list[int] = []
    for _ in range(50):
        left = agent_processes_under(folder)
        if not left:
            break
        time.sleep(0.1)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


# -- a poisoned journal -------------------------------------------------------------------------

#: One line of each wrong shape: unhashable and missing types, wrong field types, out of
#: range values, escapes, not an object, not JSON, nested past any parser's patience.
POISON = (
    '{"type":["x"]}',
    '{"type":{}}',
    '{"type":null,"at":1}',
    '{"at":1.0,"session":"s"}',
    '{"type":"run_started","at":1e999,"run_id":[],"sessions":"x","mode":1}',
    '{"type":"session_ended","session":"x","status":"exploded","at":0}',
    '{"type":"usage","at":"soon","session":{"a":1},"tokens":-1,"window":0,"source":"x"}',
    '{"type":"\\u001b]0;owned\\u0007"}',
    '[{"type":"run_ended"}]',
    '"run_ended"',
    "null",
    "{not json",
    "[" * 100_000 + "]" * 100_000,
)


async def poisoned_journal_trial(folder: Path, *, mala_tui: Sequence[str] = ()) -> Row:
    """A real finished run, its journal spliced with POISON; then `runs` and `show --json`."""
    base = load_scenario("quickstart")
    made = await run_trial("poisoned (the run)", [Planned("poisoned-00", base)], folder)
    (run,) = list((folder / "data" / "runs").iterdir())
    return await asyncio.to_thread(_read_poisoned, folder, run, made, mala_tui)


def _read_poisoned(folder: Path, run: Path, made: Row, mala_tui: Sequence[str]) -> Row:
    journal = run / EVENTS_FILE
    good = journal.read_text(encoding="utf-8").splitlines()
    middle = len(good) // 2
    spliced = [*good[:middle], *POISON[:6], *good[middle:], *POISON[6:]]
    journal.write_text("\n".join(spliced) + "\n", encoding="utf-8")
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    env = dict(os.environ, MALA_TUI_CONFIG_FILE=str(folder / "none.toml"))
    data = str(folder / "data")
    problems: list[str] = []
    runs = subprocess.run(
        [*command, "runs", "--data-dir", data],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    if runs.returncode != 0 or run.name not in runs.stdout or "\x1b" in runs.stdout:
        problems.append(f"`runs` failed: {runs.returncode} {runs.stderr.strip()[:200]}")
    show = subprocess.run(
        [*command, "show", run.name, "--json", "--data-dir", data],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    shown: dict[str, Any] = {}
    if show.returncode != 0:
        problems.append(f"`show --json` failed: {show.returncode} {show.stderr.strip()[:200]}")
    else:
        shown = json.loads(show.stdout)
        skipped = len(shown.get("skipped_lines", ()))
        if skipped != len(POISON):
            problems.append(f"`show --json` skipped {skipped} lines of {len(POISON)}")
    contents = read_events(journal)
    session = shown.get("sessions", {}).get("poisoned-00", {})
    done = session.get("status") == "done"
    return Row(
        fault=f"a poisoned journal ({len(POISON)} bad lines of every shape)",
        sessions=1,
        injected=len(POISON),
        recovered=1 if done and made.recovered == 1 else 0,
        failed_fast=0,
        lost=0 if done else 1,
        reasons=(),
        processes_left=made.processes_left,
        journal_lines_lost=len(good) - len(contents.events),
        wall_s=made.wall_s,
        journal_complete=journal_complete(contents.events, ["poisoned-00"]),
        problems=tuple(problems),
    )


# -- many tasks at once -------------------------------------------------------------------------


async def many_tasks_trial(folder: Path, tasks: int) -> Row:
    """`tasks` sessions given at once: at most max_concurrent agents alive at any moment."""
    settings = trial_settings()
    limit = settings.agent.max_concurrent
    base = load_scenario("quickstart")
    planned = [Planned(f"many-{index:03d}", base) for index in range(tasks)]
    alive: set[int] = set()
    peak = 0

    async def watch(supervisor: Supervisor) -> None:
        def listen(event: ev.Event) -> None:
            nonlocal peak
            if isinstance(event, ev.ProcessStarted) and event.pid is not None:
                alive.add(event.pid)
                peak = max(peak, len(alive))
            elif isinstance(event, ev.ProcessEnded):
                alive.discard(event.pid or -1)

        supervisor.listeners.events.append(listen)

    row = await run_trial(
        f"{tasks} tasks at once (agent.max_concurrent {limit})",
        planned,
        folder,
        settings=settings,
        meanwhile=watch,
    )
    problems = list(row.problems)
    if peak > limit:
        problems.append(f"{peak} agents at once, more than agent.max_concurrent {limit}")
    fault = f"{row.fault}: at most {peak} agents at once"
    return Row(**{**row.__dict__, "fault": fault, "problems": tuple(problems)})
