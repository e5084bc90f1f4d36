"""Stops asked for from outside a run's sessions: Ctrl-C, `q` in the app, SIGTERM, SIGHUP.

Each is a `StopReason`. What a reason does is looked up in one table (`ROUTES`): Ctrl-C,
`q` and SIGTERM stop the run the same way, resumably (every session stopped with the
run, its CLI process ended, the journal ended), and the command exits afterwards with the
reason's status (130 Ctrl-C, 143 SIGTERM; `q` the run's own). A hangup (SIGHUP: the
terminal went away) detaches instead: the run goes on without its terminal, and a
console can attach to it (a run hosted in a session of its own never gets one; a
headless run in the terminal's own process goes on in place).

The handlers are installed before a run makes anything (`stop_requests`): a signal
during start-up (while the journal, the worktrees, the model server are made) is taken
note of, start-up stops at its next step, and the run ends with every session stopped
before it started, which a resume carries on. Without them the signal would end the
process there and then, leaving a journal that never ends ("running?" for ever) and
worktrees it never recorded. Asked again while stopping, the stop hurries: the agent
processes are killed at once, and the stop is still seen to its end and journaled.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from enum import StrEnum
from types import FrameType
from typing import Final


class StopReason(StrEnum):
    INTERRUPT = "interrupt"
    """Ctrl-C: SIGINT, from the terminal or `kill -INT`."""
    QUIT = "quit"
    """`q` in the app."""
    TERMINATE = "terminate"
    """SIGTERM: a service manager, `kill`, a shutdown."""
    HANGUP = "hangup"
    """SIGHUP: the terminal went away (its window closed, an SSH connection dropped)."""

    @property
    def cause(self) -> str:
        """Why each session stopped, in its journal and its line: a resume matches the
        sessions' reason against the run's to tell a stop with the run from one by one."""
        return _CAUSES[self]

    @property
    def exit_status(self) -> int | None:
        """128 + the signal's number; None for a quit (the run's own status then)."""
        number = next((n for n, reason in SIGNALS.items() if reason is self), None)
        return None if number is None else 128 + int(number)


_CAUSES: Final = {
    StopReason.INTERRUPT: "interrupted by Ctrl-C",
    StopReason.QUIT: "the app was quit",
    StopReason.TERMINATE: "stopped by SIGTERM",
    StopReason.HANGUP: "stopped by SIGHUP",
}

SIGNALS: Final = {
    signal.SIGINT: StopReason.INTERRUPT,
    signal.SIGTERM: StopReason.TERMINATE,
    signal.SIGHUP: StopReason.HANGUP,
}


class StopRoute(StrEnum):
    STOP = "stop"
    """Every session stopped with the run, resumably; then the command exits."""
    DETACH = "detach"
    """The run goes on without its terminal; no stop is asked for."""


ROUTES: Final[dict[StopReason, StopRoute]] = {
    reason: StopRoute.DETACH if reason is StopReason.HANGUP else StopRoute.STOP
    for reason in StopReason
}
"""What each reason does: the one place a reason is sent one way or another."""


class Shutdown:
    """The stop asked for from outside the run, if any, and how many times it was asked."""

    def __init__(self) -> None:
        self.reason: StopReason | None = None
        self.signal: signal.Signals | None = None
        self.times = 0
        self.detached = False
        """The terminal went away (a reason routed to DETACH): the run goes on."""
        self._act: Callable[[int], None] | None = None

    @property
    def requested(self) -> bool:
        return self.reason is not None

    @property
    def route(self) -> StopRoute | None:
        return None if self.reason is None else ROUTES[self.reason]

    @property
    def cause(self) -> str:
        return "" if self.reason is None else self.reason.cause

    @property
    def exit_status(self) -> int | None:
        return None if self.reason is None else self.reason.exit_status

    def request(self, reason: StopReason, number: signal.Signals | None = None) -> None:
        """A stop is asked for (the first reason is the one kept); the run is told, if it
        listens, else it finds out when it next looks (start-up checks between steps).
        A reason routed to DETACH asks for no stop: it is only noted (`detached`)."""
        if ROUTES[reason] is StopRoute.DETACH:
            self.detached = True
            return
        self.times += 1
        if self.reason is None:
            self.reason, self.signal = reason, number
        if self._act is not None:
            self._act(self.times)

    @contextlib.contextmanager
    def acted_on(self, act: Callable[[int], None]) -> Iterator[None]:
        """While inside, each request calls `act(times)` on the running event loop (never
        inside the signal handler itself, which may interrupt the loop anywhere); one made
        before is acted on as it starts."""
        loop = asyncio.get_running_loop()

        def soon(times: int) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(act, times)

        self._act = soon
        if self.times:  # asked between the caller's last look and now
            soon(self.times)
        try:
            yield
        finally:
            self._act = None


@contextlib.contextmanager
def stop_requests() -> Iterator[Shutdown]:
    """Take SIGINT, SIGTERM and SIGHUP as requests to stop, from here to the end of the block.

    A handler only takes note (`Shutdown.request`): what is done about it is the run's
    business. A signal the process was started with ignored (`nohup`, a background job
    of a shell without job control) stays ignored, as the convention is. Outside the main
    thread no handler can be installed, and none is.
    """
    shutdown = Shutdown()
    if threading.current_thread() is not threading.main_thread():
        yield shutdown
        return

    def received(number: int, _frame: FrameType | None) -> None:
        which = signal.Signals(number)
        shutdown.request(SIGNALS[which], which)

    previous: dict[signal.Signals, Callable[[int, FrameType | None], object] | int] = {}
    for number in SIGNALS:
        if signal.getsignal(number) is signal.SIG_IGN:
            continue
        before = signal.signal(number, received)
        previous[number] = signal.SIG_DFL if before is None else before  # None: set from C
    try:
        yield shutdown
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
