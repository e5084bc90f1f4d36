"""A headless mala-tui driven as a person's terminal drives it, and what it left read back.

The trials of stops and of a hostile endpoint start ``mala-tui`` as a child process, signal
it, resume it, and then count what must never leak (raw escape bytes, a planted key) and what
must not be left (agent processes, torn journal lines).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from mala_tui.bench.fault_harness import agent_processes_under
from mala_tui.core import events as ev
from mala_tui.loopback.env import DUMMY_API_KEY
from mala_tui.runtime.journal.writer import EVENTS_FILE, read_events
from mala_tui.runtime.private.redaction import redact


def left_under(folder: Path) -> list[int]:
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


#: A key planted in every task: whatever mala-tui writes or prints must not show it.
PLANTED_KEY = "sk-ant-api03-PLANTEDtrialKEY0123456789abcdef"
#: What every resumed session must have done to its folder (the quickstart's edit).
QUICKSTART_DONE = "VERSION = 2"


def _foreground_sigint() -> None:
    """In the child, before exec: Ctrl-C live, as a terminal's foreground job has it, even
    when the bench itself runs where SIGINT is ignored (a background job)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


async def start_mala(
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


async def wait_until(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def journal_of(data: Path) -> Path | None:
    found = sorted((data / "runs").glob(f"*/{EVENTS_FILE}")) if data.exists() else []
    return found[0] if found else None


def under_way(data: Path, sessions: Sequence[str]) -> bool:
    """Each session has seen a tool's result and none has ended."""
    journal = journal_of(data)
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


def lines_lost(journal: Path) -> int:
    raw = journal.read_bytes()
    lines = [line for line in raw.split(b"\n") if line.strip()]
    torn = bool(raw) and not raw.endswith(b"\n")
    return len(lines) - len(read_events(journal).events) - (1 if torn else 0)


async def resume_and_count(
    command: Sequence[str], env: dict[str, str], journal: Path, sessions: Sequence[str]
) -> tuple[int, bytes, int, list[str]]:
    """`resume latest --headless`; its status, what it printed, the sessions done after it,
    and what went wrong."""
    problems = []
    process = await start_mala(command, *TRIAL_MODEL, "resume", "latest", "--headless", env=env)
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
