"""Restart approval: approve, deny, edit then approve, the queue, and announcing it anywhere."""

from __future__ import annotations

import pytest
from textual.widgets import TextArea

from mala_tui.core import events as ev
from mala_tui.core.observations import Decision
from mala_tui.core.operator_actions import AnswerApproval, OperatorAction
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.questions import approval_id
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_session import T0
from mala_tui.runtime.questions.desk import QuestionClosed, Reply
from mala_tui.ui.screens.approval import ApprovalScreen
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.widgets.approval_badge import ApprovalBadge
from mala_tui.ui.widgets.checkpoint_view import CheckpointView
from tests.support.polling import eventually

from .helpers import (
    burst,
    make_app,
    notifications,
    published,
    screen_text,
    second_approval_events,
    settle,
)


def decisions(supervisor: FakeLiveSource) -> list[tuple[str, ...]]:
    return [call for call in supervisor.calls if call[0] == "decide"]


async def test_approve() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await pilot.press("a")
        approval = app.screen
        assert isinstance(approval, ApprovalScreen)
        assert approval.request.session == "settings-form"
        await pilot.press("a")
        await pilot.pause()
        assert decisions(supervisor) == [("decide", "settings-form", "approve", "")]
        assert isinstance(app.screen, DashboardScreen)
        assert app.controller.pending() == []


async def test_deny() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await pilot.press("a", "d")
        await pilot.pause()
        assert decisions(supervisor) == [("decide", "settings-form", "deny", "")]


async def test_buttons_answer_too() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("a")
        await pilot.click("#deny")
        await pilot.pause()
        assert decisions(supervisor) == [("decide", "settings-form", "deny", "")]


async def test_edit_then_approve_sends_the_edited_text() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await pilot.press("a", "e")
        editor = app.screen.query_one(TextArea)
        assert editor.has_focus
        assert editor.text.startswith("## Goal")
        editor.text = "## Goal\nShip the form.\n"
        editor.move_cursor(editor.document.end)
        await pilot.press(*"- done")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert decisions(supervisor) == [
            ("decide", "settings-form", "edit", "## Goal\nShip the form.\n- done")
        ]


async def test_an_edit_typed_just_before_ctrl_s_is_approved_whole() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await pilot.press("a", "e")
        editor = app.screen.query_one(TextArea)
        editor.text = "## Goal\nShip the form.\n"
        editor.move_cursor(editor.document.end)
        burst(app, "- done", "ctrl+s")
        await settle(pilot)
        assert decisions(supervisor) == [
            ("decide", "settings-form", "edit", "## Goal\nShip the form.\n- done")
        ]


async def test_keys_that_answer_are_off_while_editing() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await pilot.press("a", "e", "d", "a")  # typed into the editor, not answers
        await pilot.pause()
        assert decisions(supervisor) == []
        approval = app.screen
        assert isinstance(approval, ApprovalScreen)
        assert approval.query_one(TextArea).text.startswith("da")
        await pilot.press("escape")
        assert approval.is_active and not approval.editing
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert decisions(supervisor) == []
        assert len(app.controller.pending()) == 1  # "later": still waiting


async def test_an_empty_edit_is_not_approved() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(notifications=True) as pilot:
        await pilot.press("a", "e")
        app.screen.query_one(TextArea).text = "  \n"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert decisions(supervisor) == []
        assert isinstance(app.screen, ApprovalScreen)


async def test_the_queue_shows_each_waiting_approval_in_turn() -> None:
    supervisor = FakeLiveSource(second_approval_events())
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert app.screen.query_one(ApprovalBadge).count == 2
        await pilot.press("a")
        first = app.screen
        assert isinstance(first, ApprovalScreen) and first.request.session == "settings-form"
        assert "1 more waiting" in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        second = app.screen
        assert isinstance(second, ApprovalScreen) and second.request.session == "migrate-db"
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert decisions(supervisor) == [
            ("decide", "settings-form", "approve", ""),
            ("decide", "migrate-db", "deny", ""),
        ]
        assert app.screen.query_one(ApprovalBadge).count == 0
        assert not app.screen.query_one(ApprovalBadge).display


async def test_the_modal_shows_what_changed_since_the_last_checkpoint() -> None:
    app = make_app()
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("a")
        view = app.screen.query_one(CheckpointView)
        assert view.checkpoint[1] is not None  # compared with checkpoint #1
        text = screen_text(app)
        assert "Completed Work  \u00b7 changed" in text
        assert "Do Not Redo  \u00b7 new" in text
        assert "+ - Ported the colour picker" in text


async def test_a_new_approval_is_announced_on_any_screen() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(notifications=True) as pilot:
        await pilot.press("enter")  # the first card's detail screen
        assert isinstance(app.screen, DetailScreen)
        badge = app.screen.query_one(ApprovalBadge)
        assert badge.count == 1
        supervisor.record(
            ev.ApprovalRequested(
                at=T0 + 700, session="migrate-db", checkpoint_number=1, reason="hard threshold"
            )
        )
        await published(
            app,
            lambda: any(
                "migrate-db waits for approval of checkpoint #1" in n for n in notifications(app)
            ),
            "the second approval announced",
        )
        await eventually(lambda: badge.count == 2, what="the second approval on the badge")


async def test_the_modal_closes_when_its_request_stops_waiting() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(notifications=True) as pilot:
        await pilot.press("a")
        assert isinstance(app.screen, ApprovalScreen)
        supervisor.record(
            ev.ApprovalDecided(
                at=T0 + 700,
                session="settings-form",
                decision=Decision.APPROVE,
                decided_by=AnsweredBy.TIMEOUT,
            )
        )
        await published(
            app,
            lambda: any("no longer waits" in n for n in notifications(app)),
            "the notice that it no longer waits",
        )
        await eventually(lambda: isinstance(app.screen, DashboardScreen), what="the modal to close")
        assert decisions(supervisor) == []


async def test_nothing_to_approve_in_a_finished_run() -> None:
    from .helpers import read_only_sample

    app = make_app(read_only_sample())
    async with app.run_test() as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert not app.screen.query_one(ApprovalBadge).display


async def test_an_answer_the_run_refuses_says_who_answered_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    first = Reply(Decision.DENY, AnsweredBy.TIMEOUT, "no answer within 60 s")

    act = supervisor.act

    def answered_meanwhile(action: OperatorAction) -> None:
        if not isinstance(action, AnswerApproval):
            act(action)
            return
        session = action.session
        raise QuestionClosed(approval_id(session, 2), f"checkpoint #2 of {session}", first)

    monkeypatch.setattr(supervisor, "act", answered_meanwhile)
    async with app.run_test(notifications=True) as pilot:
        await pilot.press("a", "a")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert (
            "checkpoint #2 of settings-form was answered already: "
            "denied by its timeout (no answer within 60 s)"
        ) in " ".join(notifications(app))
        assert not any("approved" in n for n in notifications(app))
