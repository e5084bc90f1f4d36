"""What fills the window, a key away from the gauge: parts, by tool, by file."""

from __future__ import annotations

from textual.widgets import DataTable

from mala_tui.core import events as ev
from mala_tui.core.breakdown import KnownDigest, WindowContents, breakdown_of
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


def events(*, folded: bool = False) -> list[ev.Event]:
    """A live session measured once; `folded`: a mask folded 24 steps before that."""
    fold: list[ev.Event] = [
        ev.MaskApplied(
            at=0.5,
            session="worker",
            count=1,
            tool_use_ids=("r0",),
            placeholders=("[masked]",),
            estimated_tokens=9_900,
            tokens_before=MEASURED + 9_000,
            total_masked=1,
        ),
        ev.TranscriptFolded(
            at=0.6,
            session="worker",
            steps=24,
            digest_lines=24,
            tokens_before=20_000,
            tokens_after=12_000,
            digest_tokens=400,
        ),
    ]
    return [
        ev.RunStarted(at=0.0, run_id="r", sessions=("worker",), mode=ev.RunMode.RUN),
        started("worker", "claude-sonnet-4-5", cwd="/ws"),
        *(fold if folded else []),
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
        # No fold yet: no digest line, and the legend is its five parts and the check.
        assert "digest of folded steps" not in text
        assert view.size.height == 2 + 6
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


async def test_a_fold_known_from_the_events_shows_the_digest_as_its_own_part() -> None:
    # The conversation held has no digest (it follows the agent's stream): the fold's own
    # figure, 400 tokens at chars/4, stands in at the session's density.
    app = make_app(LiveWithWindow(events(folded=True)))
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "worker", "w")
        await pilot.pause()
        view = app.screen.query_one(WindowBreakdownView)
        data = view.data
        assert data is not None
        assert (data.digest, data.digest_lines) == (600, 24)
        text = screen_text(app)
        assert "digest of folded steps    600    0%  24 steps folded, after the task" in text
        assert view.size.height == 2 + 7
        # Its line sits between the conversation's and the shown results'.
        legend = [line.strip()[2:24].strip() for line in legend_lines(text)]
        assert legend[1:4] == ["conversation", "digest of folded steps", "tool results shown"]


async def test_a_finished_run_says_why_there_is_no_breakdown() -> None:
    app = make_app(RunState().apply_all(events()))
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "worker", "w")
        await pilot.pause()
        assert isinstance(app.screen, BreakdownScreen)
        assert NOT_LIVE.split(":")[0] in screen_text(app).replace("\n", " ")


def legend_lines(text: str) -> list[str]:
    """The legend's lines on screen: each opens with its part's block and a space."""
    return [line for line in text.splitlines() if line.strip().startswith("\u2588 ")]


def test_the_bar_gives_each_part_its_share_of_the_width() -> None:
    # A digest the transcript does not hold: the gauge counts it on top of the transcript.
    measured = MEASURED + round(1_000 * DENSITY.ratio)
    data = breakdown_of(
        WindowContents(TRANSCRIPT, DENSITY, "/ws"),
        measured=measured,
        window=4 * measured,
        known_digest=KnownDigest(24, 1_000),
    )
    cells = bar_cells(data, 100)
    assert len(cells) == 100
    assert cells.count("free") == 75  # three quarters of the window are free
    assert cells.count("system") == round(3_000 / data.window * 100)
    assert cells.count("digest") == round(data.digest / data.window * 100) > 0
    order = ["system", "conversation", "digest", "shown", "masked", "free"]
    assert cells == sorted(cells, key=order.index)
