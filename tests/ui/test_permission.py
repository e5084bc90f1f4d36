"""Permission requests in the app: allow once, allow for the session, deny with a reason,
the queue, the input shown literally, and the screen closing when the request goes away."""

from __future__ import annotations

from textual.widgets import Input

from mala_tui.config import Settings, UiSettings
from mala_tui.core import events as ev
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_session import T0
from mala_tui.ui.app import MalaApp
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.permission import ASK_REASON, PermissionScreen
from mala_tui.ui.widgets.approval_badge import ApprovalBadge
from tests.support.polling import eventually

from .helpers import (
    SIZE,
    make_app,
    notifications,
    open_session,
    permission_events,
    published,
    screen_text,
)


def answers(source: FakeLiveSource) -> list[tuple[object, ...]]:
    return [call[1:] for call in source.calls if call[0] == "permission"]


async def test_allow_once_answers_the_request_and_closes() -> None:
    source = FakeLiveSource(permission_events("Bash"))
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        asking = app.screen
        assert isinstance(asking, PermissionScreen)
        await pilot.press("o")
        await pilot.pause()
        assert answers(source) == [("parser-fix", "1", PermissionAnswer.ALLOW_ONCE, "")]
        assert isinstance(app.screen, DashboardScreen)
        assert app.controller.pending_permissions() == []


async def test_allow_for_the_session_by_its_button() -> None:
    source = FakeLiveSource(permission_events("Bash"))
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        await pilot.click("#allow-session")
        await pilot.pause()
        assert answers(source) == [("parser-fix", "1", PermissionAnswer.ALLOW_SESSION, "")]


async def test_deny_sends_the_reason_typed_and_letters_typed_do_not_answer() -> None:
    source = FakeLiveSource(permission_events("Bash"))
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        app.screen.query_one("#reason", Input).focus()
        await pilot.press(*"do not delete build/")
        assert answers(source) == []  # "d" and "o" went into the reason
        await pilot.press("enter")
        await pilot.pause()
        assert answers(source) == [
            ("parser-fix", "1", PermissionAnswer.DENY, "do not delete build/")
        ]
        assert "parser-fix: Bash denied" in " ".join(notifications(app))


async def test_d_asks_for_the_reason_before_it_denies() -> None:
    source = FakeLiveSource(permission_events("Bash"))
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        await pilot.press("d")
        await pilot.pause()
        assert answers(source) == []  # not yet: the reason is asked for
        asking = app.screen
        assert isinstance(asking, PermissionScreen)
        reason = asking.query_one("#reason", Input)
        assert asking.focused is reason and reason.placeholder == ASK_REASON
        await pilot.press(*"too risky", "enter")
        await pilot.pause()
        assert answers(source) == [("parser-fix", "1", PermissionAnswer.DENY, "too risky")]


async def test_the_input_is_shown_literally_with_the_queue() -> None:
    source = FakeLiveSource(permission_events("Bash", "WebFetch"))
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        text = screen_text(app)
        assert "parser-fix asks to use Bash" in text
        assert "request #1 \u00b7 asked at +11:41 \u00b7 1 more waiting" in text
        assert "make [bold]release[/bold]\u241b[2J" in text  # markup and escape kept as text
        await pilot.press("d", "enter")  # deny, and no reason
        await pilot.pause()
        await pilot.pause()
        # Answering one opens the next.
        assert isinstance(app.screen, PermissionScreen)
        assert app.screen.request.tool == "WebFetch"


async def test_a_request_answered_elsewhere_closes_its_screen() -> None:
    source = FakeLiveSource(permission_events("Bash"))
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        assert isinstance(app.screen, PermissionScreen)
        source.record(
            ev.PermissionDecided(
                at=T0 + 1000,
                session="parser-fix",
                request_id="1",
                tool="Bash",
                answer=PermissionAnswer.DENY,
                decided_by=AnsweredBy.TIMEOUT,
            )
        )
        await published(
            app,
            lambda: "parser-fix: request #1 no longer waits" in " ".join(notifications(app)),
            "the notice that it no longer waits",
        )
        await eventually(
            lambda: isinstance(app.screen, DashboardScreen), what="the request's screen to close"
        )
        assert answers(source) == []


async def test_a_new_request_is_announced_and_the_card_says_it_waits() -> None:
    source = FakeLiveSource()
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        assert "waiting for permission" not in screen_text(app)
        source.record(permission_events("Bash")[-1])
        await published(
            app,
            lambda: any("parser-fix asks to use Bash" in n for n in notifications(app)),
            "the request's notice",
        )
        app.clear_notifications()
        await pilot.pause()
        assert "waiting for permission" in screen_text(app)


async def test_nothing_waiting_says_so_and_a_finished_run_offers_nothing() -> None:
    app = make_app(FakeLiveSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        assert not isinstance(app.screen, PermissionScreen)
        assert "No tool use is waiting for permission." in " ".join(notifications(app))


async def test_p_opens_the_request_from_a_sessions_detail_too() -> None:
    source = FakeLiveSource(permission_events("Bash"))
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await open_session(pilot, "parser-fix")
        await pilot.pause()
        assert "waiting for permission (1, P)" in screen_text(app)
        await pilot.press("P")
        assert isinstance(app.screen, PermissionScreen)


async def test_an_input_too_long_to_show_whole_offers_no_allow() -> None:
    events = permission_events("Write")
    cut = events[-1]
    assert isinstance(cut, ev.PermissionRequested)
    events[-1] = cut.model_copy(update={"input_cut": True})
    source = FakeLiveSource(events)
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        assert isinstance(app.screen, PermissionScreen)
        assert not app.screen.query("#allow-once") and not app.screen.query("#allow-session")
        assert "allow is not offered" in screen_text(app)
        await pilot.press("o", "s")
        await pilot.pause()
        assert answers(source) == []
        await pilot.press("d", "enter")
        await pilot.pause()
        assert answers(source) == [("parser-fix", "1", PermissionAnswer.DENY, "")]


async def test_a_permission_request_shows_the_badge_approvals_have() -> None:
    source = FakeLiveSource(permission_events("Bash", "WebFetch"))
    app = make_app(source)
    async with app.run_test(size=SIZE) as pilot:
        badge = app.screen.query_one(ApprovalBadge)
        await eventually(lambda: badge.permissions == 2, what="the requests on the badge")
        assert badge.display
        # Beside the sample's restart approval, as the answer queue asks them.
        shown = str(badge.render())
        assert "\u2691 1 approval waiting \u00b7 a  \u2691 2 permissions waiting \u00b7 P" in shown
        await pilot.press("a")  # the approval answered: the requests alone keep it shown
        await pilot.press("a")
        await eventually(lambda: badge.count == 0, what="the approval answered")
        assert badge.display and str(badge.render()) == "\u2691 2 permissions waiting \u00b7 P"


async def test_an_app_opened_at_a_question_opens_its_dialog_or_says_it_no_longer_waits() -> None:
    """A web console's link to a question opens the app at that question's dialog (the
    second of two here, not the oldest); a question that no longer waits is said so."""
    settings = Settings(ui=UiSettings(theme="mala-dark"))
    source = FakeLiveSource(permission_events("Bash", "WebFetch"))
    app = MalaApp(source, settings=settings, clock=lambda: 0.0, question="parser-fix/permission/2")
    async with app.run_test(size=SIZE) as pilot:
        await eventually(lambda: isinstance(app.screen, PermissionScreen), what="the dialog")
        assert isinstance(app.screen, PermissionScreen)
        assert app.screen.request.tool == "WebFetch"
        await pilot.press("o")
        await pilot.pause()
        assert answers(source) == [("parser-fix", "2", PermissionAnswer.ALLOW_ONCE, "")]
    gone = MalaApp(
        FakeLiveSource(permission_events("Bash")),
        settings=settings,
        clock=lambda: 0.0,
        question="parser-fix/permission/9",
    )
    async with gone.run_test(size=SIZE):
        await published(
            gone,
            lambda: "parser-fix/permission/9 no longer waits" in " ".join(notifications(gone)),
            "the notice that it no longer waits",
        )
        assert not isinstance(gone.screen, PermissionScreen)
