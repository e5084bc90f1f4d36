"""The context chart's marks and lines, and exporting a checkpoint to a file."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from mala_tui.dev.sample_run import CHECKPOINT_2
from mala_tui.dev.sample_session import T0
from mala_tui.ui.screens.checkpoints import CheckpointScreen
from mala_tui.ui.screens.export import ExportScreen
from mala_tui.ui.widgets.context_chart import ChartData, ContextChart

from .helpers import make_app, notifications, open_session, read_only_sample


def test_chart_data_of_a_session_has_its_masks_restarts_and_time_span() -> None:
    state = read_only_sample().sessions["settings-form"]
    data = ChartData.of(state)
    assert data.start == T0 and data.end == T0 + 626
    assert data.masks == (T0 + 202,)
    assert data.restarts == (T0 + 352,)
    assert max(pressure for _, pressure in data.points) == 0.82


async def test_the_chart_marks_masks_and_restarts_under_the_plot_and_labels_both_lines() -> None:
    app = make_app(read_only_sample())
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "settings-form")
        chart = app.screen.query_one(ContextChart)
        width, height = chart.size
        lines = [chart.render_line(y).text for y in range(height)]
        marks = lines[-2]
        plot_width = width - 5
        assert marks.strip() == "m" + " " * (marks.strip().count(" ")) + "R"
        # A mask at 202 s and a restart at 352 s of 626: a third and a bit over half way.
        assert abs((marks.index("m") - 5) / plot_width - 202 / 626) < 0.03
        assert abs((marks.index("R") - 5) / plot_width - 352 / 626) < 0.03
        labels = [line[:4].strip() for line in lines[:-2]]
        assert labels[0] == "100%" and labels[-1] == "0%"
        assert "80%" in labels and "40%" in labels
        assert labels.index("80%") < labels.index("40%")
        assert lines[-1].split() == ["0:00", "5:13", "10:26"]


async def test_export_writes_the_checkpoint_and_never_replaces_a_file(tmp_path: Path) -> None:
    app = make_app(read_only_sample())
    target = tmp_path / "cp.md"
    async with app.run_test(size=(140, 44), notifications=True) as pilot:
        await open_session(pilot, "settings-form", "c")
        assert isinstance(app.screen, CheckpointScreen)
        await pilot.press("e")
        assert isinstance(app.screen, ExportScreen)
        app.screen.query_one("#path", Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert target.read_text(encoding="utf-8") == CHECKPOINT_2
        await pilot.press("e")
        app.screen.query_one("#path", Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert any("exists already" in note for note in notifications(app))
        assert target.read_text(encoding="utf-8") == CHECKPOINT_2
        await pilot.press("e", "escape")
        assert isinstance(app.screen, CheckpointScreen)
