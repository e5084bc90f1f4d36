"""The gauge bar, its figures and the trend line, drawn with marker styles to read them back."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from mala_tui.core.usage import UsageSource, Zone
from mala_tui.ui.drawing import (
    FULL,
    HALF,
    MARK,
    GaugeReading,
    gauge_bar,
    gauge_figures,
    trend_blocks,
)

STYLES = {
    name: Style(color=colour)
    for name, colour in [
        ("fill", "green"),
        ("empty", "grey50"),
        ("mark", "white"),
        ("figures", "blue"),
        ("source", "cyan"),
        ("base", "black"),
        ("normal", "green"),
        ("soft", "yellow"),
        ("hard", "red"),
    ]
}
WINDOW = 200_000


def reading(pressure: float, source: UsageSource = UsageSource.PER_CALL) -> GaugeReading:
    return GaugeReading(round(pressure * WINDOW), WINDOW, 0.7, 0.9, source, Zone.NORMAL)


def cells(strip: Strip) -> list[tuple[str, str]]:
    """(character, colour name) for every cell."""
    return [(char, colour_of(segment)) for segment in strip for char in segment.text]


def colour_of(segment: Segment) -> str:
    """Every cell is drawn with one of the STYLES, each with a colour."""
    assert segment.style is not None and segment.style.color is not None, segment
    return segment.style.color.name


def test_bar_fills_to_the_pressure_and_marks_both_thresholds() -> None:
    drawn = cells(gauge_bar(reading(0.5), 20, STYLES))
    assert len(drawn) == 20
    assert [c for c, _ in drawn].count(MARK) == 2
    assert drawn[14] == (MARK, "white") and drawn[18] == (MARK, "white")  # 70% and 90% of 20
    assert [colour for _, colour in drawn[:10]] == ["green"] * 10
    assert [colour for _, colour in drawn[10:14]] == ["grey50"] * 4


def test_bar_uses_half_cells() -> None:
    drawn = cells(gauge_bar(reading(0.525), 20, STYLES))  # 10.5 cells
    assert drawn[10] == (HALF, "green")
    assert drawn[11] == (FULL, "grey50")


def test_bar_is_full_past_the_window_and_empty_without_usage() -> None:
    over = cells(gauge_bar(reading(1.3), 10, STYLES))
    assert {colour for char, colour in over if char != MARK} == {"green"}
    empty = cells(gauge_bar(None, 10, STYLES))
    assert {colour for _, colour in empty} == {"grey50"}


def test_figures_say_whether_the_count_is_exact() -> None:
    assert gauge_figures(reading(0.62), 30, STYLES).text.split() == [
        "62%",
        "124k",
        "/",
        "200k",
        "exact",
    ]
    assert gauge_figures(reading(0.62, UsageSource.CUMULATIVE), 30, STYLES).text.endswith("est.")
    assert gauge_figures(reading(0.62, UsageSource.ESTIMATE), 30, STYLES).text.endswith("est.")
    assert gauge_figures(None, 30, STYLES).text.strip() == "no usage yet"
    assert gauge_figures(reading(0.62), 30, STYLES).cell_length == 30


def test_a_window_learnt_from_a_refusal_reads_as_an_estimate() -> None:
    learnt = GaugeReading(
        35_000, 70_000, 0.3, 0.8, UsageSource.PER_CALL, Zone.SOFT, window_estimated=True
    )
    assert gauge_figures(learnt, 30, STYLES).text.split() == ["50%", "35k", "/", "~70k", "exact"]


def test_trend_is_right_aligned_and_coloured_by_zone() -> None:
    drawn = cells(trend_blocks((0.1, 0.75, 0.95, 0.2), 6, 0.7, 0.9, STYLES))
    assert [c for c, _ in drawn] == [" ", " ", "\u2581", "\u2587", "\u2588", "\u2582"]
    assert [colour for _, colour in drawn[2:]] == ["green", "yellow", "red", "green"]


def test_trend_keeps_the_newest_samples_that_fit() -> None:
    drawn = cells(trend_blocks(tuple(i / 10 for i in range(10)), 3, 0.7, 0.9, STYLES))
    assert [c for c, _ in drawn] == ["\u2586", "\u2587", "\u2588"]  # 0.7, 0.8, 0.9
