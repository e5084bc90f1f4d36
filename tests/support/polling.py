"""Waiting for what a test expects to see: the one polling helper of every tier.

What a test waits for shows up later than the action that causes it: a frame after the
supervisor recorded it (the app), or in another process (a terminal, a journal on disk).
So a test waits for the condition itself, never for a guessed delay: it is read again
every `every` seconds until it holds, and only `timeout` (generous, for a loaded machine)
ends the wait, with a message saying what was awaited and, when `seen` is given, what
was there instead. A wait on something the test can be told of (an event, a listener)
uses that, not this.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def _timed_out(what: str, seen: Callable[[], str] | None) -> AssertionError:
    message = f"timed out waiting for {what}"
    return AssertionError(f"{message}; seen:\n{seen()}" if seen is not None else message)


def wait_until(
    condition: Callable[[], object],
    *,
    what: str,
    timeout: float = 60.0,
    seen: Callable[[], str] | None = None,
    every: float = 0.2,
    pause: Callable[[float], object] = time.sleep,
) -> None:
    """Block until `condition()` holds (a test driving another process from sync code).

    `pause` waits between two reads: a browser test's keeps the page's scripts running."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise _timed_out(what, seen)
        pause(every)


async def eventually(
    condition: Callable[[], object],
    *,
    what: str = "the condition",
    timeout: float = 10.0,
    seen: Callable[[], str] | None = None,
    every: float = 0.02,
) -> None:
    """Wait until `condition()` holds, letting the event loop run between reads."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise _timed_out(what, seen)
        await asyncio.sleep(every)
