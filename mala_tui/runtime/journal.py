"""The run journal: append-only JSONL, one event a line, flushed per event.

Layout under the data dir::

    runs/<run id>/events.jsonl        every event, in order
    runs/<run id>/run.json            how the run was started (settings, tasks)
    runs/<run id>/checkpoints/<session>-<n>.md

Everything is created readable by the user only. Text is scrubbed of anything
shaped like an API key or an auth header before it is written. A crash (even
`kill -9`) leaves every line before it readable; the reader skips a torn last
line, and lines it cannot use, and says what it skipped.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mala_tui.core import events as ev

EVENTS_FILE = "events.jsonl"
RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"

_SECRET_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer\s+)?[^\s\"',]+"),
    re.compile(r"(?i)(x-api-key\s*[:=]\s*)[^\s\"',]+"),
    re.compile(r"(?i)(ANTHROPIC_(?:API_KEY|AUTH_TOKEN)\s*[=:]\s*)[^\s\"',]+"),
)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def redact(text: str) -> str:
    """Replace anything shaped like an Anthropic key or an auth header value."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + "[redacted]", text)
    return text


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{stamp}-{secrets.token_hex(2)}"


def runs_dir(data_dir: Path) -> Path:
    return data_dir / "runs"


def safe_file_name(name: str) -> str:
    cleaned = _SAFE_NAME.sub("-", name).strip("-.")
    return cleaned[:80] or "session"


class RunJournal:
    """Writes one run's files. Not thread-safe: the runtime writes from its event loop."""

    def __init__(self, directory: Path, run_id: str, stream: IO[str]) -> None:
        self.directory = directory
        self.run_id = run_id
        self._stream = stream
        self.lines_written = 0

    @classmethod
    def create(cls, data_dir: Path, run_id: str, meta: dict[str, Any]) -> RunJournal:
        directory = runs_dir(data_dir) / run_id
        _private_dir(data_dir)
        _private_dir(runs_dir(data_dir))
        directory.mkdir(mode=0o700, exist_ok=False)
        _private_dir(directory / CHECKPOINTS_DIR)
        _write_private(directory / RUN_FILE, redact(json.dumps(meta, indent=2, default=str)) + "\n")
        fd = os.open(directory / EVENTS_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        stream = os.fdopen(fd, "a", encoding="utf-8", buffering=1)
        return cls(directory, run_id, stream)

    @property
    def events_path(self) -> Path:
        return self.directory / EVENTS_FILE

    def write(self, event: ev.Event) -> None:
        # One write per line, flushed at once: a crash can only tear the line in flight.
        self._stream.write(redact(ev.event_json(event)) + "\n")
        self._stream.flush()
        self.lines_written += 1

    def save_checkpoint(self, session: str, number: int, text: str) -> Path:
        path = self.directory / CHECKPOINTS_DIR / f"{safe_file_name(session)}-{number}.md"
        _write_private(path, redact(text) + "\n")
        return path

    def close(self) -> None:
        if not self._stream.closed:
            self._stream.close()

    def __enter__(self) -> RunJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


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
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if last and torn_tail:
                reason = f"torn last line ({len(line)} bytes, cut off mid-write)"
            else:
                reason = f"not JSON: {exc}"
            contents.skipped.append(Skipped(number, reason))
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
    """Runs under the data dir, newest first; a run whose journal cannot be read is still listed."""
    root = runs_dir(data_dir)
    if not root.is_dir():
        return []
    found = []
    for directory in sorted(root.iterdir(), reverse=True):
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
