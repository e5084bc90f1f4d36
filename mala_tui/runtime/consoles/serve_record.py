"""Where `mala-tui serve` listens for a data folder, so that a notification can link to it.

While a web console serves a data folder, every notification of its runs carries the
address of the question it is about (`notify_command`'s MALA_URL, `ui.notify_url`, the
headless line, the browser's own notification): the run's page opened at that question's
dialog. `serve` records its address in the data folder (`serve.json`, 0600, written whole
or not at all) and removes it when it stops; one a killed server left behind is ignored,
as its process is gone.

The address never carries the access token: the record holds none. A browser that has
the cookie opens the link; one that has not is asked for the token first (web.access).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Final
from urllib.parse import urlencode

SERVE_FILE: Final = "serve.json"
"""In the data folder: the address a `serve` of it listens at, and its process id."""


def record_serve(data_dir: Path, address: str, pid: int | None = None) -> Path:
    """Record that a server of `pid` (this process) listens at `address` ("http://host:port").

    Raises:
        OSError: the record cannot be written.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / SERVE_FILE
    text = json.dumps({"address": address, "pid": os.getpid() if pid is None else pid})
    temporary = data_dir / f".{SERVE_FILE}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    # 0600 from its creation, never through a link planted where it goes.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text + "\n")
        temporary.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    return path


def forget_serve(data_dir: Path, pid: int | None = None) -> None:
    """Remove the record, if it is still this server's (another may have started since)."""
    path = data_dir / SERVE_FILE
    if _read(path).get("pid") == (os.getpid() if pid is None else pid):
        with contextlib.suppress(OSError):
            path.unlink()


def served_at(data_dir: Path) -> str:
    """The address a live `serve` of this data folder listens at; "" when none does."""
    record = _read(data_dir / SERVE_FILE)
    address, pid = record.get("address"), record.get("pid")
    if not isinstance(address, str) or not address.startswith(("http://", "https://")):
        return ""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return ""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return ""  # left by a server that was killed
    except PermissionError:
        pass  # alive, as another user (the record is 0600: one we could read is ours)
    return address.rstrip("/")


def page_address(address: str, run_id: str, question: str = "") -> str:
    """The address of a run's console, opened at `question`'s dialog when one is named."""
    query = {"run": run_id, **({"question": question} if question else {})}
    return f"{address}/?{urlencode(query)}"


def notice_address(data_dir: Path, run_id: str, question: str = "") -> str:
    """Where a notification links to: the question's page when a `serve` of this data folder
    runs (the run's page for a notice that is no question); "" when none runs."""
    address = served_at(data_dir)
    return page_address(address, run_id, question) if address else ""


def _read(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
