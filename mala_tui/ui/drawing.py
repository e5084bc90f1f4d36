"""Strips for the context gauge and the trend line, shared by the widgets that show them.

A session card draws its gauge and trend itself, in its own lines, and the
detail screen's `ContextGauge` draws the same bar: both call these functions,
so the two can never disagree. Styles come in resolved (from the widget's
component classes), so nothing here picks a colour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.text import percent, tokens
from mala_tui.core.usage import UsageSource, Zone, zone_of
from mala_tui.core.window import WindowSource
from mala_tui.ui.format import source_label

FULL: Final = "\u2501"  # "━"
HALF: Final = "\u2578"  # "╸"
MARK: Final = "\u2503"  # "┃"
BLOCKS: Final = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"  # "▁" to "█"


@dataclass(frozen=True, slots=True)
class GaugeReading:
    """What a gauge shows: one session's context figures and thresholds."""

    tokens: int
    window: int
    soft: float
    hard: float
    source: UsageSource
    zone: Zone
    window_estimated: bool = False
    """The window itself is an estimate (learnt from a refusal): shown as "~70k"."""

    @classmethod
    def of(cls, snapshot: SessionSnapshot) -> GaugeReading:
        return cls(
            snapshot.tokens,
            snapshot.window,
            snapshot.soft_threshold,
            snapshot.hard_threshold,
            snapshot.source,
            snapshot.zone,
            snapshot.window_source is WindowSource.REFUSAL,
        )

    @property
    def pressure(self) -> float:
        if self.window <= 0 or self.source == UsageSource.DISABLED:
            return 0.0
        return self.tokens / self.window


def gauge_bar(reading: GaugeReading | None, width: int, styles: Mapping[str, Style]) -> Strip:
    """The bar: filled to the pressure in half cells, the soft and hard thresholds marked.

    Styles: "fill", "empty", "mark". Built as a few runs, not a segment a cell:
    cards redraw their bars many times a second.
    """
    if width <= 0:
        return Strip.blank(0)
    pressure = reading.pressure if reading else 0.0
    halves = round(min(max(pressure, 0.0), 1.0) * width * 2)
    full, half = divmod(halves, 2)
    cells = FULL * full + (HALF if half else "") + FULL * (width - full - half)
    filled = full + half
    marks = (
        sorted({min(width - 1, int(limit * width)) for limit in (reading.soft, reading.hard)})
        if reading is not None
        else []
    )
    fill, empty, mark = styles["fill"], styles["empty"], styles["mark"]
    segments: list[Segment] = []
    start = 0
    for stop in [*marks, width]:
        if start < stop:
            if start < filled:
                segments.append(Segment(cells[start : min(stop, filled)], fill))
            if stop > filled:
                segments.append(Segment(cells[max(start, filled) : stop], empty))
        if stop < width:
            segments.append(Segment(MARK, mark))
        start = stop + 1
    return Strip(segments, width)


def gauge_text(reading: GaugeReading | None) -> tuple[str, str]:
    """The figures ("62%  124k / 200k") and their source ("exact", "est." or "")."""
    if reading is None or reading.source == UsageSource.DISABLED:
        figures = (
            "no usage yet" if reading is None or reading.tokens == 0 else tokens(reading.tokens)
        )
        return figures, ""
    window = ("~" if reading.window_estimated else "") + tokens(reading.window)
    figures = f"{percent(reading.pressure)}  {tokens(reading.tokens)} / {window}"
    return figures, source_label(reading.source)


def gauge_figures(reading: GaugeReading | None, width: int, styles: Mapping[str, Style]) -> Strip:
    """Figures on the left, their source on the right. Styles: "figures", "source", "base"."""
    figures, source = gauge_text(reading)
    gap = max(1, width - len(figures) - len(source))
    segments = [
        Segment(figures, styles["figures"]),
        Segment(" " * gap, styles["base"]),
        Segment(source, styles["source"]),
    ]
    return Strip(segments).crop_extend(0, width, styles["base"])


def trend_blocks(
    samples: tuple[float, ...], width: int, soft: float, hard: float, styles: Mapping[str, Style]
) -> Strip:
    """The newest samples as blocks, right-aligned; a full block is a full window.

    Absolute, not scaled to the samples: trends of different sessions compare at
    a glance, and a flat line at 30% never looks like one at 90%. Styles:
    "normal", "soft", "hard" (by the sample's zone) and "base".
    """
    shown = samples[-width:] if width > 0 else ()
    segments = [Segment(" " * (width - len(shown)), styles["base"])]
    run: list[str] = []
    run_zone: Zone | None = None
    for sample in shown:
        level = min(len(BLOCKS) - 1, max(0, int(sample * len(BLOCKS))))
        zone = zone_of(sample, soft, hard)
        if zone != run_zone and run_zone is not None:
            segments.append(Segment("".join(run), styles[run_zone]))
            run = []
        run_zone = zone
        run.append(BLOCKS[level])
    if run_zone is not None:
        segments.append(Segment("".join(run), styles[run_zone]))
    return Strip(segments, width)
