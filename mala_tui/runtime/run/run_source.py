"""A journaled run read back whole (its events and run.json), and whether a mala-tui
process still writes it: what `resume`, `show`, `land` and `discard` start from.

Light on purpose (no SDK): `land` and `discard` only need to know the run is not live.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mala_tui.core import events as ev
from mala_tui.core.numbers import loads_json
from mala_tui.core.resume_plan import TaskRecord
from mala_tui.runtime.journal.writer import (
    EVENTS_FILE,
    RUN_FILE,
    JournalContents,
    JournalError,
    read_events,
)
from mala_tui.runtime.session.processes import pid_alive

#: run.json's key for the process that writes the journal (a resume journals its own).
PID_KEY = "pid"


class ResumeError(Exception):
    """The run cannot be resumed; the message says why (and what to do, if anything)."""


@dataclass(frozen=True)
class ResumeSource:
    """What a resume starts from: the run's folder, its journal and its start record."""

    folder: Path
    contents: JournalContents
    meta: dict[str, Any]

    @property
    def events(self) -> list[ev.Event]:
        return self.contents.events

    def tasks(self) -> list[TaskRecord]:
        found = []
        for entry in self.meta.get("tasks") or ():
            if isinstance(entry, dict) and all(
                isinstance(entry.get(key), str) for key in ("name", "task", "cwd")
            ):
                found.append(TaskRecord(entry["name"], entry["task"], entry["cwd"]))
        return found


def read_source(folder: Path) -> ResumeSource:
    """The run's journal and run.json, read; a run that cannot be resumed is refused.

    Raises:
        ResumeError: the folder, journal or run.json is missing or unusable.
    """
    if not folder.is_dir():
        raise ResumeError(f"{folder}: no such run folder")
    try:
        contents = read_events(folder / EVENTS_FILE)
    except JournalError as exc:
        raise ResumeError(str(exc)) from None
    if not any(isinstance(e, ev.RunStarted) for e in contents.events):
        detail = f" ({contents.describe_skipped()})" if contents.skipped else ""
        raise ResumeError(
            f"{folder / EVENTS_FILE}: no run_started event: not a journal that can be resumed"
            + detail
        )
    try:
        meta = loads_json((folder / RUN_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        meta = {}  # the journal alone still names each session's task and folder
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: JSON or a number
        raise ResumeError(f"{folder / RUN_FILE}: cannot be read: {exc}") from None
    return ResumeSource(folder, contents, meta if isinstance(meta, dict) else {})


def writer_pid(source: ResumeSource) -> int | None:
    """The mala-tui process that wrote the journal last, if the run recorded it."""
    for event in reversed(source.events):
        if isinstance(event, ev.RunResumed):
            return event.pid
    pid = source.meta.get(PID_KEY)
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def still_live(source: ResumeSource) -> int | None:
    """The pid of a mala-tui process still writing this run (not ended, alive), or None."""
    if isinstance(source.events[-1], ev.RunEnded):
        return None
    return mala_process(writer_pid(source))


def mala_process(pid: int | None) -> int | None:
    """`pid` if it is another live mala-tui process (a journal's writer, say), else None."""
    if pid is None or pid == os.getpid() or not pid_alive(pid):
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid  # no /proc to tell by: alive is enough to refuse
    # A pid reused by an unrelated process does not hold the run.
    return pid if b"mala" in command else None
