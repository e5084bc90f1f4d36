"""The app's one answer queue: each question waiting for a person, put to them in turn.

Restart approvals and permission requests are the run's one list of questions
(`RunState.questions`; the bridge publishes it whenever it changes). The queue
announces each new one (the bell and the desktop notification are the app's
`Attention`'s), opens the oldest waiting of a kind in its screen (`a` for approvals,
`P` for permission requests, or the palette), sends the person's answer through the
controller and, once the run has recorded it (the question has left the list),
opens the next one of that kind. An answer the run refuses, because the question
was answered meanwhile (its timeout, the policy, another console), is said so,
with who answered it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from mala_tui.core.observations import Decision
from mala_tui.core.operator_actions import AnswerApproval, AnswerPermission
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion, Question, QuestionKind
from mala_tui.runtime.questions.desk import QuestionClosed
from mala_tui.ui.controller import ReadOnlyError
from mala_tui.ui.screens.approval import ApprovalAnswer, ApprovalScreen
from mala_tui.ui.screens.permission import PermissionReply, PermissionScreen
from mala_tui.ui.services import Services

DECIDED: Final = {
    Decision.APPROVE: "approved",
    Decision.DENY: "denied",
    Decision.EDIT: "approved (edited)",
}
ANSWERED: Final = {
    PermissionAnswer.ALLOW_ONCE: "allowed once",
    PermissionAnswer.ALLOW_SESSION: "allowed for the session",
    PermissionAnswer.DENY: "denied",
}
"""How the notice after an answer names it."""
NOTHING_WAITS: Final = {
    QuestionKind.APPROVAL: "No restart is waiting for approval.",
    QuestionKind.PERMISSION: "No tool use is waiting for permission.",
}


class AnswerQueue:
    """Announces the questions waiting for this app's person and puts them, one at a time."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._announced: set[str] = set()
        self._answered: Question | None = None
        """The question just answered: the next of its kind opens once it has left the list."""

    def start(self, waiting: list[Question]) -> None:
        """The questions already waiting when the app opens: the approvals are announced,
        the permission requests are not (their cards say they wait, and `P` opens them)."""
        for question in waiting:
            if isinstance(question, PermissionQuestion):
                self._announced.add(question.id)
        self.on_questions(waiting)

    def on_questions(self, waiting: list[Question]) -> None:
        """The run's list changed: announce what is new; after an answer, open the next."""
        for question in waiting:
            if question.id not in self._announced:
                self._announced.add(question.id)
                self._announce(question)
        answered = self._answered
        if answered is not None and all(question.id != answered.id for question in waiting):
            self._answered = None
            if any(question.kind is answered.kind for question in waiting):
                self.services.shell.call_later(self.review, answered.kind)

    def review(self, kind: QuestionKind) -> None:
        """Open the oldest question of this kind that waits."""
        shell = self.services.shell
        if isinstance(shell.screen, ApprovalScreen | PermissionScreen):
            return
        waiting = [q for q in self.services.controller.questions() if q.kind is kind]
        if not waiting:
            shell.notify(NOTHING_WAITS[kind])
            return
        self._put(waiting[0], len(waiting))

    def open(self, question_id: str) -> None:
        """Open one question by its id (a web console's link to it), or say it no longer waits."""
        shell = self.services.shell
        if isinstance(shell.screen, ApprovalScreen | PermissionScreen):
            return
        waiting = self.services.controller.questions()
        found = next((q for q in waiting if q.id == question_id), None)
        if found is None:
            shell.notify(
                f"{question_id} no longer waits (answered, or its session ended)",
                severity="warning",
                markup=False,
            )
            return
        self._put(found, sum(1 for q in waiting if q.kind is found.kind))

    # -- inside -----------------------------------------------------------------------------------

    def _put(self, question: Question, waiting: int) -> None:
        shell = self.services.shell
        if isinstance(question, ApprovalQuestion):
            screen = ApprovalScreen(
                self.services, question, previous=self._previous(question), waiting=waiting
            )
            shell.push_screen(screen, self._approved)
        else:
            shell.push_screen(
                PermissionScreen(self.services, question, waiting=waiting), self._permitted
            )

    def _announce(self, question: Question) -> None:
        if isinstance(question, ApprovalQuestion):
            message = (
                f"{question.session} waits for approval of checkpoint "
                f"#{question.checkpoint_number} (press a)"
            )
            title = "Restart approval"
        else:
            message = (
                f"{question.session} asks to use {question.tool}: {question.summary} (press P)"
            )
            title = "Permission request"
        self.services.shell.notify(
            message, title=title, severity="warning", timeout=8, markup=False
        )

    def _previous(self, question: ApprovalQuestion) -> str | None:
        """The session's checkpoint before this one, to show what changed; None for the first."""
        state = self.services.controller.session(question.session)
        records = state.checkpoints if state is not None else []
        number = question.checkpoint_number - 1
        return next((record.text for record in records if record.number == number), None)

    def _approved(self, answer: ApprovalAnswer | None) -> None:
        if answer is None:
            return
        question, controller = answer.request, self.services.controller
        checkpoint = f"checkpoint #{question.checkpoint_number}"
        self._send(
            question,
            lambda: controller.act(
                AnswerApproval(
                    session=question.session,
                    decision=answer.decision,
                    edited_text=answer.text,
                    checkpoint_number=question.checkpoint_number,
                )
            ),
            done=f"{checkpoint} {DECIDED[answer.decision]}",
            refused=f"{checkpoint} was answered already",
        )

    def _permitted(self, reply: PermissionReply | None) -> None:
        if reply is None:
            return
        question, controller = reply.request, self.services.controller
        self._send(
            question,
            lambda: controller.act(
                AnswerPermission(
                    session=question.session,
                    request_id=question.request_id,
                    answer=reply.answer,
                    reason=reply.reason,
                )
            ),
            done=f"{question.tool} {ANSWERED[reply.answer]}",
            refused=f"request #{question.request_id} was answered already",
        )

    def _send(
        self, question: Question, send: Callable[[], None], *, done: str, refused: str
    ) -> None:
        """Send the answer and say how it went: taken, or refused (the run's message names
        who answered first, when it says)."""
        try:
            send()
        except KeyError as exc:
            message = (
                str(exc) if isinstance(exc, QuestionClosed) else f"{question.session}: {refused}"
            )
            self.services.shell.notify(message, severity="warning", markup=False)
        except ReadOnlyError as exc:  # the run is over, or its host gone: nothing to answer
            self.services.shell.notify(str(exc), severity="warning", markup=False)
            return
        else:
            self.services.shell.notify(f"{question.session}: {done}", markup=False)
        self._next_after(question)

    def _next_after(self, question: Question) -> None:
        """Show what the run recorded for the answer now, and go on once it has left the list."""
        self._answered = question
        self.services.bridge.flush()
        self.on_questions(self.services.controller.questions())
