"""The session's agent process: opened when a prompt needs it, closed in a bound, killed past it.

One process at a time. Each has a generation number, and everything its reader
puts in the inbox carries it: closing a process bumps the generation, so
whatever the old process still sends is known for a leftover and ignored.
A close never leaves a process behind: past its bound the process is killed,
and a close that is itself cancelled is still seen out (`close_everything`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final

from mala_tui.core import events as ev
from mala_tui.runtime.backends.base import (
    AgentClient,
    Backend,
    KeepsRecords,
    PermissionGate,
    SessionSpec,
    ToolGate,
)
from mala_tui.runtime.session.inbox import FromAgent, Inbox

EventSink = Callable[[ev.Event], ev.Event]
"""Records an event (journal, live view); returns it as recorded (a checkpoint gains its path)."""

AFTER_KILL_S: Final = 5.0
"""How long the SDK's close may take once its process is killed."""


class AgentProcess:
    """The current agent client of one session, and the bookkeeping of every one it had."""

    def __init__(
        self,
        *,
        spec: SessionSpec,
        backend: Backend,
        inbox: Inbox,
        sink: EventSink,
        clock: Callable[[], float],
        gate: ToolGate | None = None,
        permission_gate: PermissionGate | None = None,
    ) -> None:
        self.spec = spec
        self.backend = backend
        self._inbox = inbox
        self._sink = sink
        self._clock = clock
        self._gate = gate
        self._permission_gate = permission_gate
        self.client: AgentClient | None = None
        self.generation = 0
        """Bumped by every open and close: items of another generation are leftovers."""
        self.pids: list[int] = []
        """Every process this session started, for the check that none is left."""
        self._reader: asyncio.Task[None] | None = None
        self._pid: int | None = None
        self._started_at: dict[int, float] = {}
        self._closing: set[asyncio.Future[None]] = set()
        """Disconnects under way, seen out before the runner returns."""
        self._hurried = False
        """Killed without waiting for a disconnect (the stop was asked for again)."""

    def current(self) -> AgentClient | None:
        """The open client now (a call, not an attribute: it changes across every await)."""
        return self.client

    async def query(self, prompt: str, *, resume: str | None) -> None:
        """Send a prompt, opening a process first (resuming `resume`) if none is open."""
        if self.client is None:
            await self._open(resume)
        assert self.client is not None
        await self.client.query(prompt)

    async def _open(self, resume: str | None) -> None:
        self.generation += 1
        generation = self.generation
        client = self.backend.create(self.spec, resume=resume, clock=self._clock)
        # Before connecting: the first tool result may come before anything else is read.
        client.set_tool_gate(self._gate)
        client.set_permission_gate(self._permission_gate)
        started = time.monotonic()
        await client.connect()
        self.client = client
        pid = self._pid = client.pid
        if pid is not None:
            self.pids.append(pid)
            self._started_at[pid] = started
        self._sink(
            ev.ProcessStarted(
                at=self._clock(),
                session=self.spec.name,
                pid=pid,
                purpose="agent",
                resume=resume is not None,
            )
        )
        self._reader = asyncio.create_task(
            self._read(client, generation), name=f"read {self.spec.name}"
        )

    async def _read(self, client: AgentClient, generation: int) -> None:
        try:
            async for item in client.stream():
                await self._inbox.put(FromAgent(generation, item))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the stream broke: tell the loop, which treats it as a hang
            await self._inbox.put(FromAgent(generation, None, repr(exc)))
            return
        await self._inbox.put(FromAgent(generation, None))

    async def close(self, bound: float) -> None:
        """Disconnect within `bound` seconds; past it, kill the process."""
        client, reader, pid = self.client, self._reader, self._pid
        self.client = self._reader = None
        self._pid = None
        self.generation += 1  # whatever the old process still sends is ignored
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        if client is None:
            return
        how = "disconnected"
        # Not wait_for: cancelling the SDK's close midway leaves its pipes open and the
        # process on its books. Past the bound the process is killed and the close,
        # which then sees it gone, is let finish.
        closing = asyncio.ensure_future(client.disconnect())
        self._closing.add(closing)  # if this wait is cancelled, close_everything sees it out
        closing.add_done_callback(self._closing.discard)
        done, _ = await asyncio.wait({closing}, timeout=bound)
        if not done:
            how = "killed after the disconnect bound"
            _kill(pid)
            done, _ = await asyncio.wait({closing}, timeout=AFTER_KILL_S)
            if not done:
                closing.cancel()
        elif closing.exception() is not None:
            how = f"disconnect failed ({closing.exception()!r}); killed"
            _kill(pid)
        if isinstance(client, KeepsRecords):
            with contextlib.suppress(Exception):  # a record is a help, never a failure
                for event in client.last_records():
                    self._sink(event)
        if self._hurried and how == "disconnected":
            how = "killed: the stop was asked for again"
        started = self._started_at.pop(pid, None) if pid is not None else None
        self._sink(
            ev.ProcessEnded(
                at=self._clock(),
                session=self.spec.name,
                pid=pid,
                how=how,
                seconds=time.monotonic() - started if started is not None else 0.0,
            )
        )

    def kill_now(self) -> None:
        """Kill every process of the session that has not been seen to end: a stop asked
        for twice does not wait out the disconnect bound. The closes under way then see
        their process gone and journal its end as usual."""
        self._hurried = True
        for pid in self._started_at:
            _kill(pid)

    async def close_everything(self, bound: float) -> None:
        """Close the current process and wait out any close still under way."""
        await self.close(bound)
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=bound)


async def uncancellable(cleanup: Coroutine[Any, Any, None]) -> None:
    """Run a bounded cleanup to its end even when cancelled, again and again, meanwhile.

    A shield alone lets the caller go on a second cancellation (Ctrl-C, then the event
    loop's own shutdown), which then cancels the cleanup itself and leaves an agent
    process disconnected halfway. The cancellation is passed on once it is done.
    """
    task = asyncio.ensure_future(cleanup)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def _kill(pid: int | None) -> None:
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
