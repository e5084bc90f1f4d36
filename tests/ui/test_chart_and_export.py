"""The context chart's marks and lines, and exporting a checkpoint to a file."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Input

from mala_tui.core import events as ev
from mala_tui.core.run_view import RunState
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


def _folded(state_events: list[ev.Event], at: float) -> list[ev.Event]:
    """The sample session's events with its mask folded (the event the fold journals)."""
    fold = ev.TranscriptFolded(
        at=at,
        session="settings-form",
        steps=12,
        notes=1,
        digest_lines=12,
        tokens_before=41_000,
        tokens_after=33_500,
        digest_tokens=300,
    )
    index = 1 + next(
        i
        for i, e in enumerate(state_events)
        if isinstance(e, ev.MaskApplied) and e.session == "settings-form"
    )
    return [*state_events[:index], fold, *state_events[index:]]


def test_a_fold_is_kept_on_its_mask_and_marked_f_in_the_chart_data() -> None:
    sample = read_only_sample().sessions["settings-form"]
    events = _folded(list(sample.log), T0 + 203)
    state = RunState().apply_all(events).sessions["settings-form"]
    (mask,) = state.masks
    assert (mask.folded_steps, mask.folded_tokens, mask.digest_lines) == (12, 7_500, 12)
    data = ChartData.of(state)
    assert data.masks == data.folds == (T0 + 202,)
    # Without the fold the same mask is a mask only.
    assert ChartData.of(sample).folds == ()


def test_a_fold_with_no_mask_before_it_changes_nothing() -> None:
    sample = read_only_sample().sessions["settings-form"]
    unmasked = [e for e in sample.log if not isinstance(e, ev.MaskApplied)]
    fold = next(
        e for e in _folded(list(sample.log), T0 + 203) if isinstance(e, ev.TranscriptFolded)
    )
    state = RunState().apply_all([*unmasked, fold]).sessions["settings-form"]
    assert state.masks == []
    assert ChartData.of(state).folds == ()


async def test_the_detail_shows_what_a_mask_folded_and_the_chart_marks_it_f() -> None:
    sample = read_only_sample()
    events = _folded([e for s in sample.sessions.values() for e in s.log], T0 + 203)
    app = make_app(RunState().apply_all(events))
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "settings-form")
        chart = app.screen.query_one(ContextChart)
        marks = chart.render_line(chart.size.height - 2).text
        assert marks.strip().startswith("f") and "m" not in marks and "R" in marks
        table = app.screen.query_one("#mask-table", DataTable)
        assert table.get_row_at(0)[-1].plain == "12 steps, ~7.5k est."
