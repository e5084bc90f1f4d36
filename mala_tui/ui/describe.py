"""The event log's line for an event: its type, then the one describer's summary, literally."""

from __future__ import annotations

from rich.text import Text

from mala_tui.core import events as ev
from mala_tui.core.describe import summary
from mala_tui.core.text import clean
from mala_tui.ui.format import elapsed

TYPE_WIDTH = 20


def log_line(event: ev.Event, start: float) -> Text:
    """`+m:ss  type                summary` with the type styled; the summary is literal."""
    line = Text(no_wrap=True, overflow="ellipsis", end="")
    line.append(f"+{elapsed(event.at - start):>7}  ", style="dim")
    line.append(event.type.ljust(TYPE_WIDTH), style="bold")
    line.append(clean(summary(event), one_line=True))
    return line


def matches(event: ev.Event, kind: str | None, text: str) -> bool:
    """The event log's filter: an event type (None for any) and words in the line. A call's
    usage is said once, with its output: the figure as the call opened (the journal keeps
    it, for the gauge) would be the same line again but for the output."""
    if isinstance(event, ev.UsageRecorded) and event.call_started:
        return False
    if kind is not None and event.type != kind:
        return False
    if not text:
        return True
    haystack = f"{event.type} {summary(event)}".lower()
    return all(word in haystack for word in text.lower().split())
