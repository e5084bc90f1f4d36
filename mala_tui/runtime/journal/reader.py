"""Reading journals back: a run's events, the list of runs, a run found by id or prefix.

A crash (even `kill -9`) leaves every line before it readable; the reader skips a
torn last line, and lines it cannot use, and says what it skipped. Writing is
runtime.journal.writer's (which also exports all of this).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.numbers import NumberOutOfRange, loads_json
from mala_tui.runtime.private.files import folder_problem

EVENTS_FILE = "events.jsonl"


def runs_dir(data_dir: Path) -> Path:
    return data_dir / "runs"


@dataclass(frozen=True)
class Skipped:
    line: int
    reason: str


@dataclass
class JournalContents:
    events: list[ev.Event] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def describe_skipped(self) -> str:
        return "; ".join(f"line {s.line}: {s.reason}" for s in self.skipped)


class JournalError(Exception):
    """A journal that cannot be read at all (missing, not a file, unreadable)."""


class UnsafeFolder(JournalError):
    """A data dir or run folder another user could have written to: refused, never read."""


def own_folder(folder: Path) -> None:
    """Refuse `folder` unless it is this user's and nobody else can write to it, as the
    socket folder is checked: what another user planted in a run (its journal names the
    commands its sessions start, an MCP server's among them) would run as this user.

    Raises:
        UnsafeFolder: it is a link, another user's, or open to others' writes.
    """
    problem = folder_problem(folder)
    if problem is not None:
        raise UnsafeFolder(
            f"{problem}; mala-tui reads runs only from folders of yours that nobody else "
            "can write to"
        )


def own_data_dir(data_dir: Path) -> None:
    """`own_folder` for a data dir and its runs folder, those that exist. A data dir that is
    a link is judged by the folder it leads to (a link to a folder of one's own is harmless);
    the runs folder must be a real folder.

    Raises:
        UnsafeFolder: either is another user's, or open to others' writes.
    """
    if data_dir.exists():
        own_folder(data_dir.resolve())
    if os.path.lexists(runs_dir(data_dir)):
        own_folder(runs_dir(data_dir))


def read_events(path: Path) -> JournalContents:
    """Every usable event of a journal, and what was skipped and why.

    Raises:
        JournalError: the file is missing or cannot be opened.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise JournalError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    contents = JournalContents()
    lines = raw.split(b"\n")
    torn_tail = raw and not raw.endswith(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        last = number == len(lines)
        try:
            data = loads_json(line)
        except (ValueError, RecursionError) as exc:  # JSON and number errors are ValueErrors
            if isinstance(exc, NumberOutOfRange):
                reason = str(exc)
            elif last and torn_tail:
                reason = f"torn last line ({len(line)} bytes, cut off mid-write)"
            elif isinstance(exc, RecursionError):
                reason = "not JSON this reader accepts: nested too deeply"
            else:
                reason = f"not JSON: {exc}"
            contents.skipped.append(Skipped(number, reason))
            continue
        if isinstance(data, dict) and not isinstance(data.get("type"), str):
            # Checked here: a list or an object as `type` cannot even be looked up among
            # the known types (it is unhashable).
            shown = json.dumps(data.get("type"))
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            contents.skipped.append(Skipped(number, f"`type` is not a string: {shown}"))
            continue
        try:
            contents.events.append(ev.parse_event(data))
        except (ev.UnknownEventError, ev.BadEventError) as exc:
            contents.skipped.append(Skipped(number, str(exc)))
    return contents


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    directory: Path
    started_at: float | None
    mode: ev.RunMode | None
    """What started it (None: its journal has no readable `run_started`)."""
    sessions: tuple[str, ...]
    ended: bool
    ok: bool | None


def list_runs(data_dir: Path) -> list[RunSummary]:
    """Runs under the data dir, newest first; a run whose journal cannot be read is still listed.

    Raises:
        UnsafeFolder: the data dir, its runs folder or a run's folder is open to another
            user (nothing of it is read).
        JournalError: the runs folder exists but cannot be listed.
    """
    folders = run_folders(data_dir)
    for directory in folders:
        own_folder(directory)
    return [_summarize(directory) for directory in folders]


def run_folders(data_dir: Path) -> list[Path]:
    """The folders of the runs under the data dir (those holding a journal), newest first:
    a run id starts with its start time. Nothing is read: finding one run costs no more
    than listing a folder, however large the other runs' journals are.

    Raises:
        UnsafeFolder: the data dir or its runs folder is open to another user.
        JournalError: the runs folder exists but cannot be listed.
    """
    root = runs_dir(data_dir)
    if not root.is_dir():
        return []
    own_data_dir(data_dir)
    try:
        folders = sorted(root.iterdir(), reverse=True)
    except OSError as exc:
        raise JournalError(f"{root}: cannot be listed: {exc.strerror or exc}") from None
    return [directory for directory in folders if (directory / EVENTS_FILE).is_file()]


def _summarize(directory: Path) -> RunSummary:
    started: float | None = None
    mode: ev.RunMode | None = None
    sessions: tuple[str, ...] = ()
    ended, ok = False, None
    for event in _iter_quietly(directory / EVENTS_FILE):
        if isinstance(event, ev.RunStarted):
            started, mode, sessions = event.at, event.mode, event.sessions
        elif isinstance(event, ev.RunEnded):
            ended, ok = True, event.ok
        elif isinstance(event, ev.RunResumed):  # going on again, until its next end
            ended, ok = False, None
    return RunSummary(directory.name, directory, started, mode, sessions, ended, ok)


def _iter_quietly(path: Path) -> Iterator[ev.Event]:
    try:
        yield from read_events(path).events
    except JournalError:
        return


def find_run(data_dir: Path, run: str) -> Path:
    """A run's directory from its id, a unique prefix of it, or "latest".

    Raises:
        UnsafeFolder: the data dir, its runs folder or the run's folder is open to another
            user (nothing of it is read).
        JournalError: no such run, or the prefix is ambiguous.
    """
    runs = run_folders(data_dir)
    if run == "latest":
        if not runs:
            raise JournalError(f"no runs under {runs_dir(data_dir)}")
        return _owned(runs[0])
    exact = [r for r in runs if r.name == run]
    if exact:
        return _owned(exact[0])
    matches = [r for r in runs if r.name.startswith(run)]
    if len(matches) == 1:
        return _owned(matches[0])
    if not matches:
        raise JournalError(f"no run {run!r} under {runs_dir(data_dir)}; `mala-tui runs` lists them")
    raise JournalError(
        f"{run!r} matches {len(matches)} runs: {', '.join(r.name for r in matches[:5])}"
    )


def _owned(folder: Path) -> Path:
    own_folder(folder)
    return folder
