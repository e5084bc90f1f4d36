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
from pathlib import Path
from typing import Any

from mala_tui.core import events as ev
from mala_tui.runtime.journal.reader import (
    EVENTS_FILE,
    JournalContents,
    JournalError,
    RunSummary,
    Skipped,
    UnsafeFolder,
    find_run,
    list_runs,
    own_data_dir,
    read_events,
    runs_dir,
)
from mala_tui.runtime.private.redaction import redact, redact_json_line

RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"
RESERVE_FILE = ".reserve"
#: Room kept back for the shutdown's events once the disk is full (a few dozen lines).
RESERVE_BYTES = 16 * 1024

#: Sequence numbers past this are damage, not events (JSON's exact integers end there).
MAX_SEQ = 2**53

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{secrets.token_hex(2)}"


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
        self.last_seq = 0
        """The highest sequence number in the journal: found when it was reopened (a
        resumed run numbers its events on from there), then the last written."""
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
            own_data_dir(data_dir)  # another user could change the run under us
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
        except UnsafeFolder as exc:
            raise StorageError(f"cannot keep a run under {data_dir}: {exc}") from None
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
                journal.last_seq = last_seq(existing.read())
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

    def write(self, event: ev.Event) -> str:
        """Append one event as one line, on disk when this returns; the line (redacted,
        without its newline) is returned, for whoever streams the journal live.

        Raises:
            OSError: the line could not be written even with the reserve given back;
                the journal is then failed (`failure`) and takes no more lines.
        """
        if self._fd is None:
            raise self.failure or ValueError("the journal is closed")
        if not event.seq:  # written straight, not through a recorder (`land`, say): numbered
            event = event.model_copy(update={"seq": self.last_seq + 1})
        line = redact_json_line(ev.event_json(event))
        try:
            self._append((line + "\n").encode("utf-8"))
        except OSError as exc:
            self.failure = exc
            raise
        self.lines_written += 1
        self.last_seq = max(self.last_seq, event.seq)
        return line

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


def last_seq(raw: bytes) -> int:
    """The number a journal's next event follows: its highest `seq`, or, for a journal
    written (partly) before events were numbered, at least its count of events, so
    numbers only ever grow."""
    highest = count = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a torn or damaged line: the reader skips it too
        if not isinstance(data, dict):
            continue
        count += 1
        seq = data.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool) and 0 < seq < MAX_SEQ:
            highest = max(highest, seq)
    return max(highest, count)


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


__all__ = [
    "EVENTS_FILE",
    "JournalContents",
    "JournalError",
    "RunSummary",
    "Skipped",
    "UnsafeFolder",
    "find_run",
    "list_runs",
    "read_events",
    "runs_dir",
]
