"""A session's spend beside its context chart: cost so far over time, cache hits, tokens by kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from mala_tui.core.budget import BudgetCheck, Reading
from mala_tui.core.pricing import Spend, format_cost
from mala_tui.core.text import tokens
from mala_tui.core.view import SessionState
from mala_tui.ui.timeline import session_start

ESTIMATE_NOTE = "estimate, list prices"
"""How every cost figure in the app is labelled: not a bill."""
_EIGHTHS = " \u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"


@dataclass(frozen=True, slots=True)
class CostData:
    """What the panel shows: the spend, the model, and cost so far at each usage report."""

    spend: Spend
    model: str | None
    points: tuple[tuple[float, float], ...]
    start: float = 0.0
    end: float = 0.0
    budget: BudgetCheck | None = None
    """Where the session stands against its own budget, when it has one."""

    @classmethod
    def of(cls, state: SessionState, budget: BudgetCheck | None = None) -> CostData:
        points = tuple(
            (point.at, point.cost_usd) for point in state.costs if point.cost_usd is not None
        )
        start = session_start(state)
        end = max([state.updated_at, *(at for at, _ in points)])
        return cls(state.spend, state.model, points, start, end, budget)


def spend_summary(spend: Spend) -> str:
    """ "$0.42 est · 91% cached", the short form the cards use; "no price" when unpriced."""
    rate = spend.cache_hit_rate
    cached = "" if rate is None else f" \u00b7 {rate * 100:.0f}% cached"
    cost = format_cost(spend.cost_usd)
    return (f"{cost} est" if spend.priced else cost) + cached


def cost_columns(data: CostData, width: int, rows: int) -> list[str]:
    """Cost so far against time as block columns, top row first; empty when nothing was spent."""
    if not data.points or width <= 0 or rows <= 0:
        return []
    top = max(cost for _, cost in data.points)
    if top <= 0:
        return []
    span = max(data.end - data.start, 1e-9)
    heights = [0.0] * width
    for at, cost in data.points:  # cost so far only grows: the last point of a column is its top
        col = min(width - 1, max(0, int((at - data.start) / span * width)))
        heights[col] = max(heights[col], cost / top)
    for col in range(1, width):  # spend never falls: carry it across columns without a report
        heights[col] = max(heights[col], heights[col - 1])
    lines = []
    for row in range(rows):
        floor = (rows - 1 - row) / rows
        line = ""
        for height in heights:
            eighths = round(max(0.0, min(1.0, (height - floor) * rows)) * 8)
            line += _EIGHTHS[eighths]
        lines.append(line)
    return lines


def budget_short(reading: Reading) -> str:
    """One limit in a few characters: "$0.42/$5 8%", "12/50 turns 24%", "3/30 min 10%"."""
    used, allowed = reading.used, reading.allowed
    if reading.limit == "max_cost_usd":
        figures = f"${used:.2f}/${allowed:g}"
    elif reading.limit == "max_turns":
        figures = f"{used:.0f}/{allowed:.0f} turns"
    else:
        figures = f"{used:.1f}/{allowed:g} min"
    return f"{figures} {reading.fraction:.0%}"


class CostPanel(Widget):
    """The session's cost so far (an estimate at list prices), cache-hit rate and tokens."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "cost--title",
        "cost--figure",
        "cost--note",
        "cost--plot",
    }
    """
    | Class | Description |
    | :- | :- |
    | `cost--title` | "Cost" and what it is an estimate of. |
    | `cost--figure` | The cost and the cache-hit rate. |
    | `cost--note` | Tokens by kind, the model. |
    | `cost--plot` | Cost so far over time. |
    """

    DEFAULT_CSS = """
    CostPanel {
        width: 33;
        height: 12;
        padding: 0 1;
        & > .cost--title { color: $foreground; text-style: bold; }
        & > .cost--figure { color: $primary; text-style: bold; }
        & > .cost--note { color: $foreground-muted; }
        & > .cost--plot { color: $accent; }
    }
    """

    data: reactive[CostData | None] = reactive(None)
    """The spend to show; None shows an empty panel."""

    def __init__(self, data: CostData | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(CostPanel.data, data)

    def render(self) -> Text:
        data = self.data
        style = self.get_component_rich_style
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("Cost", style("cost--title"))
        text.append(f" ({ESTIMATE_NOTE})\n", style("cost--note"))
        if data is None:
            return text
        spend = data.spend
        rate = spend.cache_hit_rate
        text.append(format_cost(spend.cost_usd), style("cost--figure"))
        if spend.cost_usd is None:
            text.append(f" for {data.model or 'an unnamed model'}", style("cost--note"))
        text.append("\n")
        text.append(
            "cache hits " + ("-" if rate is None else f"{rate * 100:.0f}%"), style("cost--figure")
        )
        calls = f"{spend.calls} call{'' if spend.calls == 1 else 's'}"
        text.append(f" \u00b7 {calls}\n", style("cost--note"))
        text.append(
            f"in {tokens(spend.input_tokens)} \u00b7 write {tokens(spend.cache_write_tokens)}\n"
            f"read {tokens(spend.cache_read_tokens)} \u00b7 out {tokens(spend.output_tokens)}\n",
            style("cost--note"),
        )
        budget_lines = [budget_short(r) for r in data.budget.readings] if data.budget else []
        for line in budget_lines:
            text.append(f"budget {line}\n", style("cost--note"))
        width = self.size.width
        plot_rows = max(0, self.size.height - 6 - len(budget_lines))
        for line in cost_columns(data, width, plot_rows):
            text.append(line + "\n", style("cost--plot"))
        text.rstrip()
        return text
