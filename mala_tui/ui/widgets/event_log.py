"""A session's event log, filterable by event type and by words in the line."""

from __future__ import annotations

from collections.abc import Iterable

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, RichLog, Select

from mala_tui.core import events as ev
from mala_tui.core.view import LOG_LINES
from mala_tui.ui.describe import log_line, matches


class EventLog(Vertical):
    """Filter inputs over a log of one line per event; new events append live.

    Lines are `rich.text.Text` built from the events, so tool output and error
    messages quoted in them are shown literally.
    """

    DEFAULT_CSS = """
    EventLog {
        height: 1fr;
        & > #event-filters { height: auto; }
        & #event-text { width: 1fr; }
        & #event-type { width: 30; }
        & > RichLog { height: 1fr; background: $surface; }
    }
    """

    def __init__(
        self, events: Iterable[ev.Event] = (), *, start: float = 0.0, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.start = start
        self._events: list[ev.Event] = list(events)[-LOG_LINES:]

    def compose(self) -> ComposeResult:
        kinds = sorted(ev.EVENT_TYPES)
        with Horizontal(id="event-filters"):
            yield Input(placeholder="filter: words in the line", id="event-text")
            yield Select([(kind, kind) for kind in kinds], prompt="any event type", id="event-type")
        yield RichLog(max_lines=LOG_LINES, wrap=False, markup=False, highlight=False)

    def on_mount(self) -> None:
        self._rewrite()

    @property
    def kind(self) -> str | None:
        value = self.query_one("#event-type", Select).value
        return value if isinstance(value, str) else None

    @property
    def text(self) -> str:
        return self.query_one("#event-text", Input).value

    def shown(self) -> list[ev.Event]:
        """The events the filters let through, oldest first."""
        kind, text = self.kind, self.text
        return [event for event in self._events if matches(event, kind, text)]

    def add(self, events: Iterable[ev.Event]) -> None:
        """Append newly recorded events (live runs), keeping the filters."""
        fresh = list(events)
        self._events.extend(fresh)
        if len(self._events) > LOG_LINES:
            del self._events[: len(self._events) - LOG_LINES]
        kind, text = self.kind, self.text
        log = self.query_one(RichLog)
        for event in fresh:
            if matches(event, kind, text):
                self._write(log, event)

    @on(Input.Changed, "#event-text")
    @on(Select.Changed, "#event-type")
    def _filters_changed(self) -> None:
        self._rewrite()

    def _rewrite(self) -> None:
        log = self.query_one(RichLog)
        log.clear()
        for event in self.shown():
            self._write(log, event)

    def _write(self, log: RichLog, event: ev.Event) -> None:
        line = log_line(event, self.start)
        # At its own width: a long line scrolls sideways instead of being cut.
        log.write(line, width=max(line.cell_len, 1))
