"""What Ray does to the processes it runs in, kept in check.

Ray's native code writes to file descriptor 2 while it loads and connects, and its driver
prints what the raylets report on stdout: both would land on the app's screen, or in the
one line a refusal must be. A host's worker dies with its raylet, and children's exit
statuses, which Ray's core worker has the kernel discard, are this process's again.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import tempfile
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mala_tui.runtime.private.redaction import redact

_PR_SET_PDEATHSIG = 1


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Ray's native code writes to the process's stderr (file descriptor 2) as it loads and
    connects, whatever its log level: warnings about the network, a line saying which level
    it took. That is the app's screen, or the one line a refusal must be; so while Ray
    starts, descriptor 2 writes into a scratch file instead, which is then dropped."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as scratch:
        os.dup2(scratch.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


#: What the cluster's raylets said to this driver (their warnings, a worker that died),
#: kept for the run's `ray.log` (`log_raylet_messages_to`) instead of printed.
RAYLET_MESSAGES: deque[str] = deque(maxlen=500)
_log_file: list[Path] = []


def _keep(data: dict[str, Any], ignore_prefix: bool = False) -> None:
    lines = [str(line) for line in data.get("lines", ())]
    RAYLET_MESSAGES.extend(lines)
    if _log_file:
        with contextlib.suppress(OSError), _log_file[0].open("a", encoding="utf-8") as log:
            log.writelines(f"{redact(line)}\n" for line in lines)


def keep_raylet_messages_off_the_terminal(ray: Any) -> None:
    """Ray's driver prints what the raylets report (start-up warnings, a worker that died)
    on this process's stdout: the headless lines, or the app's screen. They are kept for
    the run's `ray.log` instead (the journal says what matters: a host lost)."""
    worker_module = sys.modules.get("ray._private.worker")
    if worker_module is not None:
        setattr(worker_module, "print_to_stdstream", _keep)  # noqa: B010 (no stub for it)


def log_raylet_messages_to(path: Path) -> None:
    """Keep what the raylets say in `path` from now on, what they said already first."""
    _log_file[:] = [path]
    if RAYLET_MESSAGES:
        _keep({"lines": list(RAYLET_MESSAGES)})


def die_with_parent() -> None:
    """The host's worker dies the moment its raylet (its parent) does, and with it the CLI
    (which dies with the worker): a node gone takes its sessions with it, at once."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def own_exit_statuses() -> None:
    """Children's exit statuses back to this process. With the raylet as subreaper (set in
    `connect`), Ray's core worker, in the driver and in every worker, sets SIGCHLD to be
    ignored, so the kernel reaps each child itself and every `subprocess.run` reads 0 as
    its exit status, whatever it was: a git that failed would pass for one that worked.
    The default disposition gives them back (everything this process starts, it waits for);
    the raylet still kills what a dead worker leaves behind."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except ValueError:  # not the main thread (an async actor's): the process-wide call
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.signal(int(signal.SIGCHLD), 0)  # SIG_DFL
