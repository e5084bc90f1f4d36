"""What of a session's inbox reaches its manager, and how long the runner waits for it.

The runner waits on the inbox with the idle timeout while a turn is in flight (or while
subagents work after it); an earlier process's leftovers and an answer to an approval no
longer awaited never reach the manager; the rest goes to the feed
(runtime.session.manager_feed).
"""

from __future__ import annotations

import asyncio
import time

from mala_tui.core import events as ev
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import ApprovalGiven, IdleTimedOut
from mala_tui.core.phases import IllegalTransition
from mala_tui.runtime.session.agent_process import AgentProcess
from mala_tui.runtime.session.inbox import Acknowledged, Answer, FromAgent, Inbox, InboxItem
from mala_tui.runtime.session.manager_feed import Clock, ManagerFeed
from mala_tui.runtime.session.person_waits import PersonWaits

REPORT_GRACE_S = 15.0
"""How long a session whose background work has all reported waits for the CLI's turn
that takes the last reports in (seen to start within milliseconds)."""


class InboxReader:
    """Reads a session's inbox for its runner."""

    def __init__(
        self,
        *,
        inbox: Inbox,
        feed: ManagerFeed,
        process: AgentProcess,
        manager: ContextManager,
        idle_timeout: float,
        clock: Clock,
        asks: PersonWaits,
    ) -> None:
        self._inbox = inbox
        self._feed = feed
        self._process = process
        self._manager = manager
        self._idle_timeout = idle_timeout
        self._clock = clock
        self._asks = asks

    async def next_outcome(self) -> Outcome:
        """Wait for the next thing that makes the manager decide something."""
        while True:
            # A permission request waiting for a person is a sign of life, not a stall.
            silent = (
                self._manager.streaming or self._waiting_on_agents()
            ) and not self._asks.permissions_waiting
            timeout = self._idle_timeout if silent else None
            work = self._manager.background
            if timeout is not None and work.waiting and not work.tasks:
                # Only the CLI's next turn for reports it holds is awaited: it comes at
                # once, or not at all (its last result already took them in).
                timeout = min(timeout, REPORT_GRACE_S)
            try:
                async with asyncio.timeout(timeout):
                    item = await self._inbox.get()
            except TimeoutError:
                return self._feed.observe(
                    IdleTimedOut(self._clock(), time.monotonic() - self._feed.last_heard)
                )
            outcome = self.take(item)
            if outcome is not None and (outcome.actions or self._feed.status is not None):
                return outcome

    def _waiting_on_agents(self) -> bool:
        """The turn is over and the session waits on subagents, whose messages are signs
        of life (or on reports the CLI has yet to hand in): a long silence is a hang.
        A background shell alone says nothing while it runs, so it is waited for."""
        work = self._manager.background
        return work.waiting and (work.subagents > 0 or not work.tasks)

    def take(self, item: InboxItem) -> Outcome | None:
        """What reaches the manager of an inbox item (through the feed); None when nothing
        does, or the manager refused it."""
        if isinstance(item, Answer):
            if not self._asks.take_answer(item.checkpoint_number):
                return None  # an answer to an approval no longer awaited
            given = ApprovalGiven(self._clock(), item.decision, item.edited_text, item.decided_by)
            return self._feed.observe_quietly(given)
        if isinstance(item, Acknowledged):
            return self._acknowledge(item)
        if isinstance(item, FromAgent) and item.generation != self._process.generation:
            return None  # an earlier process's leftovers
        return self._feed.handle(item)

    def _acknowledge(self, asked: Acknowledged) -> Outcome | None:
        """The manager's outcome of a command whose asker waits for the answer: told ""
        when taken, or the refusal (also journaled, as any refused operator input is)."""
        refusal = ""
        try:
            outcome: Outcome | None = self._feed.observe(asked.command)
        except IllegalTransition as exc:
            refusal = str(exc)
            self._feed.error(ev.Where.OPERATOR, refusal)
            outcome = None
        if not asked.answer.done():
            asked.answer.set_result(refusal)
        return outcome
