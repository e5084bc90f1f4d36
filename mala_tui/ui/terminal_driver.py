"""The app's terminal driver: Textual's, made to survive its terminal going away.

When the terminal closes under a running app (the window closed, `tmux
kill-session`, an SSH connection dropped), the kernel sends SIGHUP and every
write to the terminal fails from then on. mala-tui's SIGHUP handler stops the
run and quits the app, but Textual's output thread dies on the first failed
write, and the app's own shutdown then waits forever to queue the escape codes
that restore the terminal. Writes to a terminal that is gone are dropped here
instead, so the shutdown runs to its end and the process exits.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver


class GoneProof:
    """A text file that drops writes (and flushes) once the file behind it fails."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._file.write(text)
            except (OSError, ValueError):  # EIO or EPIPE on a closed terminal; a closed file
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._file.flush()
            except (OSError, ValueError):
                self.gone = True

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return not self.gone and self._file.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


class MalaDriver(LinuxDriver):
    """Textual's Linux and macOS driver, writing through `GoneProof`; it can be held while
    the app has given the terminal to another program."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        assert sys.__stderr__ is not None
        self._file = GoneProof(sys.__stderr__)  # type: ignore[assignment]
        self._held = False

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Drop every write meanwhile. Textual's `App.suspend` is made for a program run
        while the app waits; mala-tui's run goes on meanwhile, and the app's repaints would
        reach the other program's screen, or, past the driver's few queued writes, block
        the whole run. The app repaints everything when it resumes."""
        self._held = True
        try:
            yield
        finally:
            self._held = False

    def write(self, data: str) -> None:
        if not self._held:
            super().write(data)

    def flush(self) -> None:
        if not self._held:
            super().flush()


def textual_driver() -> type[LinuxDriver]:
    """The driver Textual picks on Linux and macOS, which `MalaDriver` stands in for."""
    return LinuxDriver
