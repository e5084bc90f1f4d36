"""A line chart of context over time for the benchmark arms, as a standalone SVG.

Written by hand rather than with a plotting library: a few polylines and labels are all
the report needs, and the benchmark should not pull a plotting stack into the package.
The y axis stops a little above the 200,000-token window so the arms that live in it can
be read; a line that leaves the chart (the 1M-window arm) is labelled with its peak.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 920, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 230, 30, 50


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    points: Sequence[tuple[int, int]]
    """(request number, prompt tokens)."""
    note: str = ""


@dataclass(frozen=True)
class Level:
    label: str
    tokens: int
    dashed: bool = True


def context_chart(
    series: Sequence[Series], levels: Sequence[Level], *, y_max: int, title: str
) -> str:
    x_max = max((x for s in series for x, _ in s.points), default=1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + plot_w * x / max(x_max, 1)

    def py(y: float) -> float:
        return TOP + plot_h * (1 - min(y, y_max) / y_max)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    step = _tick_step(y_max)
    for tick in range(0, y_max + 1, step):
        y = py(tick)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#eeeeee"/>'
        )
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick // 1000}K</text>'
        )
    for tick in range(0, x_max + 1, _tick_step(x_max)):
        x = px(tick)
        parts.append(
            f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{tick}</text>'
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 12}" text-anchor="middle">'
        "model requests, in order</text>"
    )
    parts.append(
        f'<text x="16" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2})">context (prompt tokens)</text>'
    )
    for level in levels:
        y = py(level.tokens)
        dash = ' stroke-dasharray="5 4"' if level.dashed else ""
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" '
            f'stroke="#888888"{dash}/>'
        )
        parts.append(
            f'<text x="{LEFT + plot_w - 4}" y="{y - 4:.1f}" text-anchor="end" fill="#555555">'
            f"{escape(level.label)}</text>"
        )
    parts.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#444444"/>'
    )
    for index, one in enumerate(series):
        shown = _clip(one.points, y_max)
        if shown:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in shown)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{one.colour}" '
                'stroke-width="2" stroke-linejoin="round"/>'
            )
        if len(shown) < len(one.points):
            exit_x, _ = shown[-1]
            parts.append(
                f'<text x="{px(exit_x) + 6:.1f}" y="{TOP + 14}" fill="{one.colour}">'
                f"{escape(one.label)} goes on to {max(y for _, y in one.points) // 1000}K"
                "</text>"
            )
        parts += _legend(one, index, legend_x=LEFT + plot_w + 16)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _legend(one: Series, index: int, *, legend_x: float) -> list[str]:
    """The series' entry in the legend right of the plot, the `index`-th from the top: its
    colour, its label in bold, and its note under it."""
    legend_y = TOP + 14 + index * 38
    parts = [
        f'<line x1="{legend_x}" y1="{legend_y - 4}" x2="{legend_x + 22}" '
        f'y2="{legend_y - 4}" stroke="{one.colour}" stroke-width="3"/>',
        f'<text x="{legend_x + 28}" y="{legend_y}" font-weight="bold">{escape(one.label)}</text>',
    ]
    if one.note:
        parts.append(
            f'<text x="{legend_x + 28}" y="{legend_y + 15}" fill="#555555">'
            f"{escape(one.note)}</text>"
        )
    return parts


def _clip(points: Sequence[tuple[int, int]], y_max: int) -> list[tuple[float, float]]:
    """The points up to where the line leaves the chart, ending on its top edge."""
    shown: list[tuple[float, float]] = []
    for x, y in points:
        if y <= y_max:
            shown.append((x, y))
            continue
        if shown:
            x0, y0 = shown[-1]
            shown.append((x0 + (x - x0) * (y_max - y0) / (y - y0), y_max))
        break
    return shown


def _tick_step(span: int) -> int:
    """The smallest round step (1, 2 or 5 times a power of ten) giving at most ten ticks."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if span / (step * scale) <= 10:
                return step * scale
        scale *= 10


def growth_chart(
    series: dict[str, Sequence[tuple[int, float]]],
    colours: dict[str, str],
    *,
    title: str,
) -> str:
    """Cost per step against the task's length (x on a log scale: 1x, 4x, 16x), one line
    per arm, each point labelled with its value."""
    lengths = sorted({x for values in series.values() for x, _ in values}) or [1]
    top = max((y for values in series.values() for _, y in values), default=1.0)
    y_max = _round_up(top * 1.1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    low, high = math.log(lengths[0]), math.log(lengths[-1])

    def px(x: float) -> float:
        if high == low:
            return LEFT + plot_w / 2
        return LEFT + 20 + (plot_w - 40) * (math.log(x) - low) / (high - low)

    def py(y: float) -> float:
        return TOP + plot_h * (1 - y / y_max)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    step = _tick_step(int(y_max))
    for tick in range(0, int(y_max) + 1, step):
        y = py(tick)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#eeeeee"/>'
        )
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick / 1000:g}K</text>'
        )
    for length in lengths:
        parts.append(
            f'<text x="{px(length):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{length}x</text>"
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 12}" text-anchor="middle">'
        "length of the task (steps, times the reader's 121)</text>"
    )
    parts.append(
        f'<text x="16" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2})">cache-adjusted cost per step</text>'
    )
    parts.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#444444"/>'
    )
    for index, (label, values) in enumerate(series.items()):
        colour = colours.get(label, "#000000")
        ordered = sorted(values)
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in ordered)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in ordered:
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
            parts.append(
                f'<text x="{px(x) + 5:.1f}" y="{py(y) - 5:.1f}" fill="{colour}" '
                f'font-size="10">{y / 1000:.1f}K</text>'
            )
        legend_y = TOP + 14 + index * 24
        legend_x = LEFT + plot_w + 16
        parts.append(
            f'<line x1="{legend_x}" y1="{legend_y - 4}" x2="{legend_x + 22}" '
            f'y2="{legend_y - 4}" stroke="{colour}" stroke-width="3"/>'
        )
        parts.append(f'<text x="{legend_x + 28}" y="{legend_y}">{escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _round_up(value: float) -> float:
    """A round number at or above `value` (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    scale = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * scale >= value:
            return float(step * scale)
    return float(10 * scale)
