"""The last line of defence: an unexpected exception becomes one line and exit status 70.

The traceback goes to `error.log` in the run's folder (the run this process opened),
else in the data dir, else in the temp dir; the user is told which. The run's
journal has already been closed by the command's own clean-up on the way out.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TextIO

from mala_tui.runtime.headless import one_line
from mala_tui.runtime.journal import last_opened_run
from mala_tui.runtime.redaction import redact

#: An unexpected error (sysexits' EX_SOFTWARE).
EXIT_INTERNAL = 70
ERROR_LOG = "error.log"


def report_internal_error(
    exc: BaseException, data_dir: Path | None, err: TextIO | None = None
) -> int:
    """Save the details, print one line naming where, and return EXIT_INTERNAL."""
    err = err if err is not None else sys.stderr
    details = "".join(traceback.format_exception(exc))
    saved = save_details(details, _candidates(data_dir))
    where = f"details in {saved}" if saved else "the details could not be saved"
    summary = one_line(redact(f"{type(exc).__name__}: {exc}".rstrip(": ")), 300)
    try:
        err.write(f"mala-tui: internal error: {summary} ({where})\n")
        err.flush()
    except (OSError, ValueError):
        pass  # no stderr left to tell: the exit status still says it
    return EXIT_INTERNAL


def _candidates(data_dir: Path | None) -> list[Path]:
    run = last_opened_run()
    files = [run / ERROR_LOG if run else None, data_dir / ERROR_LOG if data_dir else None]
    files.append(Path(tempfile.gettempdir()) / f"mala-tui-{ERROR_LOG}")
    return [path for path in files if path is not None]


def save_details(details: str, files: list[Path]) -> Path | None:
    """Append the details to the first of `files` that takes them (private to the user)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    text = f"--- {stamp} mala-tui internal error (pid {os.getpid()})\n{redact(details)}\n"
    for path in files:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as handle:
                handle.write(text)
        except (OSError, ValueError):
            continue
        return path
    return None
