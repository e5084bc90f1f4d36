"""The run journal: append-only JSONL, one event a line, flushed per event.

Layout under the data dir::

    runs/<run id>/events.jsonl        every event, in order
    runs/<run id>/run.json            how the run was started (settings, tasks)
    runs/<run id>/checkpoints/<session>-<n>.md

Everything is created readable by the user only. Text is scrubbed of anything
shaped like an API key, a GitHub token or an auth header before it is written.
A crash (even `kill -9`) leaves every line before it readable; the reader skips
a torn last line, and lines it cannot use, and says what it skipped.

A full disk must not cost the end of the story: each journal holds a small
reserve file, given back the first time a write fails for want of space, so the
events of the shutdown that follows (sessions ended, `run_ended`) still fit.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mala_tui.core import events as ev
from mala_tui.runtime.redaction import redact, redact_json_line

EVENTS_FILE = "events.jsonl"
RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"
RESERVE_FILE = ".reserve"
#: Room kept back for the shutdown's events once the disk is full (a few dozen lines).
RESERVE_BYTES = 16 * 1024

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def redact_file(path: Path) -> bool:
    """Redact a JSONL file in place (a transcript copy); True when anything changed."""
    raw = path.read_text(encoding="utf-8", errors="surrogateescape")
    lines = raw.split("\n")
    cleaned = [redact_json_line(line) if line.strip() else line for line in lines]
    if cleaned == lines:
        return False
    # Beside it, then over it: a failed write (a full disk) leaves the copy as it was.
    scratch = path.with_name(path.name + ".redacting")
    try:
        _write_private(scratch, "\n".join(cleaned), errors="surrogateescape")
        scratch.replace(path)
    finally:
        with contextlib.suppress(OSError):
            scratch.unlink()
    return True


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{secrets.token_hex(2)}"


def runs_dir(data_dir: Path) -> Path:
    return data_dir / "runs"


def safe_file_name(name: str) -> str:
    """A file name for a session: readable, and different for different names.

    A name that had to be changed (``h/1`` and ``h-1`` both read ``h-1``) gains a
    short hash of the original, so two sessions never share a checkpoint file.
    """
    cleaned = _SAFE_NAME.sub("-", name).strip("-.")[:80] or "session"
    if cleaned == name:
        return cleaned
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned}-{digest}"


class StorageError(Exception):
    """The data dir cannot hold a run: missing permission, not a folder, a full disk."""


class JournalInUse(Exception):
    """Another process holds the journal (a live run): it cannot be continued from here."""


def describe_os_error(exc: OSError) -> str:
    """`No space left on device (/data/runs/x/events.jsonl)`: the reason, then the file."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    where = exc.filename if exc.filename is not None else ""
    return f"{reason} ({where})" if where else reason


_opened_runs: list[Path] = []


def last_opened_run() -> Path | None:
    """The folder of the run opened last (since `forget_opened_runs`), for an error report."""
    return _opened_runs[-1] if _opened_runs else None


def forget_opened_runs() -> None:
    """A new command starts: no run of an earlier one is its run."""
    _opened_runs.clear()


class RunJournal:
    """Writes one run's files. Not thread-safe: the runtime writes from its event loop."""

    def __init__(self, directory: Path, run_id: str, fd: int) -> None:
        self.directory = directory
        self.run_id = run_id
        self._fd: int | None = fd
        self.lines_written = 0
        self.failure: OSError | None = None
        """The write that failed for good; set, the journal takes no more lines."""
        self.disk_full: OSError | None = None
        """The first write that found the disk full (the reserve was given back for it)."""

    @classmethod
    def create(cls, data_dir: Path, run_id: str, meta: dict[str, Any]) -> RunJournal:
        """Create the run's folder and files.

        Raises:
            StorageError: the data dir cannot be used (named, with the reason).
        """
        directory = runs_dir(data_dir) / run_id
        try:
            _private_dir(data_dir)
            _private_dir(runs_dir(data_dir))
            directory.mkdir(mode=0o700, exist_ok=False)
            _opened_runs.append(directory)
            _private_dir(directory / CHECKPOINTS_DIR)
            _write_private(
                directory / RUN_FILE, redact(json.dumps(meta, indent=2, default=str)) + "\n"
            )
            _reserve(directory / RESERVE_FILE)
            fd = os.open(directory / EVENTS_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while this process writes
        except OSError as exc:
            raise StorageError(
                f"cannot keep a run under {data_dir}: {describe_os_error(exc)}"
            ) from None
        return cls(directory, run_id, fd)

    @classmethod
    def reopen(cls, directory: Path) -> RunJournal:
        """Append to an existing run's journal (`mala-tui resume`): same folder, same file.

        A torn last line (a `kill -9` mid-write) is ended first: the reader skips only it.

        Raises:
            JournalInUse: another process holds the journal (it writes the run).
            StorageError: the folder or its journal cannot be written.
        """
        path, journal = directory / EVENTS_FILE, None
        try:
            _private_dir(directory / CHECKPOINTS_DIR)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise JournalInUse(f"{path} is being written by another mala-tui process") from None
            journal = cls(directory, directory.name, fd)
            with path.open("rb") as existing:
                size = existing.seek(0, os.SEEK_END)
                torn = size > 0 and existing.seek(size - 1) >= 0 and existing.read(1) != b"\n"
            if torn:
                journal._append(b"\n")
            _reserve(directory / RESERVE_FILE)
        except OSError as exc:
            if journal is not None:
                journal.close()
            reason = describe_os_error(exc)
            raise StorageError(f"cannot continue the run in {directory}: {reason}") from None
        _opened_runs.append(directory)
        return journal

    @property
    def events_path(self) -> Path:
        return self.directory / EVENTS_FILE

    @property
    def closed(self) -> bool:
        return self._fd is None

    def write(self, event: ev.Event) -> None:
        """Append one event as one line, on disk when this returns.

        Raises:
            OSError: the line could not be written even with the reserve given back;
                the journal is then failed (`failure`) and takes no more lines.
        """
        if self._fd is None:
            raise self.failure or ValueError("the journal is closed")
        data = (redact_json_line(ev.event_json(event)) + "\n").encode("utf-8")
        try:
            self._append(data)
        except OSError as exc:
            self.failure = exc
            raise
        self.lines_written += 1

    def _append(self, data: bytes) -> None:
        # One unbuffered write per line: a crash can only tear the line in flight.
        assert self._fd is not None
        written = 0
        while written < len(data):
            try:
                written += self._write_bytes(self._fd, data[written:])
            except OSError as exc:
                exc.filename = str(self.events_path)
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or self.disk_full is not None:
                    raise
                self.disk_full = exc
                with contextlib.suppress(OSError):
                    (self.directory / RESERVE_FILE).unlink()
                if written:
                    # End the torn piece on a line of its own (the reader skips it) and
                    # write the whole line again after it.
                    data, written = b"\n" + data, 0

    def _write_bytes(self, fd: int, data: bytes) -> int:
        """The one system call that puts journal lines on disk (a test can fill the disk here)."""
        return os.write(fd, data)

    def save_checkpoint(self, session: str, number: int, text: str) -> Path:
        stem = self.directory / CHECKPOINTS_DIR / f"{safe_file_name(session)}-{number}"
        path, copy = stem.with_name(f"{stem.name}.md"), 1
        while path.exists():  # never over an earlier checkpoint (a resumed run's numbers go on)
            copy, path = copy + 1, stem.with_name(f"{stem.name}.{copy + 1}.md")
        _write_private(path, redact(text) + "\n")
        return path

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                (self.directory / RESERVE_FILE).unlink()

    def __enter__(self) -> RunJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _private_dir(path: Path) -> None:
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:  # a file where the folder should be: say that, not "exists"
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path)) from None


def _write_private(path: Path, text: str, errors: str = "strict") -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors=errors) as handle:
        handle.write(text)


def _reserve(path: Path) -> None:
    """Hold RESERVE_BYTES of real blocks (not a sparse file) for the journal's last lines."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"\0" * RESERVE_BYTES)
    finally:
        os.close(fd)


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
            data = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            if last and torn_tail:
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
    mode: str
    sessions: tuple[str, ...]
    ended: bool
    ok: bool | None


def list_runs(data_dir: Path) -> list[RunSummary]:
    """Runs under the data dir, newest first; a run whose journal cannot be read is still listed.

    Raises:
        JournalError: the runs folder exists but cannot be listed.
    """
    root = runs_dir(data_dir)
    if not root.is_dir():
        return []
    try:
        folders = sorted(root.iterdir(), reverse=True)
    except OSError as exc:
        raise JournalError(f"{root}: cannot be listed: {exc.strerror or exc}") from None
    found = []
    for directory in folders:
        if not (directory / EVENTS_FILE).is_file():
            continue
        found.append(_summarize(directory))
    return found


def _summarize(directory: Path) -> RunSummary:
    started: float | None = None
    mode = "?"
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
        JournalError: no such run, or the prefix is ambiguous.
    """
    runs = list_runs(data_dir)
    if run == "latest":
        if not runs:
            raise JournalError(f"no runs under {runs_dir(data_dir)}")
        return runs[0].directory
    exact = [r for r in runs if r.run_id == run]
    if exact:
        return exact[0].directory
    matches = [r for r in runs if r.run_id.startswith(run)]
    if len(matches) == 1:
        return matches[0].directory
    if not matches:
        raise JournalError(f"no run {run!r} under {runs_dir(data_dir)}; `mala-tui runs` lists them")
    raise JournalError(
        f"{run!r} matches {len(matches)} runs: {', '.join(r.run_id for r in matches[:5])}"
    )
