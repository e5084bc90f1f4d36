"""What fills a window: one bar split into its parts, then each part with its tokens."""

from __future__ import annotations

from typing import ClassVar, Final

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from mala_tui.core.breakdown import WindowBreakdown
from mala_tui.core.text import tokens

PARTS: Final = ("system", "conversation", "digest", "shown", "masked", "free")
"""Component suffix of each of `WindowBreakdown.parts()`, in the same order."""
_BLOCK: Final = "\u2588"


def part_lines(data: WindowBreakdown) -> list[tuple[str, str]]:
    """(part, text) per legend line: tokens, share of the window, and what the part holds.
    The digest of folded steps has a line only once a fold has left one."""
    window = max(1, data.window)
    lines = []
    for kind, share in zip(PARTS, data.parts(), strict=True):
        if kind == "digest" and not (share.tokens or share.count):
            continue
        text = f"{share.label:<22} {tokens(share.tokens):>6}  {share.tokens / window:>4.0%}"
        if kind == "digest":
            text += f"  {share.count} step{'' if share.count == 1 else 's'} folded, after the task"
        elif kind == "masked":
            results = f"{share.count} result{'' if share.count == 1 else 's'}"
            text += f"  {results}; shown again they would take {tokens(data.masked_would_cost)}"
        lines.append((kind, text))
    sign = "+" if data.unattributed >= 0 else "-"
    check = (
        f"{'parts vs gauge':<22} {sign}{tokens(abs(data.unattributed)):>5}  "
        f"{data.error_fraction:>4.1%}  of {tokens(data.measured)} measured; "
        f"density {data.density:.2f}x chars/4 ({'fitted' if data.density_measured else 'assumed'})"
    )
    lines.append(("note", check))
    return lines


def bar_cells(data: WindowBreakdown, width: int) -> list[str]:
    """Which part each of `width` cells shows: the parts in order, sized by share of the window."""
    if width <= 0:
        return []
    total = max(1, data.window, data.attributed)
    cells: list[str] = []
    used = 0.0
    for kind, share in zip(PARTS, data.parts(), strict=True):
        used += share.tokens / total * width
        cells += [kind] * (round(used) - len(cells))
    return (cells + ["free"] * width)[:width]


class WindowBreakdownView(Widget):
    """A bar of the whole window split into its parts, and a legend line per part.

    Colours come from the theme through the component classes, one per part.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "breakdown--system",
        "breakdown--conversation",
        "breakdown--digest",
        "breakdown--shown",
        "breakdown--masked",
        "breakdown--free",
        "breakdown--note",
    }
    """
    | Class | Description |
    | :- | :- |
    | `breakdown--system` | System prompt and tool definitions. |
    | `breakdown--conversation` | Prompts, the agent's text and its tool calls. |
    | `breakdown--digest` | The digest of folded steps after the task. |
    | `breakdown--shown`, `breakdown--masked` | Tool results shown, and masked ones' placeholders. |
    | `breakdown--free` | The free part of the window. |
    | `breakdown--note` | How the parts compare with the measured figure. |
    """

    DEFAULT_CSS = """
    WindowBreakdownView {
        height: auto;
        & > .breakdown--system { color: $secondary; }
        & > .breakdown--conversation { color: $primary; }
        & > .breakdown--digest { color: $accent; }
        & > .breakdown--shown { color: $gauge-soft; }
        & > .breakdown--masked { color: $gauge-normal; }
        & > .breakdown--free { color: $foreground 15%; }
        & > .breakdown--note { color: $foreground-muted; }
    }
    """

    data: reactive[WindowBreakdown | None] = reactive(None, layout=True)
    """The breakdown drawn; None draws nothing."""

    def __init__(self, data: WindowBreakdown | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(WindowBreakdownView.data, data)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        # The bar, a blank line, then the legend: one line more once a fold left a digest.
        return 2 + len(part_lines(self.data)) if self.data is not None else 0

    def _style(self, kind: str) -> Style:
        return self.rich_style + self.get_component_rich_style(f"breakdown--{kind}", partial=True)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        data = self.data
        if data is None:
            return Strip.blank(width, self.rich_style)
        if y == 0:
            segments = [Segment(_BLOCK, self._style(kind)) for kind in bar_cells(data, width)]
            return Strip(Segment.simplify(segments), width)
        lines = part_lines(data)
        index = y - 2  # a blank line under the bar
        if not 0 <= index < len(lines):
            return Strip.blank(width, self.rich_style)
        kind, text = lines[index]
        style = self._style(kind)
        segments = [Segment(f"{_BLOCK} " if kind != "note" else "  ", style)]
        segments.append(Segment(text, self._style("note") if kind == "note" else self.rich_style))
        return Strip(segments).crop_extend(0, width, self.rich_style)
