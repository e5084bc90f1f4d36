"""The fault trials of mala-tui's own world: its disk, its signals, its journal, its load.

- disk full mid-run: the data dir is a small tmpfs (root can mount one; otherwise the
  journal's writes are made to fail as a full disk's would, and the row says so), filled
  while the sessions run. Every session must be stopped for that reason, the journal end
  with `run_ended`, and no agent process outlive the run.
- SIGTERM / SIGHUP mid-run: a headless demo gets the signal once every agent runs. SIGTERM
  must stop every session, journal `run_ended`, and exit 143. SIGHUP (its terminal gone)
  must leave the run going, every agent still at work; the SIGTERM that follows stops it.
- a poisoned journal: lines of every wrong shape spliced into a finished run's journal;
  `runs` and `show --json` must read every good line and name every bad one.
- many tasks at once: never more agents at once than `agent.max_concurrent`, the rest
  queued, every one finished.
- Ctrl-C, then resume: a headless `run` of real CLIs interrupted mid-run (once, or twice
  to hurry the stop) must exit 130 with its journal ended and no agent left, and
  `resume` must then finish every session.
- SIGTERM during start-up: a `run --worktree` signalled while its worktrees are made must
  exit 143 with its journal ended and every worktree and branch it made journaled, and
  `resume` must then finish every session, each in its own worktree.

- a hostile endpoint: a headless `run` whose model answers some sessions with a broken
  stream (terminal escapes and a key, as a broken gateway echoes them) and others with a
  401 on every request. The first must recover, the others fail at once saying so.

These three also count what must never leak: raw escape bytes on the terminal, and a key
(one planted in every task, the loopback's own, the broken stream's) in what mala-tui
printed or wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mala_tui.bench.fault_harness import (
    Planned,
    TrialRow,
    agent_processes_under,
    journal_complete,
    run_trial,
    trial_settings,
)
from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.loopback import (
    LoopbackServer,
    load_scenario,
    materialize_workspace,
    offline_cli_env,
)
from mala_tui.loopback.env import DUMMY_API_KEY
from mala_tui.loopback.faults import FaultKind
from mala_tui.runtime.journal.writer import EVENTS_FILE, RESERVE_FILE, RunJournal, read_events
from mala_tui.runtime.private.redaction import redact
from mala_tui.runtime.run.supervisor import Supervisor

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


async def disk_full_trial(folder: Path, sessions: int) -> TrialRow:
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
    left = _left_under(data)
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


async def poisoned_journal_trial(folder: Path, *, mala_tui: Sequence[str] = ()) -> TrialRow:
    """A real finished run, its journal spliced with POISON; then `runs` and `show --json`."""
    base = load_scenario("quickstart")
    made = await run_trial("poisoned (the run)", [Planned("poisoned-00", base)], folder)
    (run,) = list((folder / "data" / "runs").iterdir())
    return await asyncio.to_thread(_read_poisoned, folder, run, made, mala_tui)


def _read_poisoned(folder: Path, run: Path, made: TrialRow, mala_tui: Sequence[str]) -> TrialRow:
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
    return TrialRow(
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


async def many_tasks_trial(folder: Path, tasks: int) -> TrialRow:
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
    return TrialRow(**{**row.__dict__, "fault": fault, "problems": tuple(problems)})


# -- Ctrl-C, then resume ------------------------------------------------------------------------

#: A key planted in every task: whatever mala-tui writes or prints must not show it.
PLANTED_KEY = "sk-ant-api03-PLANTEDtrialKEY0123456789abcdef"
#: What every resumed session must have done to its folder (the quickstart's edit).
QUICKSTART_DONE = "VERSION = 2"


def _foreground_sigint() -> None:
    """In the child, before exec: Ctrl-C live, as a terminal's foreground job has it, even
    when the bench itself runs where SIGINT is ignored (a background job)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


async def _mala(
    command: Sequence[str], *args: str, env: dict[str, str]
) -> asyncio.subprocess.Process:
    """`mala-tui ARGS`, headless, its output kept (what it would print on a terminal)."""
    return await asyncio.create_subprocess_exec(
        *command,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        preexec_fn=_foreground_sigint,
    )


async def _until(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def _journal_of(data: Path) -> Path | None:
    found = sorted((data / "runs").glob(f"*/{EVENTS_FILE}")) if data.exists() else []
    return found[0] if found else None


def _under_way(data: Path, sessions: Sequence[str]) -> bool:
    """Each session has seen a tool's result and none has ended."""
    journal = _journal_of(data)
    if journal is None:
        return False
    events = read_events(journal).events
    results = {
        e.session for e in events if isinstance(e, ev.MessageRecorded) and e.kind == "tool_result"
    }
    ended = any(isinstance(e, ev.SessionEnded) for e in events)
    return set(sessions) <= results and not ended


def exposure(printed: bytes, folder: Path) -> list[str]:
    """What a trial must never leave: raw escape bytes on the terminal, or a key (the
    planted one, the loopback's, any shape `redact` knows) in what mala-tui printed or in
    any file it wrote under `folder` (its data dir)."""
    found = []
    escapes = printed.count(b"\x1b")
    if escapes:
        found.append(f"{escapes} raw escape bytes on the terminal")
    text = printed.decode("utf-8", "replace")
    if PLANTED_KEY in text or DUMMY_API_KEY in text or redact(text) != text:
        found.append("a key on the terminal")
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text("utf-8", errors="replace")
        except OSError:
            continue
        if PLANTED_KEY in text or DUMMY_API_KEY in text or redact(text) != text:
            found.append(f"a key in {path.relative_to(folder)}")
    return found


def _lines_lost(journal: Path) -> int:
    raw = journal.read_bytes()
    lines = [line for line in raw.split(b"\n") if line.strip()]
    torn = bool(raw) and not raw.endswith(b"\n")
    return len(lines) - len(read_events(journal).events) - (1 if torn else 0)


async def _resume_and_count(
    command: Sequence[str], env: dict[str, str], journal: Path, sessions: Sequence[str]
) -> tuple[int, bytes, int, list[str]]:
    """`resume latest --headless`; its status, what it printed, the sessions done after it,
    and what went wrong."""
    problems = []
    process = await _mala(command, *TRIAL_MODEL, "resume", "latest", "--headless", env=env)
    out, err = await asyncio.wait_for(process.communicate(), TRIAL_RESUME_S)
    if process.returncode != 0:
        problems.append(f"resume exited {process.returncode}: {err.decode()[-300:].strip()}")
    events = read_events(journal).events
    resumed = [i for i, e in enumerate(events) if isinstance(e, ev.RunResumed)]
    after = events[resumed[-1] :] if resumed else []
    done = {e.session for e in after if isinstance(e, ev.SessionEnded) and e.status == "done"}
    if not resumed:
        problems.append("resume did not carry the run on")
    return len(done & set(sessions)), out + err, process.returncode or 0, problems


#: The model every trial's `run` names (the loopback serves any).
TRIAL_MODEL = ("--set", "agent.model=claude-sonnet-4-5")
TRIAL_RESUME_S = 240.0


async def ctrl_c_then_resume_trial(
    folder: Path, sessions: int, *, presses: int = 1, mala_tui: Sequence[str] = ()
) -> TrialRow:
    """A headless `run` of `sessions` real CLIs gets Ctrl-C (`presses` times, the later
    ones while it stops) once each is under way; then `resume` must finish every one.

    Recovered: done after the resume, its folder edited. The stop itself must exit 130,
    end the journal, leave no agent process, and say how to resume."""
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    scenario = load_scenario("quickstart")
    names = [f"ctrl-c-{index:02d}" for index in range(sessions)]
    entries = []
    for name in names:
        materialize_workspace(scenario, folder / name)
        task = f"{scenario.task} (The deploy key {PLANTED_KEY} is not needed.)"
        entries.append(f"[[task]]\nname = {json.dumps(name)}\ntask = {json.dumps(task)}\n")
        entries[-1] += f"cwd = {json.dumps(name)}\n"
    tasks = folder / "tasks.toml"
    tasks.write_text("\n".join(entries))
    data = folder / "data"
    problems: list[str] = []
    started = time.monotonic()
    async with LoopbackServer(scenario, response_delay_s=0.3) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, folder / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        env["MALA_TUI_CONFIG_FILE"] = str(folder / "none.toml")
        args = [*TRIAL_MODEL, "run", "--tasks", str(tasks), "--headless"]
        process = await _mala(command, *args, env=env)
        try:
            await _until(lambda: _under_way(data, names), 180, "every session under way")
            for press in range(presses):
                if press:
                    await asyncio.sleep(0.05)
                process.send_signal(signal.SIGINT)
            out, err = await asyncio.wait_for(process.communicate(), 120)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        left = _left_under(folder)
        journal = _journal_of(data)
        assert journal is not None
        if process.returncode != 130:
            problems.append(f"exit status {process.returncode}, expected 130")
        if b"mala-tui resume" not in out:
            problems.append("the stop did not say how to resume")
        stopped = read_events(journal).events
        lost_lines = _lines_lost(journal)
        complete = journal_complete(stopped, names)
        ended = {e.pid for e in stopped if isinstance(e, ev.ProcessEnded)}
        unended = [
            e.pid for e in stopped if isinstance(e, ev.ProcessStarted) and e.pid not in ended
        ]
        if unended:
            problems.append(f"{len(unended)} agent processes with no process_ended")
        done, printed, _, resume_problems = await _resume_and_count(command, env, journal, names)
        problems += resume_problems
        left += _left_under(folder)
    edited = sum(
        1 for name in names if QUICKSTART_DONE in (folder / name / "src" / "app.py").read_text()
    )
    recovered = min(done, edited)
    problems += exposure(out + err + printed, data)
    return TrialRow(
        fault=f"Ctrl-C{' x' + str(presses) if presses > 1 else ''} mid-run, then resume "
        "(headless run)",
        sessions=sessions,
        injected=presses,
        recovered=recovered,
        failed_fast=0,
        lost=sessions - recovered,
        reasons=(),
        processes_left=len(left),
        journal_lines_lost=lost_lines + _lines_lost(journal),
        wall_s=round(time.monotonic() - started, 1),
        journal_complete=complete and journal_complete(read_events(journal).events, names),
        problems=tuple(problems),
    )


# -- SIGTERM during start-up --------------------------------------------------------------------

#: How long the trial's `git worktree add` takes: the window the signal arrives in.
SLOW_WORKTREE_S = 1.0


def slow_git(folder: Path, marker: Path, seconds: float = SLOW_WORKTREE_S) -> str:
    """A folder to put first on PATH whose `git`, for `worktree add`, leaves `marker` and
    takes `seconds` first: a start-up slow enough for a signal to land inside it."""
    real = shutil.which("git")
    if real is None:
        raise RuntimeError("the start-up trial needs git")
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = worktree ] && [ "$2" = add ]; then\n'
        f"  touch {shlex.quote(str(marker))}; sleep {seconds}\n"
        "fi\n"
        f'exec {shlex.quote(real)} "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(folder)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=trial", "-c", "user.email=trial@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


async def sigterm_during_start_up_trial(
    folder: Path, sessions: int, *, mala_tui: Sequence[str] = ()
) -> TrialRow:
    """`run --worktree` of `sessions` tasks gets SIGTERM while its first worktree is being
    made. It must exit 143 with its journal ended, every worktree and branch it made
    journaled, no agent started; then `resume` must finish every session, each in a
    worktree of its own (the ones not made yet are made by the resume)."""
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    scenario = load_scenario("quickstart")
    repo = folder / "project"
    repo.mkdir(parents=True)
    materialize_workspace(scenario, repo)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "start")
    data = folder / "data"
    marker = folder / "worktree-add-started"
    problems: list[str] = []
    task = f"{scenario.task} (The deploy key {PLANTED_KEY} is not needed.)"
    names = [f"task-{index}" for index in range(1, sessions + 1)]
    started = time.monotonic()
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, folder / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        env["MALA_TUI_CONFIG_FILE"] = str(folder / "none.toml")
        slow = dict(env, PATH=f"{slow_git(folder / 'bin', marker)}{os.pathsep}{env['PATH']}")
        args = [*TRIAL_MODEL, "run", *[task] * sessions, "--cwd", str(repo), "--worktree"]
        process = await _mala(command, *args, "--headless", env=slow)
        try:
            await _until(marker.exists, 60, "the first worktree under way")
            process.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        if process.returncode != 143:
            problems.append(f"exit status {process.returncode}, expected 143")
        journal = _journal_of(data)
        if journal is None:
            raise RuntimeError("the run left no journal")
        run_id = journal.parent.name
        events = read_events(journal).events
        complete = journal_complete(events, names)
        if any(isinstance(e, ev.ProcessStarted) for e in events):
            problems.append("an agent started after the signal")
        created = {e.branch: e.path for e in events if isinstance(e, ev.WorktreeCreated)}
        listing = _git(repo, "branch", "--list", f"mala/{run_id}/*", "--format=%(refname)")
        branches = {ref.removeprefix("refs/heads/") for ref in listing.split()}
        listed = _git(repo, "worktree", "list", "--porcelain").splitlines()
        trees = {line[len("worktree ") :] for line in listed if line.startswith("worktree ")}
        unrecorded = (branches - set(created)) | (trees - {str(repo)} - set(created.values()))
        if unrecorded:
            problems.append(f"{len(unrecorded)} worktrees or branches not in the journal")
        runs = await _mala(command, "runs", env=env)
        shown, _ = await runs.communicate()
        if runs.returncode != 0 or b"running?" in shown:
            problems.append("`runs` does not show the run as ended")
        lost_lines = _lines_lost(journal)
        done, printed, _, resume_problems = await _resume_and_count(command, env, journal, names)
        problems += resume_problems
        left = _left_under(folder)
    after = read_events(journal).events
    worktrees = {e.session: e.path for e in after if isinstance(e, ev.WorktreeCreated)}
    edited = sum(
        1
        for name in names
        if name in worktrees
        and QUICKSTART_DONE in (Path(worktrees[name]) / "src" / "app.py").read_text()
    )
    if QUICKSTART_DONE in (repo / "src" / "app.py").read_text():
        problems.append("an agent edited the repository's own checkout, not its worktree")
    recovered = min(done, edited)
    problems += exposure(out + err + printed, data)
    return TrialRow(
        fault=f"SIGTERM during start-up (run --worktree, {len(created)} of {sessions} "
        "worktrees made), then resume",
        sessions=sessions,
        injected=1,
        recovered=recovered,
        failed_fast=0,
        lost=sessions - recovered,
        reasons=(),
        processes_left=len(left),
        journal_lines_lost=lost_lines + _lines_lost(journal),
        wall_s=round(time.monotonic() - started, 1),
        journal_complete=complete and journal_complete(after, names),
        problems=tuple(problems),
    )


# -- a hostile endpoint -------------------------------------------------------------------------

#: A session the 401 stopped fails at once, saying so.
AUTH_FAILED = r"^authentication failed: "


async def hostile_endpoint_trial(
    folder: Path, each: int = 1, *, mala_tui: Sequence[str] = ()
) -> TrialRow:
    """A headless `run` against an endpoint that answers `each` sessions with a broken
    stream (terminal escapes: a clipboard write, a window title, a clear screen; and a key)
    and `each` with a 401 on every request.

    The broken stream's sessions must recover (done, their folder edited); the 401's must
    fail at once, saying so. Nothing of the stream may reach the terminal raw, no key any
    file, and the run must exit 1 (not every session finished) with its journal ended."""
    from mala_tui.loopback import FaultSpec

    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    scenario = load_scenario("quickstart")
    broken = [f"broken-{index:02d}" for index in range(each)]
    denied = [f"denied-{index:02d}" for index in range(each)]
    names = broken + denied
    data = folder / "data"
    problems: list[str] = []
    started = time.monotonic()
    async with LoopbackServer({name: scenario for name in names}, response_delay_s=0.0) as server:
        entries = []
        for name in names:
            materialize_workspace(scenario, folder / name)
            kind: FaultKind = "broken_stream" if name in broken else "unauthorized"
            fault = (
                FaultSpec(kind=kind, at_request=2)
                if name in broken
                else FaultSpec(kind=kind, times=1_000)
            )
            server.add_fault(fault, route=name)
            task = f"{scenario.task} (The deploy key {PLANTED_KEY} is not needed.)"
            entries.append(
                f"[[task]]\nname = {json.dumps(name)}\ntask = {json.dumps(task)}\n"
                f"cwd = {json.dumps(name)}\n"
                f"env = {{ ANTHROPIC_BASE_URL = {json.dumps(server.url_for(name))} }}\n"
            )
        tasks = folder / "tasks.toml"
        tasks.write_text("\n".join(entries))
        env = dict(os.environ, **offline_cli_env(server.base_url, folder / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        env["MALA_TUI_CONFIG_FILE"] = os.devnull
        process = await _mala(
            command, *TRIAL_MODEL, "run", "--tasks", str(tasks), "--headless", env=env
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), 240)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        injected = sum(1 for record in server.request_log if record.fault)
        left = _left_under(folder)
    if process.returncode != 1:
        problems.append(f"exit status {process.returncode}, expected 1")
    journal = _journal_of(data)
    events = read_events(journal).events if journal is not None else []
    ends = {e.session: e for e in events if isinstance(e, ev.SessionEnded)}
    recovered = failed = 0
    reasons: list[str] = []
    for name in names:
        end = ends.get(name)
        edited = QUICKSTART_DONE in (folder / name / "src" / "app.py").read_text()
        if end is not None and end.status == "done" and edited:
            recovered += 1
        elif end is not None and end.status == "failed":
            failed += 1
            reasons.append(end.reason)
        else:
            reasons.append(f"LOST {name}: {end.status + ' ' + end.reason if end else 'no end'}")
    problems += exposure(out + err, data)
    return TrialRow(
        fault="a hostile endpoint (a broken stream of escapes and a key; a 401)",
        sessions=len(names),
        injected=injected,
        recovered=recovered,
        failed_fast=failed,
        lost=len(names) - recovered - failed,
        reasons=tuple(sorted(set(reasons))),
        processes_left=len(left),
        journal_lines_lost=_lines_lost(journal) if journal is not None else 0,
        wall_s=round(time.monotonic() - started, 1),
        journal_complete=journal_complete(events, names),
        problems=tuple(problems),
    )
