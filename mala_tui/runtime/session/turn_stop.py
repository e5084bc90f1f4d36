"""Stopping the turn in flight: at its next clean point, or by an interrupt.

Either way the manager is fed the agent's items until the turn has ended, so it decides
on what really happened; operator input that arrives meanwhile waits its turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import TurnEnded, UsageObserved
from mala_tui.runtime.backends.base import carries_tool_result
from mala_tui.runtime.session.agent_process import AgentProcess
from mala_tui.runtime.session.inbox import FromAgent, Inbox, InboxItem, OperatorInput, interrupted
from mala_tui.runtime.session.manager_feed import Clock, ManagerFeed
from mala_tui.runtime.session.runner_limits import RunnerLimits


class TurnStopper:
    """Stops a session's turn for its runner (`interrupt_and_drain`)."""

    def __init__(
        self,
        *,
        process: AgentProcess,
        feed: ManagerFeed,
        inbox: Inbox,
        manager: ContextManager,
        limits: RunnerLimits,
        clock: Clock,
        take: Callable[[InboxItem], Outcome | None],
    ) -> None:
        """`take`: what of an inbox item reaches the manager (the runner's own rule)."""
        self._process = process
        self._feed = feed
        self._inbox = inbox
        self._manager = manager
        self._limits = limits
        self._clock = clock
        self._take = take

    async def interrupt_and_drain(self, *, at_clean_point: bool = False) -> Outcome:
        """Interrupt the turn and feed the manager until it has ended; returns what that decided.

        With `at_clean_point`, first let the API call in flight finish and its tool calls
        get their results: an interrupt lands on the next call, so the step the agent
        was taking is kept, not rejected (a rejected Write is work thrown away).
        """
        client = self._process.current()
        if client is None or not self._manager.streaming:
            return (
                self._feed.observe(interrupted(self._clock()))
                if self._manager.streaming
                else Outcome()
            )
        held: list[OperatorInput] = []
        try:
            if at_clean_point:
                deadline = time.monotonic() + self._limits.clean_point_timeout
                if client.stop_after_tools():
                    # The client ends the turn itself after the running tools: no model
                    # request is thrown away, as an interrupt would throw the next one.
                    stopped = await self._feed_until(
                        self._turn_over, deadline, held, stop_promised=True
                    )
                    if stopped is not None:
                        return stopped
                    if self._turn_over():
                        return Outcome()
                else:
                    settled = await self._feed_until(self._feed.at_clean_point, deadline, held)
                    if settled is not None:
                        return settled
            client = self._process.current()  # the wait above may have closed it
            if client is None:
                return self._feed.observe(interrupted(self._clock()))
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.interrupt(), self._limits.disconnect_timeout)
            deadline = time.monotonic() + self._limits.drain_timeout
            drained = await self._feed_until(self._turn_over, deadline, held)
            if drained is not None:
                return drained
            if self._turn_over():
                return Outcome()
            # The interrupted turn did not end in time: the process goes, the turn with it.
            await self._process.close(self._limits.disconnect_timeout)
            return self._feed.observe(interrupted(self._clock()))
        finally:
            for item in held:  # operator input during the drain waits its turn
                self._inbox.put_nowait(item)

    def _turn_over(self) -> bool:
        return not self._manager.streaming

    async def _feed_until(
        self,
        settled: Callable[[], bool],
        deadline: float,
        held: list[OperatorInput],
        *,
        stop_promised: bool = False,
    ) -> Outcome | None:
        """Feed the manager the agent's items until `settled()` holds or the turn ends.

        Returns what the manager decided when the turn ended, when it decided something
        on the way, or when the process went away (closed, and the turn counted as
        interrupted). None when `settled()` came to hold first or the deadline passed;
        with `stop_promised` (the client promised to end the turn after its tools) also
        as soon as a new model request starts after a tool result, since then it did
        not, and the caller interrupts rather than let the agent run on. Operator input
        meanwhile is kept in `held` for the caller to put back.
        """
        result_seen = False
        while not settled():
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    item = await self._inbox.get()
            except TimeoutError:
                return None
            if not isinstance(item, FromAgent):
                held.append(item)
                continue
            current = item.generation == self._process.generation
            if current and item.item is None:
                await self._process.close(self._limits.disconnect_timeout)
                return self._feed.observe(interrupted(self._clock()))
            outcome = self._take(item)
            if current and isinstance(item.item, TurnEnded):
                return outcome or Outcome()  # the turn is over
            if outcome is not None and outcome.actions:
                return outcome
            if stop_promised and current:
                if carries_tool_result(item.item):
                    result_seen = True
                elif result_seen and isinstance(item.item, UsageObserved) and item.item.starts_call:
                    return None
        return None
