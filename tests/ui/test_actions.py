"""The operator's actions reach the supervisor, from the keys and from the command palette."""

from __future__ import annotations

from textual.pilot import Pilot

from mala_tui.core.phases import Phase, Trigger
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.ui.screens.confirm import ConfirmScreen
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.widgets.session_card import SessionCard

from .helpers import make_app, notifications, palette_highlights, read_only_sample


def commands(supervisor: FakeLiveSource) -> list[tuple[str, ...]]:
    return [call for call in supervisor.calls if call[0] != "decide"]


def approval_required(card: SessionCard) -> bool:
    """As the card shows it now: each change brings the card a new snapshot."""
    return card.snapshot is not None and card.snapshot.require_approval


async def focus(pilot: Pilot[int], name: str) -> DashboardScreen:
    """Focus the session's card, as the arrow keys would."""
    screen = pilot.app.screen
    assert isinstance(screen, DashboardScreen)
    card = screen.card(name)
    assert card is not None
    card.focus()
    await pilot.pause()
    assert screen.focused_session() == name
    return screen


async def test_pause_mask_and_restart_go_to_the_focused_session() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("p", "m", "r")
        assert commands(supervisor) == [
            ("command", "parser-fix", "pause"),
            ("command", "parser-fix", "mask_now"),
            ("command", "parser-fix", "restart_now"),
        ]


async def test_pause_becomes_resume_on_a_paused_session() -> None:
    from mala_tui.core import events as ev
    from mala_tui.dev.sample_session import T0

    supervisor = FakeLiveSource()
    supervisor.record(
        ev.PhaseChanged(
            at=T0 + 700,
            session="parser-fix",
            before=Phase.RUNNING,
            after=Phase.PAUSED,
            trigger=Trigger.PAUSE,
        )
    )
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("p")
        assert commands(supervisor) == [("command", "parser-fix", "resume")]


async def test_stop_asks_first() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await focus(pilot, "api-docs")
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert commands(supervisor) == []
        await pilot.press("x", "y")
        assert commands(supervisor) == [("command", "api-docs", "stop")]


async def test_an_ended_session_can_only_be_restarted() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        screen = await focus(pilot, "release-notes")  # failed
        for key in ("p", "x", "m", "v"):
            assert screen.check_action("session", (_ACTIONS[key],)) is None
        await pilot.press("p", "x", "m", "v", "r")
        await pilot.pause()
        assert commands(supervisor) == [("command", "release-notes", "restart_now")]
        await focus(pilot, "flaky-tests")  # done: nothing to restart
        await pilot.press("r")
        assert commands(supervisor) == [("command", "release-notes", "restart_now")]


_ACTIONS = {"p": "pause", "x": "stop", "m": "mask", "v": "approval"}


async def test_approval_switches_per_session_and_for_all() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        screen = await focus(pilot, "parser-fix")
        card = screen.card("parser-fix")
        assert card is not None and card.snapshot is not None
        assert not approval_required(card)
        await pilot.press("v")
        await pilot.pause()
        assert approval_required(card)
        assert str(card.border_subtitle).startswith("approval on \u00b7 ")  # then its cost
        await pilot.press("V")  # not every session asks yet: on for all
        await pilot.pause()
        assert all(approval_required(c) for c in screen.query(SessionCard))
        await pilot.press("V")  # now every session asks: off for all
        await pilot.pause()
        assert commands(supervisor) == [
            ("require_approval", "parser-fix", "True"),
            ("require_approval", "*", "True"),
            ("require_approval", "*", "False"),
        ]
        assert not any(approval_required(c) for c in screen.query(SessionCard))


async def test_the_management_mode_cycles_full_mask_off_for_the_focused_session() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("g")
        assert commands(supervisor) == [("manage", "parser-fix", "mask")]
        assert any("parser-fix: management mode mask" in n for n in notifications(app))


async def test_transcript_path_is_copied_and_shown() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test(notifications=True) as pilot:
        await focus(pilot, "parser-fix")
        await pilot.press("o")
        assert app.clipboard.endswith("/parser-fix-0001.jsonl")
        assert any(app.clipboard in note for note in notifications(app))


async def test_the_command_palette_runs_the_same_actions() -> None:
    supervisor = FakeLiveSource()
    app = make_app(supervisor)
    async with app.run_test() as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"mask now: api-docs")
        await palette_highlights(pilot, "Mask now: api-docs")
        await pilot.press("enter")
        await pilot.pause()
        assert commands(supervisor) == [("command", "api-docs", "mask_now")]


async def test_a_finished_run_offers_no_actions() -> None:
    app = make_app(read_only_sample())
    async with app.run_test() as pilot:
        screen = await focus(pilot, "parser-fix")
        for key in ("p", "x", "m", "r", "v", "o"):
            await pilot.press(key)
        assert isinstance(app.screen, DashboardScreen)
        for action in ("pause", "stop", "mask", "restart", "approval", "transcript"):
            assert screen.check_action("session", (action,)) is False
        assert screen.check_action("session", ("open",)) is True
        assert app.check_action("review_approvals", ()) is False


def test_every_session_action_is_bound_on_the_dashboard_with_its_key_from_the_table() -> None:
    from collections.abc import Iterable

    from textual.binding import Binding

    from mala_tui.ui.screens.detail import DetailScreen
    from mala_tui.ui.session_action_table import SESSION_ACTIONS

    def bound(bindings: Iterable[object]) -> dict[str, str]:
        return {b.action: b.key for b in bindings if isinstance(b, Binding)}

    dashboard, detail = bound(DashboardScreen.BINDINGS), bound(DetailScreen.BINDINGS)
    for action in SESSION_ACTIONS:
        assert dashboard[f"session('{action.id}')"] == action.key
        if action.id != "open":  # the detail screen is the open session
            assert detail[f"session('{action.id}')"] == action.key
