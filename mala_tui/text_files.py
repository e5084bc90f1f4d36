"""Text files a person hands mala-tui (a tasks file, the config file, a prompt template, a
theme), read up to a limit: `--tasks /dev/zero`, or a file that never ends, must be a
clear error, not a process that reads until memory runs out."""

from __future__ import annotations

from pathlib import Path
from typing import Final

MAX_TEXT_BYTES: Final = 16 * 2**20
"""16 MiB: far beyond any tasks, settings or template file, and well within memory."""


class TooLarge(OSError):
    """A file past MAX_TEXT_BYTES (or one that does not end)."""

    def __str__(self) -> str:
        return self.strerror or "too large"


def read_text(path: Path, limit: int = MAX_TEXT_BYTES) -> str:
    """The file's text as UTF-8, read no further than `limit` bytes.

    Raises:
        TooLarge: the file holds more than `limit` bytes (its strerror says so).
        OSError: it cannot be opened or read.
        UnicodeDecodeError: it is not UTF-8.
    """
    with path.open("rb") as source:
        data = source.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(0, f"larger than {limit // 2**20} MiB")
    return data.decode("utf-8")
