"""The questions waiting for a person: one list, built from the run's events alone."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.questions import (
    ApprovalQuestion,
    PermissionQuestion,
    QuestionKind,
    approval_id,
    permission_id,
    touches_questions,
)
from mala_tui.core.run_view import RunState


def checkpoint(at: float, session: str, number: int) -> ev.CheckpointSaved:
    return ev.CheckpointSaved(
        at=at,
        session=session,
        number=number,
        origin=CheckpointOrigin.TAGGED,
        text=f"## Goal\n{session} {number}",
    )


def asked_approval(at: float, session: str, number: int) -> ev.ApprovalRequested:
    return ev.ApprovalRequested(at=at, session=session, checkpoint_number=number, reason="hard")


def asked_permission(at: float, session: str, rid: str, *, waiting: bool = True) -> ev.Event:
    return ev.PermissionRequested(
        at=at, session=session, request_id=rid, tool="Bash", summary="ls", waiting=waiting
    )


def permission_decided(at: float, session: str, rid: str) -> ev.PermissionDecided:
    return ev.PermissionDecided(
        at=at,
        session=session,
        request_id=rid,
        tool="Bash",
        answer=PermissionAnswer.DENY,
        decided_by=AnsweredBy.TIMEOUT,
    )


def waiting_after(*events: ev.Event) -> list[str]:
    return [question.id for question in RunState().apply_all(events).questions()]


A1, B1 = approval_id("a", 1), approval_id("b", 1)
PA1, PB1 = permission_id("a", "1"), permission_id("b", "1")


@pytest.mark.parametrize(
    ("events", "waiting"),
    [
        ([], []),
        ([checkpoint(1, "a", 1), asked_approval(2, "a", 1)], [A1]),
        (
            [
                asked_approval(2, "a", 1),
                ev.ApprovalDecided(
                    at=3, session="a", decision=Decision.APPROVE, decided_by=AnsweredBy.OPERATOR
                ),
            ],
            [],
        ),
        ([asked_permission(1, "a", "1")], [PA1]),
        ([asked_permission(1, "a", "1", waiting=False)], []),  # a rule answered it at once
        ([asked_permission(1, "a", "1"), permission_decided(2, "a", "1")], []),
        (
            [
                asked_permission(1, "a", "1"),
                asked_approval(2, "a", 1),
                ev.SessionEnded(at=3, session="a", status=EndStatus.STOPPED),
            ],
            [],
        ),
        # Oldest first across sessions and kinds, whatever the session order.
        (
            [
                asked_permission(5, "a", "1"),
                asked_approval(2, "b", 1),
                asked_permission(3, "b", "1"),
                asked_approval(4, "a", 1),
            ],
            [B1, PB1, A1, PA1],
        ),
        # A session's end closes only its own questions.
        (
            [
                asked_approval(1, "a", 1),
                asked_permission(2, "b", "1"),
                ev.SessionEnded(at=3, session="b", status=EndStatus.DONE),
            ],
            [A1],
        ),
        # The same checkpoint asked again (a resumed run asks again) is one question.
        ([asked_approval(1, "a", 1), asked_approval(4, "a", 1)], [A1]),
        # Resumed: whoever waited went with the old process; the new one asks again.
        (
            [
                asked_approval(1, "a", 1),
                ev.RunResumed(at=5, run_id="r", gap_seconds=3, resumed={"a": "checkpoint"}),
            ],
            [],
        ),
    ],
)
def test_the_waiting_list_follows_the_events(events: list[ev.Event], waiting: list[str]) -> None:
    assert waiting_after(*events) == waiting


def test_a_question_carries_what_a_console_shows() -> None:
    state = RunState().apply_all(
        [checkpoint(1, "a", 1), checkpoint(2, "a", 2), asked_approval(3, "a", 2)]
    )
    state.apply(asked_permission(4, "a", "7"))
    approval, permission = state.questions()
    assert approval == ApprovalQuestion(
        id=approval_id("a", 2),
        session="a",
        asked_at=3,
        checkpoint_number=2,
        checkpoint_text="## Goal\na 2",
        reason="hard",
    )
    assert isinstance(permission, PermissionQuestion)
    assert (permission.request_id, permission.tool, permission.summary) == ("7", "Bash", "ls")
    assert (approval.kind, permission.kind) == (QuestionKind.APPROVAL, QuestionKind.PERMISSION)
    snapshot = state.sessions["a"].snapshot()
    assert (snapshot.pending_approval, snapshot.pending_permissions) == (2, 1)


def test_ids_name_the_session_kind_and_number_so_no_two_collide() -> None:
    ids = {approval_id("a/permission", 1), permission_id("a", "1"), approval_id("a", 1)}
    assert len(ids) == 3


def test_only_the_events_that_open_or_close_a_question_touch_the_list() -> None:
    assert touches_questions(asked_approval(1, "a", 1))
    assert touches_questions(ev.SessionEnded(at=1, session="a", status=EndStatus.DONE))
    assert not touches_questions(checkpoint(1, "a", 1))
