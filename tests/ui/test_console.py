"""The operator's console in the app: a message to an agent, a new session, a cancel."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static, TextArea

from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.runtime.session.by_hand import Interactive
from mala_tui.ui.screens.confirm import ConfirmScreen
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.screens.message import MessageScreen
from mala_tui.ui.screens.new_task import NewTaskScreen

from .helpers import (
    burst,
    make_app,
    notifications,
    open_session,
    read_only_sample,
    screen_text,
    settle,
)
from .test_actions import focus


async def test_a_message_from_the_dashboard_reaches_the_session_and_its_log() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("t")
        message = app.screen
        assert isinstance(message, MessageScreen)
        assert "Message to parser-fix" in screen_text(app)
        message.query_one("#text", TextArea).text = "Use the [bold]new[/bold] parser API."
        await pilot.press("ctrl+s")
        await pilot.pause()
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen)
        assert supervisor.calls[-1] == ("say", "parser-fix", "Use the [bold]new[/bold] parser API.")
        assert any("message queued" in line for line in notifications(app))
        snapshot = app.controller.snapshot("parser-fix")
        assert snapshot is not None and snapshot.messages_waiting == 1
        await pilot.pause()
        assert "1 message to send" in screen_text(app)
        await pilot.press("enter")  # the detail screen's event log shows it, literally
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("l")
        await pilot.pause()
        assert "[bold]new[/bold]" in screen_text(app)


async def test_an_empty_message_is_refused_in_the_box_and_nothing_is_sent() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "parser-fix", "t")
        await pilot.pause()
        assert isinstance(app.screen, MessageScreen)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, MessageScreen)
        assert "the message is empty" in str(app.screen.query_one("#error", Static).render())
        await pilot.press("escape")
        assert not [call for call in supervisor.calls if call[0] == "say"]


async def test_a_new_session_from_the_app_joins_the_run(tmp_path: Path) -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("n")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, NewTaskScreen)
        name = screen.query_one("#name", Input)
        assert name.value.startswith("task-")
        # A taken name is refused in the dialog, which stays open.
        name.value = "parser-fix"
        screen.query_one("#task", TextArea).text = "Write the migration guide."
        screen.query_one("#cwd", Input).value = str(tmp_path)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert screen.is_active  # the dialog stays open
        assert "already named" in str(screen.query_one("#error", Static).render())
        name.value = "guide"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert supervisor.calls[-1] == (
            "add_task",
            "guide",
            "Write the migration guide.",
            str(tmp_path),
            "",
        )
        assert app.screen.card("guide") is not None


async def test_cancel_asks_first_then_cancels() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("X")
        assert isinstance(app.screen, ConfirmScreen)
        assert "write its checkpoint" in screen_text(app)
        await pilot.press("y")
        assert supervisor.calls[-1] == ("command", "parser-fix", "cancel")


async def test_a_finished_run_offers_no_message_and_no_new_session() -> None:
    app = make_app(read_only_sample())
    async with app.run_test(size=(140, 44)) as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("t", "n", "X")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)


async def test_an_approval_that_comes_in_and_a_failure_call_for_the_operator() -> None:
    from mala_tui.core import events as ev
    from mala_tui.core.actions import EndStatus
    from mala_tui.dev.sample_session import T0

    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        before = len(app.attention.raised)  # the sample's own waiting approval came before
        supervisor.record(
            ev.ApprovalRequested(
                at=T0 + 700, session="migrate-db", checkpoint_number=1, reason="hard threshold"
            )
        )
        supervisor.record(
            ev.SessionEnded(
                at=T0 + 701, session="api-docs", status=EndStatus.FAILED, reason="crashed"
            )
        )
        await pilot.pause()
        run = app.controller.state.run_id
        assert app.attention.raised[before:] == [
            ("mala-tui", f"migrate-db waits for restart approval \u00b7 run {run}"),
            ("mala-tui", f"api-docs failed: crashed \u00b7 run {run}"),
        ]


async def test_text_typed_just_before_ctrl_s_is_all_sent() -> None:
    # ctrl+s must wait its turn behind the keys typed before it, however fast they come.
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("t")
        message = app.screen
        assert isinstance(message, MessageScreen)
        burst(app, "Skip step three", "ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen), screen_text(app)
        assert supervisor.calls[-1] == ("say", "parser-fix", "Skip step three")


async def test_the_new_session_dialog_offers_the_runs_profiles(tmp_path: Path) -> None:
    from textual.widgets import Select

    from mala_tui.runtime.run.profiles import Profile

    supervisor = FakeLiveSource()
    supervisor.profiles = {
        "review": Profile("review", {"model": "claude-haiku-4-5"}),
        "[bold]odd[/bold]": Profile("[bold]odd[/bold]"),
    }
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("n")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, NewTaskScreen)
        chosen = screen.query_one("#profile", Select)
        assert chosen.value == ""  # the run's own settings unless one is picked
        screen.query_one("#task", TextArea).text = "Review the parser."
        screen.query_one("#name", Input).value = "reviewer"
        screen.query_one("#cwd", Input).value = str(tmp_path)
        chosen.focus()
        await pilot.press("enter")  # the list opens: the run's settings, then each profile
        await pilot.pause()
        assert "[bold]odd[/bold]" in screen_text(app)  # a name shown as it is written
        await pilot.press("down", "enter")
        await pilot.pause()
        assert chosen.value == "review"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert supervisor.calls[-1] == (
            "add_task",
            "reviewer",
            "Review the parser.",
            str(tmp_path),
            "review",
        )


async def test_without_profiles_the_new_session_dialog_has_no_choice() -> None:
    app = make_app(FakeLiveSource())
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NewTaskScreen)
        assert not app.screen.query("#profile")
        assert "Profile" not in screen_text(app)


async def test_f_forks_a_session_into_a_new_card_beside_it() -> None:
    from mala_tui.ui.screens.fork import ForkScreen

    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("f")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ForkScreen)
        body = str(screen.query_one("#body", Static).render())
        assert "parser-fix goes on as it was" in body and "in the same folder" in body
        name = screen.query_one("#name", Input)
        assert name.value == "parser-fix-fork1"
        await pilot.press("ctrl+s")  # no instruction yet: refused in the dialog
        await pilot.pause()
        assert screen.is_active
        assert "empty" in str(screen.query_one("#error", Static).render())
        screen.query_one("#instruction", TextArea).text = "Try [bold]the other[/bold] parser."
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert supervisor.calls[-1] == (
            "fork",
            "parser-fix",
            "parser-fix-fork1",
            "Try [bold]the other[/bold] parser.",
        )
        card = app.screen.card("parser-fix-fork1")
        assert card is not None
        await pilot.pause()
        assert "fork of parser-fix" in screen_text(app)
        assert "Try [bold]the other[/bold] parser." in screen_text(app)  # shown literally


async def test_h_says_why_a_console_cannot_open_a_session_by_hand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = make_app(FakeLiveSource())  # a stand-in: no process of its own to end
    async with app.run_test(size=(140, 44)) as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("h")
        await pilot.pause()
        assert any("cannot open a session by hand" in note for note in notifications(app))
        monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
        await pilot.press("h")
        await pilot.pause()
        assert any("not from a browser tab" in note for note in notifications(app))
        assert isinstance(app.screen, DashboardScreen)


class ByHandSource(FakeLiveSource):
    """The sample run, whose sessions can be taken over: what the app asked is recorded."""

    async def take_over(self, session: str) -> Interactive:
        self.calls.append(("take_over", session))
        return Interactive(session, "sess-1", ("true",), {}, Path("."))

    async def hand_back(self, session: str, *, go_on: bool) -> None:
        self.calls.append(("hand_back", session, str(go_on)))


async def test_h_takes_a_session_over_then_asks_whether_it_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mala_tui.ui.screens.by_hand import HandBackScreen

    monkeypatch.delenv("TMUX", raising=False)  # this console's own terminal, not a window
    source = ByHandSource()
    app = make_app(source)
    async with app.run_test(size=(140, 44)) as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("h")
        for _ in range(100):
            await pilot.pause()
            if isinstance(app.screen, HandBackScreen):
                break
        screen = app.screen
        assert isinstance(screen, HandBackScreen)
        # A test's terminal cannot be given away: the question says so, and is still asked.
        assert "could not be opened" in str(screen.query_one("#body", Static).render())
        await pilot.press("b")
        for _ in range(100):
            await pilot.pause()
            if ("hand_back", "parser-fix", "True") in source.calls:
                break
    assert source.calls[-2:] == [("take_over", "parser-fix"), ("hand_back", "parser-fix", "True")]
