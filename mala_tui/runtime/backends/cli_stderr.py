"""What Claude Code and the SDK print beside the stream: cleaned, redacted, kept, said short.

The CLI's stderr, inherited, would reach the user's terminal byte for byte, under the
app and headless alike. What it prints there can come from the model endpoint: a broken
stream from a gateway is echoed whole ("Could not parse message into JSON: ..."), with
any escape sequence in it (a clipboard write, a new window title, a cleared screen) and
any key. So the SDK is asked to pipe it (its `stderr` callback), and every line is
cleaned as agent text is (`core.text.clean`), redacted as the journal is, and appended
to `stderr/<session>.log` in the run's folder. The SDK's own log records go the same
way into `stderr/sdk.log`: with no handler of their own they would be printed on
mala-tui's stderr.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from pathlib import Path
from typing import Final

from mala_tui.core.text import clean, shorten
from mala_tui.runtime.private.files import append_private, private_folder
from mala_tui.runtime.private.redaction import redact

STDERR_DIR: Final = "stderr"
"""The run's folder for what the CLIs and the SDK printed."""
SDK_LOG: Final = "sdk.log"
LINE_CHARS: Final = 4_000
"""A line longer than this is kept cut (a stream echoed whole can be megabytes)."""
FILE_BYTES: Final = 1_000_000
"""What one file keeps at most; later lines are counted, not written."""
SHOWN_CHARS: Final = 200
"""A line as it is said in the event log and the headless output."""
TAIL_LINES: Final = 20


def safe_line(raw: str) -> str:
    """One line as it may be shown or written: control characters visible, secrets redacted."""
    return redact(shorten(clean(raw.rstrip("\r\n")), LINE_CHARS))


class StderrLog:
    """One session's CLI stderr, across its processes: kept safe, and the latest lines."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.lines = 0
        self.unwritten = 0
        """Lines not written: the file was full or could not be written."""

    def add(self, raw: str) -> str:
        """Keep one line the CLI printed; returns it as it may be shown."""
        line = safe_line(raw)
        self.lines += 1
        self.tail.append(line)
        if self.path is None or not _append(self.path, line + "\n"):
            self.unwritten += 1
        return line

    @property
    def last(self) -> str | None:
        return self.tail[-1] if self.tail else None

    def said(self, line: str) -> str:
        """The line in short, and where the whole of it is."""
        where = f" (all of it in {self.path})" if self.path is not None else ""
        return f"{shorten(line, SHOWN_CHARS)}{where}"


class _SafeFileHandler(logging.Handler):
    """Log records, cleaned and redacted, appended to a file (or dropped without one)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.path: Path | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.path is None:
            return
        with contextlib.suppress(Exception):  # logging must never break a session
            text = "\n".join(safe_line(line) for line in self.format(record).splitlines())
            _append(self.path, text + "\n")


def _append(path: Path, text: str) -> bool:
    """Appended to its file (0600, in a 0700 folder, never through a link), up to FILE_BYTES."""
    return private_folder(path.parent) and append_private(path, text, limit=FILE_BYTES)


_sdk_handler = _SafeFileHandler()


def keep_sdk_log(path: Path | None) -> None:
    """Send the SDK's log records (warnings and errors) to `path`, never to a terminal."""
    logger = logging.getLogger("claude_agent_sdk")
    if _sdk_handler not in logger.handlers:
        logger.addHandler(_sdk_handler)
        logger.propagate = False
    _sdk_handler.path = path
