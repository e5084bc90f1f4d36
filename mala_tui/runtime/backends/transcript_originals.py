"""The originals of the transcript lines masking and folding change: kept, each once.

A mask replaces a few results and a fold drops the structure of masked steps, so only
those lines are kept, appended to `<session id>.originals.jsonl` in the run's
`transcripts/` folder as they were before the change. A copy of the whole transcript at
every mask would make a long session's storage (and the time to write and redact it)
grow with the square of its length: on the reader at 16 times its length, 1,900 masks
of a transcript grown to 23 MB. The kept lines and the transcript as it is now hold
everything the session ever said.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from mala_tui.runtime.backends.base import MaskError
from mala_tui.runtime.private.redaction import redact_json_line

SUFFIX = ".originals.jsonl"


def originals_path(folder: Path, transcript: Path) -> Path:
    """Where the originals of `transcript`'s changed lines are kept in `folder`."""
    return folder / f"{transcript.stem}{SUFFIX}"


def keep_originals(folder: Path, transcript: Path, lines: Sequence[str]) -> None:
    """Append `lines` (raw JSONL, as they were) to the transcript's originals, redacted.

    All of them or none: a write that fails (a full disk) is taken back, and a file it
    created is removed, so the caller can refuse the rewrite with nothing half kept.
    """
    if not lines:
        return
    path = originals_path(folder, transcript)
    text = "".join(redact_json_line(line.rstrip("\n")) + "\n" for line in lines if line.strip())
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise MaskError(f"{path}: the original cannot be kept: {exc.strerror or exc}") from None
    size = os.fstat(fd).st_size
    try:
        data = text.encode("utf-8")
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
            if size == 0:
                path.unlink()
        raise MaskError(f"{path}: the original cannot be kept: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
