"""The run's slots: at most `agent.max_concurrent` sessions at once, the rest queued.

A queued session waits in the order given and is journaled with a warning saying so; one
the run stops before it starts ends unstarted, saying why. The supervisor owns one `Slots`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Protocol

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.text import plural
from mala_tui.runtime.run.run_types import RunResult

#: Why a session ended unstarted, after the cause: the run stopped while it waited for a
#: slot, or before the run had started any.
QUEUED_NEVER_STARTED = "it was queued, never started"
BEFORE_START = "before it started"


class Runs(Protocol):
    """A session's runner, as a slot runs it."""

    async def run(self) -> EndStatus: ...


class Ends(Protocol):
    """A session's runner, as the run's result reads it."""

    @property
    def status(self) -> EndStatus | None: ...

    @property
    def end_reason(self) -> str: ...

    @property
    def pids(self) -> list[int]: ...


class Slots:
    """Which sessions run, which wait for a slot, and which never started."""

    def __init__(
        self, *, record: Callable[[ev.Event], ev.Event], clock: Callable[[], float]
    ) -> None:
        self.record = record
        self.clock = clock
        self.queued: list[str] = []
        """Sessions waiting for a slot, in the order they will start."""
        self.never_started: dict[str, tuple[EndStatus, str]] = {}
        self._tasks: dict[str, asyncio.Task[EndStatus]] = {}
        self._group: asyncio.TaskGroup | None = None
        self._slots: asyncio.Semaphore | None = None
        self.max_concurrent = 1

    def queue(self, runners: Mapping[str, Runs], stop_cause: str) -> asyncio.Semaphore:
        """The run's sessions past the first `max_concurrent` wait; with the run stopped
        during start-up (`stop_cause`), none starts and each ends resumable."""
        slots = self._slots = asyncio.Semaphore(self.max_concurrent)
        if stop_cause:
            self.queued = list(runners)
            for name in list(self.queued):
                self.end_unstarted(name, EndStatus.STOPPED, stop_cause, BEFORE_START)
        self.queued = list(runners)[self.max_concurrent :]
        for position, name in enumerate(self.queued, start=1):
            self.record(
                ev.WarningRecorded(
                    at=self.clock(),
                    session=name,
                    where=ev.Where.QUEUE,
                    message=f"queued ({position} of {len(self.queued)}): at most "
                    f"{plural(self.max_concurrent, 'session')} at a time (agent.max_concurrent)",
                )
            )
        return slots

    async def run_all(self, runners: Mapping[str, Runs], slots: asyncio.Semaphore) -> None:
        """Every session to its end, each in its slot; sessions may join meanwhile (`join`)."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            for name, runner in runners.items():
                self._tasks[name] = group.create_task(
                    self._run_in_slot(name, runner, slots), name=f"session {name}"
                )

    def close(self) -> None:
        """The run is over: nothing can join it now."""
        self._group = None

    async def _run_in_slot(self, name: str, runner: Runs, slots: asyncio.Semaphore) -> EndStatus:
        async with slots:
            if name in self.never_started:
                return self.never_started[name][0]
            if name in self.queued:
                self.queued.remove(name)  # its session_started says it left the queue
            return await runner.run()

    def check_running(self, stop_cause: str) -> tuple[asyncio.TaskGroup, asyncio.Semaphore]:
        group, slots = self._group, self._slots
        if group is None or slots is None or stop_cause:
            raise ValueError("the run is not running: a session cannot join it now")
        return group, slots

    def join(self, name: str, runner: Runs, stop_cause: str) -> None:
        """A session added while the run runs starts when a slot is free."""
        group, slots = self.check_running(stop_cause)
        if slots.locked():
            self.queued.append(name)
            self.record(
                ev.WarningRecorded(
                    at=self.clock(),
                    session=name,
                    where=ev.Where.QUEUE,
                    message=f"queued ({len(self.queued)} waiting): at most "
                    f"{plural(self.max_concurrent, 'session')} at a time (agent.max_concurrent)",
                )
            )
        self._tasks[name] = group.create_task(
            self._run_in_slot(name, runner, slots), name=f"session {name}"
        )

    def result(self, runners: Mapping[str, Ends], stop_cause: str) -> RunResult:
        """How each session ended, as journaled: a session stopped with the run gives the
        run's cause, one stopped on its own (`x`) says so, whatever stopped the run later."""
        statuses: dict[str, EndStatus] = {}
        reasons: dict[str, str] = {}
        for name, runner in runners.items():
            if name in self.never_started:
                statuses[name], reasons[name] = self.never_started[name]
                continue
            statuses[name] = runner.status or EndStatus.FAILED
            reasons[name] = runner.end_reason
        pids = [pid for runner in runners.values() for pid in runner.pids]
        return RunResult(statuses=statuses, reasons=reasons, pids=pids, stop_cause=stop_cause)

    def end_queued(self, status: EndStatus, reason: str) -> None:
        """End every session still waiting for a slot: it never started, and never will."""
        for name in list(self.queued):
            self.end_unstarted(name, status, reason)

    def end_unstarted(
        self, name: str, status: EndStatus, reason: str, why: str = QUEUED_NEVER_STARTED
    ) -> None:
        self.queued.remove(name)
        said = f"{reason} ({why})"  # a resume tells a stop with the run by the cause first
        self.never_started[name] = (status, said)
        self.record(ev.SessionEnded(at=self.clock(), session=name, status=status, reason=said))
