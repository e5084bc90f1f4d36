"""A session's card on the dashboard: name, task, state, context gauge, counters, trend."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar, Final

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from mala_tui.core.actions import EndStatus
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.subagents import SubagentGauge
from mala_tui.core.text import ELLIPSIS, clean, plural, tokens
from mala_tui.core.usage import UsageSource, Zone, zone_of
from mala_tui.ui.drawing import GaugeReading, gauge_bar, gauge_figures, trend_blocks
from mala_tui.ui.format import cache_text, state_label
from mala_tui.ui.subagents import card_gauges, card_summary, managed_text
from mala_tui.ui.text import literal
from mala_tui.ui.widgets.cost_panel import spend_summary

LINES: Final = ("task", "state", "bar", "figures", "counters", "trend")
"""What each content line of a card shows, top to bottom, for a session without subagents;
a gauge per live subagent, and a line counting the rest, come after "figures"."""
SUMMARY: Final = "subagents"
"""The line counting the subagents a card draws no gauge for (more running, finished)."""
SUBAGENT_TOKENS: Final = 5
"""Cells for a subagent's tokens at the right of its gauge ("123k", "1.2M")."""
SAYS_WHY: Final = frozenset({EndStatus.FAILED, EndStatus.STOPPED, EndStatus.DENIED})
"""Endings whose card shows the reason beside the state."""


def state_text(snapshot: SessionSnapshot) -> str:
    state = snapshot.state
    text = f"\u25cf {state_label(snapshot)}"
    if snapshot.pending_permissions:
        # The agent is held until someone answers: say so before anything else.
        many = f" ({snapshot.pending_permissions})" if snapshot.pending_permissions > 1 else ""
        text += f" \u00b7 waiting for permission{many}"
    elif snapshot.pending_approval is not None:
        text += f" \u00b7 checkpoint #{snapshot.pending_approval}"
    elif state in SAYS_WHY and snapshot.end_reason:
        text += f" \u00b7 {snapshot.end_reason}"
    elif snapshot.waiting_for and snapshot.status is None:
        text += f" \u00b7 waiting for {snapshot.waiting_for}"
    if snapshot.messages_waiting and snapshot.status is None:
        text += f" \u00b7 {plural(snapshot.messages_waiting, 'message')} to send"
    if snapshot.worktree_status is not None and snapshot.status is not None:
        # What is left of its work: the person's next step once it has ended.
        text += f" \u00b7 {snapshot.worktree_status.label}"
    if snapshot.mask_failures and not (state in SAYS_WHY and snapshot.end_reason):
        # The window is not managed as it should be: said on the card, not only in the log.
        times = f" {snapshot.mask_failures}x" if snapshot.mask_failures > 1 else ""
        text += f" \u00b7 mask failed{times}: {snapshot.mask_problem}"
    if snapshot.hosts_lost:
        # Its work since the last checkpoint was redone elsewhere: said on the card.
        times = f" {snapshot.hosts_lost}x" if snapshot.hosts_lost > 1 else ""
        text += f" \u00b7 host lost{times}: {snapshot.host_lost}"
    return text


def counters_text(snapshot: SessionSnapshot, now: float | None = None) -> str:
    """The card's counters; with `now`, a waiting session's cache's warm time first."""
    host = f" \u00b7 on {snapshot.host}" if snapshot.host else ""
    counters = (
        f"masked {snapshot.masked_session} ({snapshot.masked_total} all) \u00b7 "
        f"restarts {snapshot.restarts}/{snapshot.max_restarts} \u00b7 idle {snapshot.idle_retries}"
        f"{host}"
    )
    cache = cache_text(snapshot, now) if now is not None else ""
    # What waiting costs, before the counters: once cold, the next request writes the
    # whole prompt again.
    return f"{cache} \u00b7 {counters}" if cache else counters


class SessionCard(Widget, can_focus=True):
    """One session at a glance; focus it and press enter (or double-click) to open it.

    The card is a single widget drawing its lines itself (the gauges and the
    trend with `ui.drawing`, as `ContextGauge` does): with 50 busy sessions a
    card of child widgets cost several times more per update, most of it in
    compositing the children. An update repaints only the lines that changed.

    The state is a CSS class (`-state-running`, `-state-awaiting_approval`...)
    and the stylesheet colours the parts through the component classes below,
    from theme variables only. The zone picks between component classes
    (`card--fill`, `card--fill-soft`, `card--fill-hard`) instead of being a
    class of the card: in a busy run zones change often, and each class change
    re-applies the stylesheet to the card and its eleven component styles.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "card--task",
        "card--state",
        "card--counters",
        "card--fill",
        "card--fill-soft",
        "card--fill-hard",
        "card--empty",
        "card--mark",
        "card--figures",
        "card--figures-soft",
        "card--figures-hard",
        "card--source",
        "card--trend-normal",
        "card--trend-soft",
        "card--trend-hard",
        "card--subagent",
    }
    """
    | Class | Description |
    | :- | :- |
    | `card--task` | The session's task. |
    | `card--state` | Its state (running, masking, awaiting approval, done...). |
    | `card--counters` | Masked results, restarts, idle retries. |
    | `card--fill`, `card--empty`, `card--mark` | The gauge: used window, free window, thresholds. |
    | `card--fill-soft`, `card--fill-hard` | The used window in the soft and hard zones. |
    | `card--figures`, `card--source` | Percent and tokens; "exact" or "est.". |
    | `card--figures-soft`, `card--figures-hard` | The figures in the soft and hard zones. |
    | `card--trend-normal`, `-soft`, `-hard` | Trend samples by zone. |
    | `card--subagent` | A live subagent's label, and the count of the others. |
    """

    DEFAULT_CSS = """
    SessionCard {
        /* Six lines, and one per live subagent's gauge (get_content_height). */
        height: auto;
        padding: 0 1;
        border: round $foreground 25%;
        border-title-color: $foreground;
        border-title-style: bold;
        border-subtitle-color: $foreground-muted;
        background: $surface;
        /* Focus and state show in the border and the text only: the card keeps
           its resolved colours per theme, state and zone, so its background
           must not change with them. */
        &:focus {
            border: heavy $primary;
            border-title-color: $primary;
        }
        & > .card--task { color: $foreground-muted; }
        & > .card--state { color: $primary; }
        & > .card--counters { color: $foreground-muted; }
        & > .card--fill { color: $gauge-normal; }
        & > .card--fill-soft { color: $gauge-soft; }
        & > .card--fill-hard { color: $gauge-hard; }
        & > .card--empty { color: $foreground 15%; }
        & > .card--mark { color: $gauge-mark; }
        & > .card--figures { color: $foreground; }
        & > .card--figures-soft { color: $gauge-soft; }
        & > .card--figures-hard { color: $gauge-hard; text-style: bold; }
        & > .card--source { color: $foreground-muted; }
        & > .card--trend-normal { color: $gauge-normal 70%; }
        & > .card--trend-soft { color: $gauge-soft; }
        & > .card--trend-hard { color: $gauge-hard; }
        & > .card--subagent { color: $foreground-muted; }
        &.-state-masking > .card--state,
        &.-state-winding_down > .card--state,
        &.-state-checkpointing > .card--state,
        &.-state-restarting > .card--state { color: $warning; }
        &.-state-awaiting_approval {
            border: round $accent;
            & > .card--state { color: $accent; text-style: bold; }
        }
        &.-state-awaiting_approval:focus { border: heavy $accent; }
        &.-state-done > .card--state { color: $success; }
        &.-state-failed > .card--state,
        &.-state-denied > .card--state { color: $error; text-style: bold; }
        &.-state-paused > .card--state,
        &.-state-stopped > .card--state { color: $foreground-muted; text-style: italic; }
    }
    """

    snapshot: reactive[SessionSnapshot | None] = reactive(None, init=False, repaint=False)
    """The session as of the last update (the card repaints only the lines that changed)."""

    clock: Callable[[], float] = staticmethod(time.time)
    """Wall-clock seconds, as the events' times: what a waiting session's cache time is
    counted down against."""

    class Open(Message):
        """The user asked to open this session (double click); handled by `on_session_card_open`."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, snapshot: SessionSnapshot, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session_name = snapshot.name
        self.border_title = literal(snapshot.name, one_line=True)
        self._keys: dict[str, object] = {}
        self._subtitle = ""
        self._state = ""
        self._zone = ""
        self._palette: tuple[tuple[str, str, str], dict[str, Style]] | None = None
        self._counters_line = ""
        self._lines: tuple[str, ...] = LINES
        self._subagents: dict[str, SubagentGauge] = {}
        """The live subagents drawn, by line."""
        self._summary = ""
        self.set_reactive(SessionCard.snapshot, snapshot)
        self._show(snapshot)

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        """Once a second: a waiting session's cache time counts down on its own."""
        snap = self.snapshot
        if snap is not None and snap.waiting and snap.cache_warm_until is not None:
            self._show(snap)

    def watch_snapshot(self, new: SessionSnapshot | None) -> None:
        if new is not None:
            self._show(new)

    def _show(self, snap: SessionSnapshot) -> None:
        state, zone = snap.state, snap.zone
        if state != self._state:
            if self._state:
                self.remove_class(f"-state-{self._state}")
            self.add_class(f"-state-{state}")
            self._state = state
        self._zone = zone
        # The cost estimate sits in the bottom border: the six lines stay as they were.
        parts = [spend_summary(snap.spend)] if snap.spend.calls else []
        if snap.require_approval:
            parts.insert(0, "approval on")
        if snap.forked_from:
            parts.insert(0, f"fork of {snap.forked_from}")
        subtitle = clean(" \u00b7 ".join(parts), one_line=True)
        if self._subtitle != subtitle:
            self._subtitle = subtitle
            # A session's name is the user's: literal, never parsed as markup.
            self.border_subtitle = literal(subtitle, one_line=True)
        reading = GaugeReading.of(snap)
        self._counters_line = counters_text(snap, self.clock())
        self._subagents = {
            f"subagent-{index}": gauge for index, gauge in enumerate(card_gauges(snap))
        }
        self._summary = card_summary(snap)
        keys: dict[str, object] = {
            "task": snap.task,
            "state": (state, state_text(snap)),
            "bar": reading,
            "figures": reading,
            **{
                line: (gauge.label, gauge.tokens, reading.window, reading.soft, reading.hard)
                for line, gauge in self._subagents.items()
            },
            **({SUMMARY: self._summary} if self._summary else {}),
            "counters": self._counters_line,
            "trend": (snap.trend, snap.soft_threshold, snap.hard_threshold),
        }
        lines = tuple(keys)
        resized = lines != self._lines
        changed = [y for y, line in enumerate(lines) if self._keys.get(line) != keys[line]]
        self._keys, self._lines = keys, lines
        if resized and self.is_mounted:
            # A subagent started or ended: the card grows or shrinks by a line, the grid's
            # row with it (a layout, as rare as subagents come and go).
            self.refresh(layout=True)
        elif changed and self.is_mounted:
            width = self.size.width
            if len(changed) == len(lines):
                self.refresh()
            else:
                self.refresh(*(Region(0, y, width, 1) for y in changed))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Its lines: six, and one per subagent gauge and their count (the grid's rows are
        as tall as their tallest card)."""
        return len(self._lines)

    # -- drawing -----------------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._palette = None

    def _styles(self) -> dict[str, Style]:
        """Resolved styles of the parts, worked out once per theme, state and zone.

        Textual resolves them again on every repaint, walking every ancestor; a
        busy dashboard repaints many cards a second, so they are kept until one
        of the three changes.
        """
        key = (self.app.theme, self._state, self._zone)
        suffix = "" if self._zone == Zone.NORMAL else f"-{self._zone}"
        if self._palette is None or self._palette[0] != key:
            get = self.get_component_rich_style
            styles: dict[str, Style] = {
                "base": self.rich_style,
                "task": get("card--task"),
                "state": get("card--state"),
                "counters": get("card--counters"),
                "fill": get(f"card--fill{suffix}"),
                "empty": get("card--empty"),
                "mark": get("card--mark"),
                "figures": get(f"card--figures{suffix}"),
                "source": get("card--source"),
                **{zone: get(f"card--trend-{zone}") for zone in Zone},
                # A subagent's gauge has a zone of its own, whatever the session's.
                "subagent": get("card--subagent"),
                **{
                    f"fill-{zone}": get(
                        "card--fill" if zone == Zone.NORMAL else f"card--fill-{zone}"
                    )
                    for zone in Zone
                },
                **{
                    f"figures-{zone}": get(
                        "card--figures" if zone == Zone.NORMAL else f"card--figures-{zone}"
                    )
                    for zone in Zone
                },
            }
            self._palette = (key, styles)
        return self._palette[1]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        styles = self._styles()
        snap = self.snapshot
        if snap is None or not 0 <= y < len(self._lines) or width <= 0:
            return Strip.blank(width, styles["base"])
        line = self._lines[y]
        if line in self._subagents:
            return _subagent_line(
                self._subagents[line],
                GaugeReading.of(snap),
                width,
                styles,
                snap.subagent_thresholds,
            )
        if line == SUMMARY:
            return _text_line(self._summary, width, styles["subagent"], styles["base"])
        if line == "bar":
            return gauge_bar(GaugeReading.of(snap), width, styles)
        if line == "figures":
            return gauge_figures(GaugeReading.of(snap), width, styles)
        if line == "trend":
            return trend_blocks(snap.trend, width, snap.soft_threshold, snap.hard_threshold, styles)
        if line == "task":
            return _text_line(snap.task or "(no task)", width, styles["task"], styles["base"])
        if line == "state":
            return _text_line(state_text(snap), width, styles["state"], styles["base"])
        return _text_line(self._counters_line, width, styles["counters"], styles["base"])

    def on_click(self, event: events.Click) -> None:
        if event.chain >= 2:
            self.post_message(self.Open(self.session_name))


def _subagent_line(
    gauge: SubagentGauge,
    session: GaugeReading,
    width: int,
    styles: dict[str, Style],
    marks: tuple[float, float] | None = None,
) -> Strip:
    """A live subagent: its label shortened (with what mala-tui did to its window), a bar
    of its window against the session's with the subagents' marks (`[context.subagents]`;
    the session's own when those are not known), its tokens; the label alone if narrow."""
    label_width = max(8, width // 2)
    bar_width = width - label_width - 1 - SUBAGENT_TOKENS
    label = clean(gauge.label, one_line=True) + managed_text(gauge)
    if bar_width < 6:
        return _text_line(label, width, styles["subagent"], styles["base"])
    if cell_len(label) > label_width - 1:
        label = set_cell_size(label, label_width - 2) + ELLIPSIS
    soft, hard = marks if marks is not None else (session.soft, session.hard)
    reading = GaugeReading(
        gauge.tokens,
        session.window,
        soft,
        hard,
        UsageSource.PER_CALL,  # read from its transcript: every call's usage, exact
        zone_of(gauge.tokens / session.window if session.window > 0 else 0.0, soft, hard),
    )
    bar = gauge_bar(
        reading,
        bar_width,
        {**styles, "fill": styles[f"fill-{reading.zone}"]},
    )
    figures = tokens(gauge.tokens).rjust(SUBAGENT_TOKENS)
    segments = [
        Segment(set_cell_size(label, label_width), styles["subagent"]),
        *bar,
        Segment(" ", styles["base"]),
        Segment(figures, styles[f"figures-{reading.zone}"]),
    ]
    return Strip(segments).crop_extend(0, width, styles["base"])


def _text_line(text: str, width: int, style: Style, base: Style) -> Strip:
    """One line of literal text, cut with an ellipsis when it does not fit."""
    shown = clean(text, one_line=True)
    if cell_len(shown) > width:
        shown = set_cell_size(shown, max(0, width - 1)) + ELLIPSIS
    return Strip([Segment(shown, style)]).crop_extend(0, width, base)
