"""Context over time as a braille chart: soft and hard lines, marks at masks and restarts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from mala_tui.core.usage import Zone, zone_of
from mala_tui.core.view import SessionState
from mala_tui.ui.format import elapsed
from mala_tui.ui.timeline import session_start

AXIS_WIDTH = 5
"""Cells left of the plot for the percent labels ("100% ")."""
# Braille dot bits by (row, column) inside a cell: the pattern's standard numbering.
_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))


@dataclass(frozen=True, slots=True)
class ChartData:
    """What the chart draws; times are seconds on one clock, pressures tokens / window."""

    points: tuple[tuple[float, float], ...]
    soft: float
    hard: float
    masks: tuple[float, ...] = ()
    restarts: tuple[float, ...] = ()
    start: float = 0.0
    end: float = 0.0
    folds: tuple[float, ...] = ()
    """When a mask also folded its steps into the digest (drawn f instead of m)."""

    @classmethod
    def of(cls, state: SessionState) -> ChartData:
        points = tuple(
            (point.at, point.tokens / point.window if point.window > 0 else 0.0)
            for point in state.usage
        )
        masks = tuple(mask.at for mask in state.masks)
        restarts = tuple(restart.at for restart in state.restarts)
        start = session_start(state)
        end = max([state.updated_at, *(at for at, _ in points), *masks, *restarts])
        folds = tuple(mask.at for mask in state.masks if mask.folded_steps)
        return cls(
            points,
            state.soft_threshold,
            state.hard_threshold,
            masks,
            restarts,
            start,
            end,
            folds=folds,
        )


class ContextChart(Widget):
    """A plot of pressure (0 to 100% of the window) against time since the session began.

    Dots are braille (2 by 4 per cell) for resolution without a plotting
    dependency; each cell takes the colour of the highest zone it shows. The
    threshold lines are dotted, the bottom rows mark masks (m; f when the mask also
    folded its steps into the digest) and restarts (R)
    and label the time.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "chart--normal",
        "chart--soft",
        "chart--hard",
        "chart--soft-line",
        "chart--hard-line",
        "chart--axis",
        "chart--mask",
        "chart--restart",
    }
    """
    | Class | Description |
    | :- | :- |
    | `chart--normal`, `chart--soft`, `chart--hard` | The line, by the zone it is in. |
    | `chart--soft-line`, `chart--hard-line` | The threshold lines. |
    | `chart--axis` | Labels of both axes. |
    | `chart--mask`, `chart--restart` | The marks under the plot. |
    """

    DEFAULT_CSS = """
    ContextChart {
        height: 12;
        & > .chart--normal { color: $gauge-normal; }
        & > .chart--soft { color: $gauge-soft; }
        & > .chart--hard { color: $gauge-hard; }
        & > .chart--soft-line { color: $gauge-soft 60%; }
        & > .chart--hard-line { color: $gauge-hard 60%; }
        & > .chart--axis { color: $foreground-muted; }
        & > .chart--mask { color: $gauge-soft; text-style: bold; }
        & > .chart--restart { color: $accent; text-style: bold; }
    }
    """

    data: reactive[ChartData | None] = reactive(None)
    """The series and marks; None draws an empty plot."""

    def __init__(
        self,
        data: ChartData | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.set_reactive(ContextChart.data, data)
        self._cache: tuple[tuple[int, int, ChartData | None], list[Strip]] | None = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache = None  # a new theme: the cached strips carry the old colours

    def watch_data(self) -> None:
        self._cache = None

    def render_line(self, y: int) -> Strip:
        width, height = self.size
        key = (width, height, self.data)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._draw(width, height))
        lines = self._cache[1]
        return lines[y] if 0 <= y < len(lines) else Strip.blank(width, self.rich_style)

    def _style(self, component: str) -> Style:
        return self.rich_style + self.get_component_rich_style(component, partial=True)

    def _draw(self, width: int, height: int) -> list[Strip]:
        plot_w, plot_h = width - AXIS_WIDTH, height - 2
        if plot_w < 4 or plot_h < 2:
            return [Strip.blank(width, self.rich_style) for _ in range(height)]
        data = self.data or ChartData((), 0.4, 0.8)
        px_w, px_h = plot_w * 2, plot_h * 4
        span = max(data.end - data.start, 1e-9)

        def px_x(at: float) -> int:
            return min(px_w - 1, max(0, round((at - data.start) / span * (px_w - 1))))

        def px_y(pressure: float) -> int:
            return min(px_h - 1, max(0, round((1 - min(pressure, 1.0)) * (px_h - 1))))

        bits = [[0] * plot_w for _ in range(plot_h)]
        peak = [[-1.0] * plot_w for _ in range(plot_h)]

        def dot(x: int, y: int, pressure: float) -> None:
            row, col = y // 4, x // 2
            bits[row][col] |= _DOTS[y % 4][x % 2]
            peak[row][col] = max(peak[row][col], pressure)

        previous: tuple[int, int, float] | None = None
        for at, pressure in data.points:
            x, y = px_x(at), px_y(pressure)
            if previous is None:
                dot(x, y, pressure)
            else:
                _line(previous, (x, y, pressure), dot)
            previous = (x, y, pressure)

        lines: dict[int, Zone] = {}  # plot row -> which threshold line crosses it
        for threshold, kind in ((data.soft, Zone.SOFT), (data.hard, Zone.HARD)):
            y = px_y(threshold)
            lines[y // 4] = kind
            for x in range(0, px_w, 2):
                row, col = y // 4, x // 2
                if peak[row][col] < 0:  # the series wins its cells
                    bits[row][col] |= _DOTS[y % 4][0]

        styles = {
            name: self._style(f"chart--{name}")
            for name in (
                *Zone,
                f"{Zone.SOFT}-line",
                f"{Zone.HARD}-line",
                "axis",
                "mask",
                "restart",
            )
        }
        labels = {
            0: "100%",
            px_y(data.hard) // 4: _pct(data.hard),
            px_y(data.soft) // 4: _pct(data.soft),
            plot_h - 1: "0%",
        }
        strips = []
        for row in range(plot_h):
            segments = [Segment(labels.get(row, "").rjust(AXIS_WIDTH - 1) + " ", styles["axis"])]
            for col in range(plot_w):
                cell = bits[row][col]
                if peak[row][col] >= 0:
                    style = styles[zone_of(peak[row][col], data.soft, data.hard)]
                elif cell:
                    style = styles[f"{lines.get(row, Zone.SOFT)}-line"]
                else:
                    style = self.rich_style
                segments.append(Segment(chr(0x2800 + cell) if cell else " ", style))
            strips.append(Strip(Segment.simplify(segments), width))
        strips.append(self._marks(data, plot_w, px_x, styles))
        strips.append(self._times(data, plot_w, styles["axis"]))
        return strips

    def _marks(
        self, data: ChartData, plot_w: int, px_x: Callable[[float], int], styles: dict[str, Style]
    ) -> Strip:
        cells = [" "] * plot_w
        kinds = [""] * plot_w
        for at in data.masks:
            col = px_x(at) // 2
            cells[col], kinds[col] = ("f" if at in data.folds else "m"), "mask"
        for at in data.restarts:  # a restart outranks a mask in the same cell
            col = px_x(at) // 2
            cells[col], kinds[col] = "R", "restart"
        segments = [Segment(" " * AXIS_WIDTH, self.rich_style)]
        segments += [
            Segment(char, styles[kind] if kind else self.rich_style)
            for char, kind in zip(cells, kinds, strict=True)
        ]
        return Strip(Segment.simplify(segments), AXIS_WIDTH + plot_w)

    def _times(self, data: ChartData, plot_w: int, axis: Style) -> Strip:
        """Elapsed time at the start, the middle and the end of the plot."""
        span = data.end - data.start
        labels = [(0, elapsed(0)), (plot_w // 2, elapsed(span / 2)), (plot_w, elapsed(span))]
        segments = [Segment(" " * AXIS_WIDTH, self.rich_style)]
        used = 0
        for index, (at, label) in enumerate(labels):
            start = min(max(used, at - len(label) // 2), plot_w - len(label))
            if index == len(labels) - 1:
                start = plot_w - len(label)
            if start < used or start + len(label) > plot_w:
                continue  # too narrow for this label
            # Each label its own segment: spaces between labels are positions, not text.
            segments.append(Segment(" " * (start - used), self.rich_style))
            segments.append(Segment(label, axis))
            used = start + len(label)
        return Strip(segments).crop_extend(0, AXIS_WIDTH + plot_w, self.rich_style)


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def _line(
    start: tuple[int, int, float],
    end: tuple[int, int, float],
    dot: Callable[[int, int, float], None],
) -> None:
    """Bresenham from start to end; each dot carries the pressure of the nearer end."""
    x0, y0, p0 = start
    x1, y1, p1 = end
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    steps = max(dx, -dy)
    for step in range(steps + 1):
        dot(x0, y0, p0 if step * 2 < steps else p1)
        if x0 == x1 and y0 == y1:
            break
        doubled = 2 * err
        if doubled >= dy:
            err += dy
            x0 += sx
        if doubled <= dx:
            err += dx
            y0 += sy
