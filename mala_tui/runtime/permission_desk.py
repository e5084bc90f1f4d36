"""Where the agents' permission requests wait for an answer: the policy's, or a person's.

Every session's runner gives its agent a permission gate that asks here (`gate_for`).
A request is journaled, then answered at once by the policy or by a tool the operator
allowed for the session earlier; under `ask` it waits, in order, until the operator
answers it (`answer`), its timeout gives the default answer, or its session ends.
With no one to ask (a headless run without a terminal), `ask` is answered as the
timeout would answer it, at once, and the journal says why.

The agent waits meanwhile: its CLI holds the tool until the gate answers. If the agent
stops waiting (its turn interrupted, its process closed) the request is settled as a
deny with that reason, so nothing is left waiting for an answer that goes nowhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from mala_tui.core import events as ev
from mala_tui.core.permissions import (
    AnsweredBy,
    PermissionAnswer,
    PermissionBook,
    PermissionPolicy,
    PermissionRequest,
    Verdict,
    policy_verdict,
)
from mala_tui.runtime.agent_process import EventSink
from mala_tui.runtime.backends.base import PermissionAsk, PermissionGate, PermissionVerdict

if TYPE_CHECKING:
    from mala_tui.config import Settings

PermissionListener = Callable[[list[PermissionRequest]], None]

#: Why a request was denied when the agent stopped waiting for it.
WITHDRAWN = "the agent stopped waiting (its turn was interrupted or its process ended)"


class PermissionDesk:
    """The permission books of a run's sessions, and the requests waiting in them."""

    def __init__(
        self,
        *,
        policy: PermissionPolicy,
        timeout: float,
        timeout_answer: PermissionAnswer,
        record: EventSink,
        clock: Callable[[], float],
    ) -> None:
        self.policy = policy
        self.timeout = timeout
        self.timeout_answer = timeout_answer
        self.operator_present = True
        """False in a headless run without a terminal: `ask` then cannot be asked."""
        self.listeners: list[PermissionListener] = []
        """Told the waiting requests (all sessions, oldest first) whenever they change."""
        self._record = record
        self._clock = clock
        self._books: dict[str, PermissionBook] = {}
        self._futures: dict[tuple[str, str], asyncio.Future[Verdict]] = {}

    @classmethod
    def from_settings(
        cls, settings: Settings, *, record: EventSink, clock: Callable[[], float]
    ) -> PermissionDesk:
        agent = settings.agent
        answer = PermissionAnswer.ALLOW_ONCE
        if agent.permission_timeout_answer == "deny":
            answer = PermissionAnswer.DENY
        return cls(
            policy=PermissionPolicy(agent.permissions),
            timeout=agent.permission_timeout,
            timeout_answer=answer,
            record=record,
            clock=clock,
        )

    def book(self, session: str) -> PermissionBook:
        """The session's book: one per session name, kept across the session's restarts."""
        return self._books.setdefault(session, PermissionBook(session))

    def pending(self) -> list[PermissionRequest]:
        """Every request waiting for the operator, oldest first."""
        waiting = [r for book in self._books.values() for r in book.pending]
        return sorted(waiting, key=lambda r: r.asked_at)

    def gate_for(self, session: str) -> PermissionGate:
        async def gate(ask: PermissionAsk) -> PermissionVerdict:
            return await self.ask(session, ask)

        return gate

    async def ask(self, session: str, ask: PermissionAsk) -> PermissionVerdict:
        """Journal the request and answer it: at once, or once someone (or the timeout) does."""
        book = self.book(session)
        request = book.open(ask.tool, ask.tool_input, self._clock())
        verdict = policy_verdict(self.policy, ask.tool, book.session_tools)
        if verdict is None and not self.operator_present:
            verdict = Verdict(
                self.timeout_answer,
                AnsweredBy.TIMEOUT,
                "no one to ask: a headless run without a terminal gets the timeout's answer",
            )
        self._record(
            ev.PermissionRequested(
                at=request.asked_at,
                session=session,
                request_id=request.request_id,
                tool=request.tool,
                summary=request.summary,
                input_text=request.input_text,
                waiting=verdict is None,
            )
        )
        if verdict is not None:
            self._journal(request, verdict)
            return _for_agent(verdict)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Verdict] = loop.create_future()
        key = (session, request.request_id)
        self._futures[key] = future
        book.wait(request)
        self._notify()
        timer = loop.call_later(self.timeout, self._time_out, session, request.request_id)
        try:
            return _for_agent(await future)
        except asyncio.CancelledError:
            if book.find(request.request_id) is not None:
                self._deny(session, request.request_id, WITHDRAWN)
            raise
        finally:
            timer.cancel()
            self._futures.pop(key, None)

    def answer(
        self, session: str, request_id: str, answer: PermissionAnswer, reason: str = ""
    ) -> None:
        """The operator's answer to a waiting request.

        Raises:
            KeyError: no such request is waiting (answered already, timed out, never asked).
        """
        if session not in self._books:
            raise KeyError(f"no permission request is waiting in {session!r}")
        self._settle(session, request_id, answer, AnsweredBy.OPERATOR, reason)

    def deny_all(self, session: str, reason: str) -> None:
        """Deny every request still waiting in the session (it is ending: nobody will answer)."""
        book = self._books.get(session)
        for request in list(book.pending if book else ()):
            self._deny(session, request.request_id, reason)

    def observe(self, event: ev.Event) -> None:
        """An event listener: a session that ended has no one waiting for its answers."""
        if isinstance(event, ev.SessionEnded):
            self.deny_all(event.session, f"the session ended ({event.status})")

    # -- inside -------------------------------------------------------------------------------

    def _time_out(self, session: str, request_id: str) -> None:
        book = self._books.get(session)
        if book is None or book.find(request_id) is None:
            return
        said = "allowed" if self.timeout_answer.allows else "denied"
        reason = f"no answer within {self.timeout:g} s: {said} (agent.permission_timeout_answer)"
        self._settle(session, request_id, self.timeout_answer, AnsweredBy.TIMEOUT, reason)

    def _deny(self, session: str, request_id: str, reason: str) -> None:
        self._settle(session, request_id, PermissionAnswer.DENY, AnsweredBy.POLICY, reason)

    def _settle(
        self,
        session: str,
        request_id: str,
        answer: PermissionAnswer,
        by: AnsweredBy,
        reason: str,
    ) -> None:
        request = self._books[session].settle(request_id, answer)
        verdict = Verdict(answer, by, reason)
        self._journal(request, verdict)
        future = self._futures.get((session, request_id))
        if future is not None and not future.done():
            future.set_result(verdict)
        self._notify()

    def _journal(self, request: PermissionRequest, verdict: Verdict) -> None:
        self._record(
            ev.PermissionDecided(
                at=self._clock(),
                session=request.session,
                request_id=request.request_id,
                tool=request.tool,
                answer=verdict.answer,
                decided_by=verdict.by,
                reason=verdict.reason,
            )
        )

    def _notify(self) -> None:
        waiting = self.pending()
        for listener in list(self.listeners):
            listener(waiting)


def _for_agent(verdict: Verdict) -> PermissionVerdict:
    """The answer as the agent gets it; a deny says who denied it and why."""
    if verdict.answer.allows:
        return PermissionVerdict(True)
    who = {
        AnsweredBy.OPERATOR: "the operator",
        AnsweredBy.TIMEOUT: "mala-tui (nobody answered)",
    }.get(verdict.by, "mala-tui")
    because = f": {verdict.reason}" if verdict.reason else ""
    return PermissionVerdict(False, f"Permission to use this tool was denied by {who}{because}")
