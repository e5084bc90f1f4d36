"""The questions a person's answer is awaited for, as the run's events tell them.

A restart approval (`approval_requested`) and a tool use outside the agent's allowed
set (`permission_requested`, when it waits) are the same thing to a console: a
question asked on a session's behalf, answered once. The run's view (core.view)
keeps the ones still waiting, from the events alone, so every console reads the
same list in the order asked: the app, the headless prompt, and one that has
nothing but the journal. A question closes with its decision
(`approval_decided`, `permission_decided`) or its session's end.

This is the list, not the authority: the runtime's desk holds each question's
future and is the only one that settles it. Ids are made from the question itself
(its session, kind and number), so the desk and every console name it alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from mala_tui.core import events as ev


class QuestionKind(StrEnum):
    APPROVAL = "approval"
    """May the session restart from its checkpoint?"""
    PERMISSION = "permission"
    """May the agent use a tool outside its allowed set?"""


def approval_id(session: str, checkpoint_number: int) -> str:
    """The id of the question whether `session` may restart from this checkpoint."""
    return f"{session}/{QuestionKind.APPROVAL}/{checkpoint_number}"


def permission_id(session: str, request_id: str) -> str:
    """The id of permission request `request_id` of `session` (ids are numbered per session)."""
    return f"{session}/{QuestionKind.PERMISSION}/{request_id}"


@dataclass(frozen=True, slots=True)
class ApprovalQuestion:
    """A checkpoint waiting for a person: approve, deny, or approve an edited text."""

    id: str
    session: str
    asked_at: float
    checkpoint_number: int
    checkpoint_text: str
    reason: str

    @property
    def kind(self) -> QuestionKind:
        return QuestionKind.APPROVAL


@dataclass(frozen=True, slots=True)
class PermissionQuestion:
    """A tool use waiting for a person: allow once, allow for the session, or deny."""

    id: str
    session: str
    asked_at: float
    request_id: str
    tool: str
    summary: str
    """The input in one line (the whole of it is in `input_text`)."""
    input_text: str
    input_cut: bool = False
    """Only the start of the input is in `input_text` (it was too long to keep whole)."""

    @property
    def kind(self) -> QuestionKind:
        return QuestionKind.PERMISSION

    @property
    def allow_offered(self) -> bool:
        """A person must see everything they approve: no allow for an input not all shown."""
        return not self.input_cut


Question = ApprovalQuestion | PermissionQuestion

TOUCHING: Final = (
    ev.ApprovalRequested,
    ev.ApprovalDecided,
    ev.PermissionRequested,
    ev.PermissionDecided,
    ev.SessionEnded,
    ev.RunResumed,
)
"""The events that can open or close a question: what a console watches for."""


def touches_questions(event: ev.Event) -> bool:
    """Whether the list of waiting questions may have changed with this event."""
    return isinstance(event, TOUCHING)


def approval_asked(event: ev.ApprovalRequested, checkpoint_text: str) -> ApprovalQuestion:
    """The question an `approval_requested` opens; the text is the session's last checkpoint."""
    return ApprovalQuestion(
        id=approval_id(event.session, event.checkpoint_number),
        session=event.session,
        asked_at=event.at,
        checkpoint_number=event.checkpoint_number,
        checkpoint_text=checkpoint_text,
        reason=event.reason,
    )


def permission_asked(event: ev.PermissionRequested) -> PermissionQuestion:
    """The question a waiting `permission_requested` opens."""
    return PermissionQuestion(
        id=permission_id(event.session, event.request_id),
        session=event.session,
        asked_at=event.at,
        request_id=event.request_id,
        tool=event.tool,
        summary=event.summary,
        input_text=event.input_text,
        input_cut=event.input_cut,
    )
