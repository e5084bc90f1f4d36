"""`mala-tui serve` as a user starts it: a real process on 127.0.0.1, its URL read from stdout."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

URL_LINE = re.compile(r"^open (http://\S+/\?token=(\S+))$")


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    """The URL printed once, with the token."""
    token: str
    lines: list[str]
    """What the server printed on stdout: up to its URL, and after it as it comes."""
    errors: IO[str] = field(repr=False)

    @property
    def base(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def port(self) -> int:
        port = urlsplit(self.url).port
        assert port is not None
        return port

    @property
    def cookie(self) -> str:
        return f"mala_tui_token_{self.port}"

    @property
    def cookie_header(self) -> dict[str, str]:
        """The header a browser sends once it has the cookie."""
        return {"Cookie": f"{self.cookie}={self.token}"}

    def stderr(self) -> str:
        self.errors.seek(0)
        return self.errors.read()

    def children(self) -> list[int]:
        """The server's child processes now: one app per connected tab."""
        return children_of(self.process.pid)


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


@contextlib.contextmanager
def serve(data_dir: Path, *args: str, prefix: tuple[str, ...] = ()) -> Iterator[Served]:
    """`mala-tui serve --port 0` on `data_dir`, stopped with SIGINT (as Ctrl-C) at the end."""
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(
            [
                *prefix,
                *(sys.executable, "-m", "mala_tui", "serve", "--port", "0"),
                *("--data-dir", str(data_dir), *args),
            ],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=dict(os.environ),
        )
        assert process.stdout is not None
        lines: list[str] = []
        drain = threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True)
        try:
            for line in process.stdout:
                lines.append(line.rstrip("\n"))
                found = URL_LINE.match(lines[-1])
                if found:
                    break
            else:
                process.wait(timeout=60)
                errors.seek(0)
                raise AssertionError(f"serve printed no URL: {lines} {errors.read()}")
            # The rest (a tab's app errors, say) is read as it comes: the server never blocks.
            drain.start()
            yield Served(process, found.group(1), found.group(2), lines, errors)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)  # as Ctrl-C on its terminal
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if drain.is_alive():
                drain.join(timeout=30)
            process.stdout.close()


def _drain(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line.rstrip("\n"))
