"""SIGTERM and SIGHUP shut a run down the way Ctrl-C does, then exit as the signal would.

Without handlers either signal ends the process at once: no session is ended, no
`run_ended` is journaled, and `runs` shows the run as running for ever. With them, the
signal starts the clean shutdown (every session stopped, its CLI process gone, the
journal ended), and the command exits afterwards with the conventional status,
128 + the signal's number (143 for SIGTERM, 129 for SIGHUP).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Shutdown:
    """Which shutdown signal arrived, if any."""

    def __init__(self) -> None:
        self.signal: signal.Signals | None = None

    @property
    def exit_status(self) -> int:
        assert self.signal is not None
        return 128 + int(self.signal)

    @property
    def cause(self) -> str:
        return f"stopped by {self.signal.name}" if self.signal is not None else ""


@contextlib.contextmanager
def on_shutdown_signals(start: Callable[[Shutdown], None]) -> Iterator[Shutdown]:
    """Call `start` once on the first SIGTERM or SIGHUP; later ones wait for that shutdown.

    Must be entered inside the running event loop; the handlers run on it.
    """
    loop = asyncio.get_running_loop()
    shutdown = Shutdown()

    def received(number: signal.Signals) -> None:
        if shutdown.signal is None:
            shutdown.signal = number
            start(shutdown)

    installed = []
    for number in SHUTDOWN_SIGNALS:
        loop.add_signal_handler(number, received, number)
        installed.append(number)
    try:
        yield shutdown
    finally:
        for number in installed:
            loop.remove_signal_handler(number)
