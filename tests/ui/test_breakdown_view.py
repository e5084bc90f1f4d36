"""What fills the window, a key away from the gauge: parts, by tool, by file."""

from __future__ import annotations

from textual.widgets import DataTable

from mala_tui.core import events as ev
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.calibration import Density
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import CallUsage
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.ui.screens.breakdown import NOT_LIVE, BreakdownScreen
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.widgets.window_breakdown import WindowBreakdownView, bar_cells
from tests.support.factories import sample_session
from tests.support.usage_events import started, usage

from .helpers import make_app, open_session, screen_text

DENSITY = Density(1.5, True, 3_000)
TRANSCRIPT = sample_session()
MEASURED = 3_000 + round(TRANSCRIPT.characters / 4 * 1.5)


def events() -> list[ev.Event]:
    return [
        ev.RunStarted(at=0.0, run_id="r", sessions=("worker",), mode=ev.RunMode.RUN),
        started("worker", "claude-sonnet-4-5", cwd="/ws"),
        usage("worker", 1.0, CallUsage(10, 500, MEASURED - 610, 100)),
    ]


class LiveWithWindow(FakeLiveSource):
    """A live run whose session's conversation and calibration are known."""

    def window_contents(self, session: str) -> WindowContents | None:
        return WindowContents(TRANSCRIPT, DENSITY, "/ws") if session == "worker" else None


async def test_w_opens_the_breakdown_and_it_adds_up_to_the_gauge() -> None:
    app = make_app(LiveWithWindow(events()))
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "worker", "w")
        await pilot.pause()
        assert isinstance(app.screen, BreakdownScreen)
        view = app.screen.query_one(WindowBreakdownView)
        data = view.data
        assert data is not None and data.measured == MEASURED
        assert data.error_fraction < 0.001
        text = screen_text(app)
        assert "system and tools" in text and "3.0k" in text
        assert "tool results masked" in text and "1 result;" in text
        assert "parts vs gauge" in text and "density 1.50x chars/4 (fitted)" in text
        tools = app.screen.query_one("#by-tool", DataTable)
        files = app.screen.query_one("#by-file", DataTable)
        assert [str(tools.get_row_at(i)[0]) for i in range(tools.row_count)] == [
            "Read",
            "Write",
            "Bash",
        ]
        file_names = {str(files.get_row_at(i)[0]) for i in range(files.row_count)}
        assert file_names == {"src/app.py", "NOTES.md", "src/old.py"}
        await pilot.press("escape")
        assert isinstance(app.screen, DetailScreen)


async def test_a_finished_run_says_why_there_is_no_breakdown() -> None:
    app = make_app(RunState().apply_all(events()))
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "worker", "w")
        await pilot.pause()
        assert isinstance(app.screen, BreakdownScreen)
        assert NOT_LIVE.split(":")[0] in screen_text(app).replace("\n", " ")


def test_the_bar_gives_each_part_its_share_of_the_width() -> None:
    from mala_tui.core.breakdown import breakdown_of

    data = breakdown_of(
        WindowContents(TRANSCRIPT, DENSITY, "/ws"), measured=MEASURED, window=4 * MEASURED
    )
    cells = bar_cells(data, 100)
    assert len(cells) == 100
    assert cells.count("free") == 75  # three quarters of the window are free
    assert cells.count("system") == round(3_000 / data.window * 100)
    assert cells == sorted(cells, key=["system", "conversation", "shown", "masked", "free"].index)
