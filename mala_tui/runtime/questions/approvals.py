"""Restart approvals: may this session restart from its checkpoint? Asked at the run's desk.

A session's runner asks when its manager requests approval (`RequestApproval`); the
answer, whoever gives it, goes back to the runner (`on_answer`), which hands it to the
manager as `ApprovalGiven` through its inbox. Under `--approve deny` the policy
answers at once; a person answers through the supervisor (`decide`) from any
console; with `context.approval_timeout_seconds` set, the timeout gives
`context.approval_timeout_decision` when no one has. A session that ends withdraws its
question (runtime.questions.desk). Under `auto` nothing is asked unless the operator switches
approval on for a session: the manager restarts without asking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.questions import approval_id
from mala_tui.runtime.questions.desk import Desk, Reply

if TYPE_CHECKING:
    from mala_tui.config import Settings


class ApprovalMode(StrEnum):
    """How restarts are approved (`--approve`): a person is asked, none is asked, or every
    one is denied."""

    ASK = "ask"
    AUTO = "auto"
    DENY = "deny"


def effective_mode(given: ApprovalMode | None, settings: Settings) -> ApprovalMode:
    """The mode `--approve` gave, or else the one `context.require_approval` implies."""
    if given is not None:
        return given
    return ApprovalMode.ASK if settings.context.require_approval else ApprovalMode.AUTO


class ApprovalAsker(Protocol):
    """How a session's runner asks for restart approvals: the run's `Approvals`, or on a
    cluster's host a relay to the driver (runtime.cluster.relayed_questions). Answers come
    to the run's `Approvals` (an `AnswerApproval` action), never through the runner."""

    def ask(
        self, session: str, checkpoint_number: int, on_answer: Callable[[Reply], None]
    ) -> asyncio.Future[Reply]: ...


class Approvals:
    """The run's restart approvals, asked at its desk."""

    def __init__(
        self,
        desk: Desk,
        *,
        mode: ApprovalMode = ApprovalMode.ASK,
        timeout: float | None = None,
        timeout_decision: Decision = Decision.DENY,
    ) -> None:
        self.mode: ApprovalMode = mode
        self.timeout = timeout
        self.timeout_decision = timeout_decision
        self._desk = desk
        self._asked: dict[str, str] = {}
        """Each session's latest approval question."""

    @classmethod
    def from_settings(cls, settings: Settings, desk: Desk, mode: ApprovalMode) -> Approvals:
        context = settings.context
        return cls(
            desk,
            mode=mode,
            timeout=context.approval_timeout_seconds,
            timeout_decision=context.approval_timeout_decision,
        )

    def ask(
        self, session: str, checkpoint_number: int, on_answer: Callable[[Reply], None]
    ) -> asyncio.Future[Reply]:
        """Ask whether `session` may restart from this checkpoint; `on_answer` gets the answer
        (a policy's at once, before this returns)."""
        question = self._asked[session] = approval_id(session, checkpoint_number)
        rule = (
            Reply(Decision.DENY, AnsweredBy.POLICY, "--approve deny")
            if self.mode is ApprovalMode.DENY
            else None
        )
        on_timeout = None
        if self.timeout is not None:
            on_timeout = Reply(
                self.timeout_decision, AnsweredBy.TIMEOUT, f"no answer within {self.timeout:g} s"
            )
        return self._desk.ask(
            question,
            session=session,
            label=f"checkpoint #{checkpoint_number} of {session}",
            withdrawn=Decision.DENY,
            rule=rule,
            timeout=self.timeout,
            on_timeout=on_timeout,
            on_settled=on_answer,
        )

    def decide(
        self,
        session: str,
        decision: Decision,
        edited_text: str | None = None,
        by: AnsweredBy = AnsweredBy.OPERATOR,
        checkpoint_number: int | None = None,
        *,
        console: str = "",
    ) -> None:
        """A person's answer: approve, deny, or edit (approve `edited_text` instead).

        `checkpoint_number` names the checkpoint answered; without it, the session's
        latest question is. `console`: where the person answered, when not at the run's
        own console (a later answer's refusal names it).

        Raises:
            QuestionClosed: it no longer waits (answered by the policy, its timeout,
                another console; or its session ended): the message says how.
            KeyError: no approval was asked of the session.
        """
        context = f"no approval is pending for {session!r}"
        if checkpoint_number is None:
            question = self._asked.get(session)
        else:
            question = approval_id(session, checkpoint_number)
        if question is None:
            raise KeyError(context)
        reply = Reply(decision, by, edited_text=edited_text, console=console)
        self._desk.answer(question, reply, context=context)
