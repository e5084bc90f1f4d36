"""The agents' permission requests: journaled, then answered at the run's desk.

Every session's runner gives its agent a permission gate that asks here (`gate_for`).
A request is journaled, then put to the desk (runtime.questions.desk) as a question: answered at
once by the policy or by a tool the operator allowed for the session earlier; under
`ask` it waits until the operator answers it (`answer`, from any console), its
timeout gives the default answer, or its session ends. With no one to ask (a
headless run without a terminal), `ask` is answered as the timeout would answer it,
at once, and the journal says why. Whoever answers, the answer is journaled before
the agent gets it.

The agent waits meanwhile: its CLI holds the tool until the gate answers. If the agent
stops waiting (its turn interrupted, its process closed) the request is withdrawn: a
deny with that reason, so nothing is left waiting for an answer that goes nowhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
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
from mala_tui.core.questions import permission_id
from mala_tui.core.resume_plan import permission_history
from mala_tui.runtime.backends.base import PermissionAsk, PermissionGate, PermissionVerdict
from mala_tui.runtime.questions.desk import Desk, Reply
from mala_tui.runtime.session.agent_process import EventSink

if TYPE_CHECKING:
    from mala_tui.config import Settings

#: Why a request was denied when the agent stopped waiting for it.
WITHDRAWN = "the agent stopped waiting (its turn was interrupted or its process ended)"


class PermissionRequests:
    """The permission books of a run's sessions; their waiting requests are the desk's."""

    def __init__(
        self,
        *,
        desk: Desk,
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
        self._desk = desk
        self._record = record
        self._clock = clock
        self._books: dict[str, PermissionBook] = {}

    @classmethod
    def from_settings(
        cls, settings: Settings, *, desk: Desk, record: EventSink, clock: Callable[[], float]
    ) -> PermissionRequests:
        agent = settings.agent
        answer = PermissionAnswer.ALLOW_ONCE
        if agent.permission_timeout_answer is PermissionPolicy.DENY:
            answer = PermissionAnswer.DENY
        return cls(
            desk=desk,
            policy=agent.permissions,
            timeout=agent.permission_timeout,
            timeout_answer=answer,
            record=record,
            clock=clock,
        )

    def remember(self, past: Sequence[ev.Event]) -> None:
        """A resumed run's books as its journal left them: how many requests each session
        asked, and the tools allowed for the rest of it."""
        for session in dict.fromkeys(e.session for e in past if e.session):
            book = self.book(session)
            book.asked, book.session_tools = permission_history(past, session)

    def book(self, session: str) -> PermissionBook:
        """The session's book: one per session name, kept across the session's restarts."""
        return self._books.setdefault(session, PermissionBook(session))

    def gate_for(self, session: str) -> PermissionGate:
        async def gate(ask: PermissionAsk) -> PermissionVerdict:
            return await self.ask(session, ask)

        return gate

    async def ask(self, session: str, ask: PermissionAsk) -> PermissionVerdict:
        """Journal the request and answer it: at once, or once someone (or the timeout) does."""
        book = self.book(session)
        request = book.open(ask.tool, ask.tool_input, self._clock())
        rule = policy_verdict(self.policy, ask.tool, book.session_tools)
        if rule is None and not self.operator_present:
            rule = Verdict(
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
                input_cut=request.input_cut,
                waiting=rule is None,
            )
        )
        if rule is None:
            book.wait(request)
        said = "allowed" if self.timeout_answer.allows else "denied"
        question = permission_id(session, request.request_id)
        answered = self._desk.ask(
            question,
            session=session,
            label=f"request #{request.request_id} of {session} ({request.tool})",
            withdrawn=PermissionAnswer.DENY,
            rule=None if rule is None else Reply(rule.answer, rule.by, rule.reason),
            timeout=self.timeout,
            on_timeout=Reply(
                self.timeout_answer,
                AnsweredBy.TIMEOUT,
                f"no answer within {self.timeout:g} s: {said} (agent.permission_timeout_answer)",
            ),
            on_settled=lambda reply: self._settled(request, reply, waited=rule is None),
        )
        try:
            reply = await answered
        except asyncio.CancelledError:
            self._desk.withdraw(question, WITHDRAWN)
            raise
        return _for_agent(reply)

    def answer(
        self,
        session: str,
        request_id: str,
        answer: PermissionAnswer,
        reason: str = "",
        *,
        console: str = "",
    ) -> None:
        """The operator's answer to a waiting request (`console`: where it was given, when
        not at the run's own console).

        Raises:
            QuestionClosed: answered already (its timeout, another console) or withdrawn
                (its session ended): the message says how.
            KeyError: no such request was ever asked.
        """
        if session not in self._books:
            raise KeyError(f"no permission request is waiting in {session!r}")
        self._desk.answer(
            permission_id(session, request_id),
            Reply(answer, AnsweredBy.OPERATOR, reason, console=console),
            context=f"no permission request {request_id!r} is waiting in {session!r}",
        )

    # -- inside -------------------------------------------------------------------------------

    def _settled(self, request: PermissionRequest, reply: Reply, *, waited: bool) -> None:
        """Whoever answered: out of the book's queue ("for the session" remembers the tool),
        and journaled, before the agent hears it."""
        answer = PermissionAnswer(reply.answer)
        if waited:
            self._books[request.session].settle(request.request_id, answer)
        self._record(
            ev.PermissionDecided(
                at=self._clock(),
                session=request.session,
                request_id=request.request_id,
                tool=request.tool,
                answer=answer,
                decided_by=reply.by,
                reason=reply.reason,
            )
        )


def _for_agent(reply: Reply) -> PermissionVerdict:
    """The answer as the agent gets it; a deny says who denied it and why."""
    if PermissionAnswer(reply.answer).allows:
        return PermissionVerdict(True)
    who = {
        AnsweredBy.OPERATOR: "the operator",
        AnsweredBy.TIMEOUT: "mala-tui (nobody answered)",
    }.get(reply.by, "mala-tui")
    because = f": {reply.reason}" if reply.reason else ""
    return PermissionVerdict(False, f"Permission to use this tool was denied by {who}{because}")
