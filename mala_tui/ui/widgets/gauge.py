"""A context window gauge: the fill, the soft and hard marks, the figures and their source."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from mala_tui.core.usage import Zone
from mala_tui.ui.drawing import GaugeReading, gauge_bar, gauge_figures


class ContextGauge(Widget):
    """Two lines: a bar filled to the context pressure with the thresholds marked, then figures.

    The zone is a CSS class (`-zone-normal`, `-zone-soft`, `-zone-hard`) and the
    stylesheet colours it from theme variables; the widget never picks a colour.
    It draws its own strips (`ui.drawing`, shared with the dashboard's cards), so
    an update repaints two lines and never re-lays out the screen.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "gauge--fill",
        "gauge--empty",
        "gauge--mark",
        "gauge--figures",
        "gauge--source",
    }
    """
    | Class | Description |
    | :- | :- |
    | `gauge--fill` | The used part of the window (coloured by zone). |
    | `gauge--empty` | The free part of the window. |
    | `gauge--mark` | The soft and hard threshold marks. |
    | `gauge--figures` | Percent and tokens used of the window. |
    | `gauge--source` | "exact" or "est.": where the figure came from. |
    """

    DEFAULT_CSS = """
    ContextGauge {
        height: 2;
        & > .gauge--fill { color: $gauge-normal; }
        &.-zone-soft > .gauge--fill { color: $gauge-soft; }
        &.-zone-hard > .gauge--fill { color: $gauge-hard; }
        & > .gauge--empty { color: $foreground 15%; }
        & > .gauge--mark { color: $gauge-mark; }
        & > .gauge--figures { color: $foreground; }
        &.-zone-soft > .gauge--figures { color: $gauge-soft; }
        &.-zone-hard > .gauge--figures { color: $gauge-hard; text-style: bold; }
        & > .gauge--source { color: $foreground-muted; }
    }
    """

    reading: reactive[GaugeReading | None] = reactive(None)
    """The figures shown; None draws an empty gauge (no usage yet)."""

    def __init__(
        self,
        reading: GaugeReading | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.set_reactive(ContextGauge.reading, reading)
        self._set_zone(reading.zone if reading else Zone.NORMAL)

    def watch_reading(self, old: GaugeReading | None, new: GaugeReading | None) -> None:
        zone = new.zone if new else Zone.NORMAL
        if old is None or old.zone != zone:
            self._set_zone(zone)

    def _set_zone(self, zone: Zone) -> None:
        for each in Zone:
            self.set_class(each == zone, f"-zone-{each}")

    def _styles(self) -> dict[str, Style]:
        return {
            "fill": self.get_component_rich_style("gauge--fill"),
            "empty": self.get_component_rich_style("gauge--empty"),
            "mark": self.get_component_rich_style("gauge--mark"),
            "figures": self.get_component_rich_style("gauge--figures"),
            "source": self.get_component_rich_style("gauge--source"),
            "base": self.rich_style,
        }

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return gauge_bar(self.reading, width, self._styles())
        if y == 1:
            return gauge_figures(self.reading, width, self._styles())
        return Strip.blank(width, self.rich_style)
