"""Getting around: cards to detail to checkpoints and back, help, sorting, filtering, reflow."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Input, Select

from mala_tui.core import events as ev
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import UsageSource
from mala_tui.dev.sample_run import sample_events
from mala_tui.dev.sample_session import T0, WINDOW
from mala_tui.ui.screens.checkpoints import CheckpointScreen
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.screens.help import HelpScreen
from mala_tui.ui.widgets.checkpoint_view import CheckpointView
from mala_tui.ui.widgets.event_log import EventLog

from .helpers import make_app, open_session, read_only_sample, screen_text


def visible_cards(screen: DashboardScreen) -> list[str]:
    return [card.session_name for card in screen.cards if card.display]


async def test_enter_opens_the_focused_session_and_escape_comes_back() -> None:
    app = make_app(read_only_sample())
    async with app.run_test() as pilot:
        await pilot.press("right")  # from the first card (api-docs) to the second
        await pilot.press("enter")
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        assert detail.session_name == "flaky-tests"
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_arrows_move_through_the_grid_by_rows_and_columns() -> None:
    app = make_app(read_only_sample())
    async with app.run_test(size=(140, 44)) as pilot:  # three columns
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        assert screen.focused_session() == "api-docs"
        await pilot.press("down")
        assert screen.focused_session() == "new-endpoint"
        await pilot.press("right", "right")
        assert screen.focused_session() == "release-notes"
        await pilot.press("up", "left")
        assert screen.focused_session() == "flaky-tests"


async def test_from_a_restart_to_its_checkpoint_and_back(tmp_path: Path) -> None:
    app = make_app(read_only_sample())
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "settings-form")
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        table = detail.query_one("#restart-table", DataTable)
        assert table.row_count == 1
        assert [cell.plain for cell in table.get_row_at(0)] == [
            "+5:52",
            "hard threshold reached (81%)",
            "162k",
            "24k",
            "operator",
            "#1 \u2192",
        ]
        table.focus()
        await pilot.press("enter")
        checkpoint = app.screen
        assert isinstance(checkpoint, CheckpointScreen)
        assert checkpoint.number == 1
        assert checkpoint.query_one(CheckpointView).checkpoint[1] is None  # the first one
        await pilot.press("down")
        assert checkpoint.is_active and checkpoint.number == 2
        assert "Do Not Redo  \u00b7 new" in screen_text(app)
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_c_opens_the_latest_checkpoint() -> None:
    app = make_app(read_only_sample())
    async with app.run_test(size=(140, 44)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        card = screen.card("settings-form")
        assert card is not None
        card.focus()
        await pilot.press("c")
        assert isinstance(app.screen, CheckpointScreen)
        assert app.screen.number == 2


async def test_help_lists_the_keys_of_the_screen_it_was_asked_on() -> None:
    app = make_app()
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for words in (
            "Pause/resume",
            "Mask now",
            "Approval for all",
            "Approvals",
            "Quit",
            "ctrl+p",
        ):
            assert words in text, words
        assert "Scroll Up" not in text and "Focus Next" not in text
        await pilot.press("escape", "enter", "question_mark")
        assert "Back" in screen_text(app) and "Checkpoints" in screen_text(app)


async def test_filter_by_text_and_by_zone() -> None:
    app = make_app(read_only_sample())
    async with app.run_test(size=(140, 44)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await pilot.press("slash", *"migrate")
        assert visible_cards(screen) == ["migrate-db"]
        await pilot.press("escape")
        assert len(visible_cards(screen)) == 7
        await pilot.press("z")  # normal
        assert visible_cards(screen) == [
            "flaky-tests",
            "new-endpoint",
            "parser-fix",
            "release-notes",
        ]
        await pilot.press("z")  # soft
        assert visible_cards(screen) == ["api-docs"]
        await pilot.press("z")  # hard
        assert visible_cards(screen) == ["migrate-db", "settings-form"]
        await pilot.press("slash", *"nothing like this")
        assert visible_cards(screen) == []
        assert "No session matches" in screen_text(app)


async def test_sort_by_pressure_and_by_state() -> None:
    app = make_app(read_only_sample())
    async with app.run_test(size=(140, 44)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await pilot.press("s")
        assert screen.sort_by == "pressure"
        assert visible_cards(screen)[:3] == ["migrate-db", "settings-form", "api-docs"]
        await pilot.press("s")
        assert visible_cards(screen)[:3] == ["settings-form", "release-notes", "migrate-db"]
        assert visible_cards(screen)[-1] == "flaky-tests"  # done comes last


def many_sessions(count: int) -> RunState:
    names = tuple(f"s{index:03d}" for index in range(count))
    events: list[ev.Event] = [
        ev.RunStarted(at=T0, run_id="many", sessions=names, mode=ev.RunMode.RUN)
    ]
    for index, name in enumerate(names):
        events.append(
            ev.SessionStarted(
                at=T0,
                session=name,
                task=f"task {index}",
                cwd="/w",
                window=WINDOW,
                soft_threshold=0.7,
                hard_threshold=0.9,
                max_restarts=3,
                require_approval=False,
            )
        )
        events.append(
            ev.UsageRecorded(
                at=T0 + 1,
                session=name,
                tokens=index * 1_900,
                window=WINDOW,
                source=UsageSource.PER_CALL,
            )
        )
    return RunState().apply_all(events)


async def test_the_grid_reflows_from_one_to_a_hundred_cards() -> None:
    app = make_app(many_sessions(1))
    async with app.run_test(size=(200, 50)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        assert len(screen.cards) == 1
    app = make_app(many_sessions(100))
    async with app.run_test(size=(200, 50)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        assert len(screen.cards) == 100
        grid = screen.query_one("#grid")
        assert grid.styles.grid_size_columns == 4
        first, second, fifth = screen.cards[0], screen.cards[1], screen.cards[4]
        assert first.region.y == second.region.y and fifth.region.y > first.region.y
        await pilot.resize_terminal(90, 50)
        await pilot.pause()
        assert grid.styles.grid_size_columns == 2
        await pilot.press("s")  # by pressure: the fullest first
        assert screen.cards[0].session_name == "s099"


async def test_the_event_log_filters_by_type_and_words() -> None:
    app = make_app(read_only_sample())
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "settings-form", "l")
        log = app.screen.query_one(EventLog)
        every = log.shown()
        assert len(every) == len(app.controller.state.sessions["settings-form"].log)
        log.query_one("#event-type", Select).value = "restart"
        await pilot.pause()
        assert [event.type for event in log.shown()] == ["restart"]
        log.query_one("#event-type", Select).clear()
        log.query_one("#event-text", Input).value = "approval_requested checkpoint #2"
        await pilot.pause()
        assert [event.type for event in log.shown()] == ["approval_requested"]


async def test_a_finished_run_reads_back_from_its_events() -> None:
    state = RunState().apply_all(sample_events())
    app = make_app(state)
    async with app.run_test(size=(140, 44)):
        text = screen_text(app)
        assert "read-only" in text
        assert "awaiting approval \u00b7 checkpoint #2" in text
