"""The run's one desk for questions: each one a future, settled once, by whoever answers first.

A restart approval and a permission request are the same thing to the run: a
question asked on a session's behalf, whose answer someone waits for. Either is
answered by a person (at any console), by a rule (`--approve deny`,
`--permissions allow|deny`, a tool allowed for the session), by its timeout
(`context.approval_timeout_seconds`, `agent.permission_timeout`), or withdrawn when
nobody waits for the answer any more (its session ended, the agent stopped waiting).
The desk holds one future per question and is the only one that settles it: the
first answer wins, and a later one is refused with `QuestionClosed`, which says who
answered first and how. Nothing is applied twice.

Which questions wait is not read from here: each console derives that list from the
run's events (core.questions, in the run's view), as a console that has only the
journal must. The ids are the same on both sides (`approval_id`, `permission_id`).
What each kind journals and does with its answer is its asker's business
(runtime.questions.approvals, runtime.run.permission_requests): the desk calls the asker's
`on_settled` first, then resolves the future.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from mala_tui.core import events as ev
from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer

Choice = Decision | PermissionAnswer
"""An answer as given: an approval's decision or a permission request's answer."""

SAID: Final[dict[Choice, str]] = {
    Decision.APPROVE: "approved",
    Decision.DENY: "denied",
    Decision.EDIT: "approved (edited)",
    PermissionAnswer.ALLOW_ONCE: "allowed once",
    PermissionAnswer.ALLOW_SESSION: "allowed for the session",
    PermissionAnswer.DENY: "denied",
}
"""How an answer is named in a message."""
WHO: Final[dict[AnsweredBy, str]] = {
    AnsweredBy.OPERATOR: "the operator",
    AnsweredBy.POLICY: "the policy",
    AnsweredBy.TIMEOUT: "its timeout",
    AnsweredBy.SESSION_RULE: "a tool allowed for the session",
    AnsweredBy.AUTO: "no one (approval was not required)",
    AnsweredBy.RESUME: "the resume",
}
"""How the one who answered is named in a message (the journal's `decided_by`)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """How a question was settled: the answer, who gave it, and why."""

    answer: Choice
    by: AnsweredBy
    """Who answered, as the journal says it."""
    reason: str = ""
    edited_text: str | None = None
    """The checkpoint to restart from instead, with `Decision.EDIT`."""
    console: str = ""
    """Which console the person answered at, when the run has several
    ("the console on /dev/pts/3 (pid 4242)"); empty for the run's own."""

    @classmethod
    def of(cls, event: ev.ApprovalDecided | ev.PermissionDecided) -> Reply:
        """How a question was settled, as its decision's event says it (no console: the
        journal does not name one)."""
        if isinstance(event, ev.ApprovalDecided):
            return cls(event.decision, event.decided_by)
        return cls(event.answer, event.decided_by, event.reason)

    def describe(self) -> str:
        """E.g. "denied by its timeout (no answer within 60 s)", "approved by the operator
        at the console on /dev/pts/3 (pid 4242)"."""
        because = f" ({self.reason})" if self.reason else ""
        where = f" at {self.console}" if self.console else ""
        said = SAID.get(self.answer, str(self.answer))
        return f"{said} by {WHO[self.by]}{where}{because}"


class QuestionClosed(KeyError):
    """An answer to a question that no longer waits: refused, and nothing was applied.

    `reply` is how it was settled; the message names who answered it and how.
    A `KeyError`, as an answer to a question that never waited is.
    """

    def __init__(self, question: str, label: str, reply: Reply, context: str = "") -> None:
        super().__init__(question)
        self.question = question
        self.reply = reply
        lead = f"{context}: " if context else ""
        self.message = f"{lead}{label} was answered already: {reply.describe()}"

    def __str__(self) -> str:
        return self.message


@dataclass
class _Waiting:
    session: str
    label: str
    future: asyncio.Future[Reply]
    withdrawn: Choice
    """The answer it is given when withdrawn (nobody waits for it any more)."""
    on_settled: Callable[[Reply], None] | None
    timer: asyncio.TimerHandle | None = None


class Desk:
    """Every question of the run waiting for an answer, and how each one that no longer
    waits was settled."""

    def __init__(self) -> None:
        self._waiting: dict[str, _Waiting] = {}
        self._settled: dict[str, tuple[str, Reply]] = {}

    def ask(
        self,
        question: str,
        *,
        session: str,
        label: str,
        withdrawn: Choice,
        rule: Reply | None = None,
        timeout: float | None = None,
        on_timeout: Reply | None = None,
        on_settled: Callable[[Reply], None] | None = None,
    ) -> asyncio.Future[Reply]:
        """Open a question; the future resolves with its answer.

        `rule`: a rule answers it at once (the future is resolved on return). With
        `timeout`, `on_timeout` answers it when no one else has by then. `on_settled`
        is called with the answer, whoever gives it, before the future resolves.
        `label` names it in messages ("checkpoint #2 of api-docs").

        Raises:
            RuntimeError: the question waits already (a session asks one thing at a time).
        """
        if question in self._waiting:
            raise RuntimeError(f"{label} was asked while it waits already")
        loop = asyncio.get_running_loop()
        waiting = _Waiting(session, label, loop.create_future(), withdrawn, on_settled)
        self._waiting[question] = waiting
        self._settled.pop(question, None)  # asked again: the earlier answer is history
        if rule is not None:
            self._settle(question, rule)
        elif timeout is not None and on_timeout is not None:
            waiting.timer = loop.call_later(timeout, self._time_out, question, on_timeout)
        return waiting.future

    def answer(self, question: str, reply: Reply, *, context: str = "") -> None:
        """A person's answer.

        Raises:
            QuestionClosed: it was answered already (by a rule, its timeout, another
                console) or withdrawn; the message says how, after `context`.
            KeyError: it was never asked (`context`, or a message of the desk's own).
        """
        if question in self._waiting:
            self._settle(question, reply)
            return
        raise self.refusal(question, context)

    def refusal(self, question: str, context: str = "") -> KeyError:
        """What answering `question` now raises: `QuestionClosed` if it was settled, else
        a `KeyError` (it was never asked)."""
        settled = self._settled.get(question)
        if settled is None:
            return KeyError(context or f"no question {question!r} was asked")
        label, reply = settled
        return QuestionClosed(question, label, reply, context)

    def withdraw(self, question: str, reason: str) -> None:
        """Nobody waits for this answer any more: settle it with its `withdrawn` answer,
        by the policy, if it still waits."""
        waiting = self._waiting.get(question)
        if waiting is not None:
            self._settle(question, Reply(waiting.withdrawn, AnsweredBy.POLICY, reason))

    def withdraw_session(self, session: str, reason: str) -> None:
        """Withdraw every question of the session that still waits."""
        for question in [q for q, waiting in self._waiting.items() if waiting.session == session]:
            self.withdraw(question, reason)

    def observe(self, event: ev.Event) -> None:
        """An event listener: a session that ended has no one waiting for its answers."""
        if isinstance(event, ev.SessionEnded):
            self.withdraw_session(event.session, f"the session ended ({event.status})")

    def waits(self, question: str) -> bool:
        return question in self._waiting

    # -- inside -------------------------------------------------------------------------------

    def _time_out(self, question: str, reply: Reply) -> None:
        if question in self._waiting:
            self._settle(question, reply)

    def _settle(self, question: str, reply: Reply) -> None:
        waiting = self._waiting.pop(question)
        if waiting.timer is not None:
            waiting.timer.cancel()
        self._settled[question] = (waiting.label, reply)
        if waiting.on_settled is not None:
            waiting.on_settled(reply)
        if not waiting.future.done():  # cancelled when its asker stopped waiting
            waiting.future.set_result(reply)
