"""The last line of defence: an unexpected exception becomes one line and exit status 70.

The traceback goes to `error.log` in the run's folder (the run this process opened),
else in the data dir, else in the user's own log folder; the user is told which. The run's
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

import platformdirs

from mala_tui.core.text import safe_line
from mala_tui.runtime.journal.writer import last_opened_run
from mala_tui.runtime.private.files import append_private, private_folder
from mala_tui.runtime.private.redaction import redact

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
    summary = safe_line(redact(f"{type(exc).__name__}: {exc}".rstrip(": ")), 300)
    try:
        err.write(f"mala-tui: internal error: {summary} ({where})\n")
        err.flush()
    except (OSError, ValueError):
        pass  # no stderr left to tell: the exit status still says it
    return EXIT_INTERNAL


def _candidates(data_dir: Path | None) -> list[tuple[Path, bool]]:
    """Where the details may go, in order, and whether that file's folder may be made:
    the run's folder, the data dir, this user's own log folder, and only then a folder
    of this user's own in the shared temp dir (never a fixed name there: anyone could
    plant a link under it)."""
    run = last_opened_run()
    files = [(run / ERROR_LOG, False)] if run else []
    if data_dir is not None:
        files.append((data_dir / ERROR_LOG, False))
    files.append((Path(platformdirs.user_log_dir("mala-tui", appauthor=False)) / ERROR_LOG, True))
    files.append((Path(tempfile.gettempdir()) / f"mala-tui-{os.getuid()}" / ERROR_LOG, True))
    return files


def save_details(details: str, files: list[tuple[Path, bool]]) -> Path | None:
    """Append the details to the first of `files` that takes them: private to the user,
    never through a symlink, in a folder of the user's own."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    text = f"--- {stamp} mala-tui internal error (pid {os.getpid()})\n{redact(details)}\n"
    for path, make in files:
        if private_folder(path.parent, make=make) and append_private(path, text):
            return path
    return None
