"""The dashboard: a card per session, reflowing in a grid, sorted and filtered, updated live."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Final, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.events import Resize
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from mala_tui.core.actions import EndStatus
from mala_tui.core.phases import Phase
from mala_tui.core.pricing import total_spend
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.text import clean, plural
from mala_tui.core.usage import Zone
from mala_tui.ui.format import phase_label, run_status
from mala_tui.ui.keys import app_keys
from mala_tui.ui.services import Services
from mala_tui.ui.session_action_table import ActionId, session_bindings
from mala_tui.ui.subagents import counts as subagent_counts
from mala_tui.ui.text import literal
from mala_tui.ui.widgets.approval_badge import ApprovalBadge
from mala_tui.ui.widgets.cost_panel import spend_summary
from mala_tui.ui.widgets.session_card import SessionCard

CARD_WIDTH: Final = 44
"""A card's narrowest width: the grid fits as many columns of it as the screen allows."""
SORTS: Final = ("name", "pressure", "state")
ZONE_FILTERS: Final[tuple[Zone | None, ...]] = (None, *Zone)
"""What `z` cycles through: every zone (None), then each zone alone."""
STATE_ORDER: Final[tuple[Phase | EndStatus, ...]] = (
    Phase.AWAITING_APPROVAL,
    EndStatus.FAILED,
    EndStatus.DENIED,
    Phase.WINDING_DOWN,
    Phase.CHECKPOINTING,
    Phase.RESTARTING,
    Phase.MASKING,
    Phase.RUNNING,
    Phase.PAUSED,
    EndStatus.STOPPED,
    EndStatus.DONE,
)
"""Sorting by state puts what needs a person first and what is over last."""
REPAINT_SECONDS: Final = 1.0
"""A card's gauge and trend repaint at most this often (a monitor's pace: htop's is 1.5 s);
a change of state (masking, awaiting approval, ended...) shows at once. Repainting a card
costs about half a millisecond, most of it Textual's compositing: 50 cards at 4 updates a
second, each repainted on every update, would take a fifth of a core."""
REPAINT_SLOTS: Final = 2
"""Cards take turns, a slot per tick of REPAINT_SECONDS / REPAINT_SLOTS, so a busy run
costs several short frames instead of one long one (event-loop lag stays low)."""
RESORT_SECONDS: Final = 2.0
"""A live sort by pressure or state is redone this often, not on every update: cards that
jumped on every token would be impossible to follow or click."""


def sort_key(sort_by: str, snap: SessionSnapshot) -> tuple[float | int | str, ...]:
    if sort_by == "pressure":
        return (-snap.pressure, snap.name)
    if sort_by == "state":
        state = snap.state
        rank = STATE_ORDER.index(state) if state in STATE_ORDER else len(STATE_ORDER)
        return (rank, -snap.pressure, snap.name)
    return (snap.name,)


def matches(snap: SessionSnapshot, zone: Zone | None, text: str) -> bool:
    """The dashboard's filter: a zone (None for any) and words found in name, task or state."""
    if zone is not None and zone != snap.zone:
        return False
    haystack = f"{snap.name} {snap.task} {phase_label(snap.state)}".lower()
    return all(word in haystack for word in text.lower().split())


def _state_changed(before: SessionSnapshot | None, after: SessionSnapshot) -> bool:
    """Whether a card must show this update at once rather than at the next repaint."""
    if before is None:
        return True
    return (
        before.state != after.state
        or before.pending_approval != after.pending_approval
        or before.require_approval != after.require_approval
        or before.messages_waiting != after.messages_waiting
        or before.pending_permissions != after.pending_permissions
        or before.worktree_status != after.worktree_status
        # A subagent started or ended: its card changes height, and says so at once.
        or subagent_counts(before) != subagent_counts(after)
    )


class DashboardScreen(Screen[None]):
    """Every session of the run at a glance; the focused card is what the keys act on."""

    # Absolute, so subclasses defined elsewhere find it too.
    CSS_PATH = str(Path(__file__).with_name("dashboard.tcss"))
    # Focus belongs to the cards (the keys act on the focused one), never to the
    # filter until "/" is pressed: cards of a live run arrive after the screen mounts.
    AUTO_FOCUS = ""
    BINDINGS: ClassVar[list[BindingType]] = [
        # The footer keeps this order and cuts at its right edge: what matters first.
        *session_bindings(ActionId.OPEN),
        *app_keys(),
        *session_bindings(ActionId.LAND, ActionId.DISCARD),
        *session_bindings(
            ActionId.SAY,
            ActionId.PAUSE,
            ActionId.STOP,
            ActionId.MASK,
            ActionId.RESTART,
            ActionId.APPROVAL,
        ),
        Binding("V", "approval_all", "Approval for all", show=False),
        *session_bindings(
            ActionId.CHECKPOINTS, ActionId.MANAGE, ActionId.TRANSCRIPT, ActionId.CANCEL, show=False
        ),
        *session_bindings(ActionId.FORK, ActionId.BY_HAND, show=False),
        Binding("slash", "filter", "Filter"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("z", "cycle_zone", "Zone", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("left", "move(-1, 0)", "Left", show=False),
        Binding("right", "move(1, 0)", "Right", show=False),
        Binding("up", "move(0, -1)", "Up", show=False),
        Binding("down", "move(0, 1)", "Down", show=False),
    ]

    sort_by: reactive[str] = reactive("name")
    """One of SORTS."""
    zone: reactive[Zone | None] = reactive(None)
    """One of ZONE_FILTERS: only sessions in this zone are shown (None: every zone)."""
    text_filter: reactive[str] = reactive("")
    """Words that must appear in a card's name, task or state."""

    card_class: ClassVar[type[SessionCard]] = SessionCard
    """What a session's card is made of (the benchmark swaps in a naive one to compare)."""
    repaint_seconds: ClassVar[float] = REPAINT_SECONDS
    """How often gauges and trends repaint; 0 repaints on every update."""

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services
        self._cards: dict[str, SessionCard] = {}
        self._order: list[str] = []
        self._texts: dict[str, str] = {}
        self._pending: dict[str, SessionSnapshot] = {}
        self._tick = 0
        self._counts = ""
        self._slots: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        with Horizontal(id="topbar"):
            yield Static(id="summary")
            yield ApprovalBadge(self.services)
        with Horizontal(id="toolbar"):
            yield Input(placeholder="/ filter by name, task or state", id="filter")
            yield Static(id="order")
        with VerticalScroll(id="cards", can_focus=False):
            yield Grid(id="grid")
        yield Static(id="empty")
        yield Footer()

    async def on_mount(self) -> None:
        await self.add_cards(list(self.services.controller.snapshots().values()))
        self.services.bridge.snapshots.subscribe(self, self._on_snapshots)
        # One timer for every periodic repaint, so they share frames.
        self.set_interval((self.repaint_seconds or REPAINT_SECONDS) / REPAINT_SLOTS, self._repaint)
        self._update_order_label()
        self._focus_first()

    # -- cards -------------------------------------------------------------------------------------

    @property
    def cards(self) -> list[SessionCard]:
        """The cards in the order shown, hidden ones included."""
        return [self._cards[name] for name in self._order]

    def card(self, name: str) -> SessionCard | None:
        """The card of the session with this name."""
        return self._cards.get(name)

    def focused_session(self) -> str | None:
        focused = self.focused
        return focused.session_name if isinstance(focused, SessionCard) else None

    async def add_cards(self, snapshots: list[SessionSnapshot]) -> None:
        fresh = [self.card_class(snap) for snap in snapshots if snap.name not in self._cards]
        if not fresh:
            return
        for card in fresh:
            self._slots[card.session_name] = len(self._cards) % REPAINT_SLOTS
            self._cards[card.session_name] = card
            card.display = self._shows(card)
        await self.query_one("#grid", Grid).mount_all(fresh)
        self._resort(force=True)
        self._update_counts()
        if self.focused is None:
            self._focus_first()

    def _on_snapshots(self, changed: dict[str, SessionSnapshot]) -> None:
        unknown = [snap for name, snap in changed.items() if name not in self._cards]
        urgent = False
        for name, snap in changed.items():
            card = self._cards.get(name)
            if card is None:
                continue
            if not self.repaint_seconds or _state_changed(card.snapshot, snap):
                self._pending.pop(name, None)
                self._apply(card, snap)
                urgent = True
            else:
                self._pending[name] = snap
        if unknown:
            self.run_worker(self.add_cards(unknown), group="add-cards")
        if urgent:
            self._update_counts()

    def _repaint(self) -> None:
        """Show this slot's changed gauges and trends; now and then re-sort; tick the clock."""
        self._tick += 1
        slot = self._tick % REPAINT_SLOTS
        due = [name for name in self._pending if self._slots[name] == slot]
        for name in due:
            self._apply(self._cards[name], self._pending.pop(name))
        interval = (self.repaint_seconds or REPAINT_SECONDS) / REPAINT_SLOTS
        if self._tick * interval >= RESORT_SECONDS:
            self._tick = 0
            self._resort()
        self._update_counts()

    def _apply(self, card: SessionCard, snap: SessionSnapshot) -> None:
        card.snapshot = snap
        shown = self._shows(card)
        if card.display != shown:
            card.display = shown

    def _shows(self, card: SessionCard) -> bool:
        snap = card.snapshot
        return snap is not None and matches(snap, self.zone, self.text_filter)

    def _resort(self, force: bool = False) -> None:
        if not force and self.sort_by == "name":
            return  # names do not change: the order already holds
        sort_by = self.sort_by

        def key(name: str) -> tuple[float | int | str, ...]:
            snap = self._cards[name].snapshot
            return sort_key(sort_by, snap) if snap is not None else (name,)

        order = sorted(self._cards, key=key)
        if order != self._order:
            self._order = order
            rank = {name: index for index, name in enumerate(order)}
            grid = self.query_one("#grid", Grid)
            grid.sort_children(
                key=lambda widget: rank.get(cast("SessionCard", widget).session_name, 0)
            )

    def _apply_filters(self) -> None:
        for card in self._cards.values():
            shown = self._shows(card)
            if card.display != shown:
                card.display = shown
        self._update_counts()
        focused = self.focused
        if isinstance(focused, SessionCard) and not focused.display:
            self._focus_first()

    def _focus_first(self) -> None:
        visible = [card for card in self.cards if card.display]
        if visible:
            visible[0].focus()

    # -- the bars around the grid ------------------------------------------------------------------

    def _set_text(self, widget_id: str, text: str) -> None:
        if self._texts.get(widget_id) != text:
            self._texts[widget_id] = text
            # These labels have fixed sizes: no layout pass (over a hundred cards it
            # costs more than a frame) is needed when their text changes.
            self.query_one(f"#{widget_id}", Static).update(
                literal(text, one_line=True), layout=False
            )

    def _update_summary(self) -> None:
        controller = self.services.controller
        state = controller.state
        run = f" \u00b7 run {state.run_id}" if state.run_id else ""
        gone = controller.supervisor is not None and not controller.live
        status = run_status(state, self.services.now(), live=controller.live, gone=gone)
        title = f"mala-tui{run} \u00b7 {status}"
        summary = Text(title, style="bold")
        summary.append("   ")
        summary.append(self._counts, style="dim")
        if self._texts.get("summary-text") != summary.plain:
            self._texts["summary-text"] = summary.plain
            self.query_one("#summary", Static).update(summary, layout=False)

    def _update_counts(self) -> None:
        snaps = [card.snapshot for card in self._cards.values() if card.snapshot is not None]
        zones = {
            zone: sum(1 for s in snaps if s.zone == zone and s.status is None) for zone in Zone
        }
        ended = sum(1 for s in snaps if s.status is not None)
        shown = sum(1 for card in self._cards.values() if card.display)
        parts = [plural(len(snaps), "session")]
        parts += [f"{count} {zone}" for zone, count in zones.items() if count]
        if ended:
            parts.append(f"{ended} ended")
        if shown != len(snaps):
            parts.append(f"{shown} shown")
        spend = total_spend(s.spend for s in snaps)
        if spend.calls:
            parts.append(f"run {spend_summary(spend)}")
        self._counts = clean(" \u00b7 ".join(parts), one_line=True)
        self._update_summary()
        if not snaps:
            empty = "No sessions yet."
        elif shown == 0:
            empty = "No session matches the filter (escape clears it)."
        else:
            empty = ""
        self._set_text("empty", empty)
        self.query_one("#empty").display = bool(empty)

    def _update_order_label(self) -> None:
        self._set_text("order", f"sort: {self.sort_by} (s) \u00b7 zone: {self.zone or 'all'} (z)")

    def on_resize(self, event: Resize) -> None:
        columns = max(1, event.size.width // CARD_WIDTH)
        grid = self.query_one("#grid", Grid)
        if grid.styles.grid_size_columns != columns:
            grid.styles.grid_size_columns = columns

    # -- reactives ---------------------------------------------------------------------------------

    def watch_sort_by(self) -> None:
        if self.is_mounted:
            self._resort(force=True)
            self._update_order_label()

    def watch_zone(self) -> None:
        if self.is_mounted:
            self._apply_filters()
            self._update_order_label()

    def watch_text_filter(self) -> None:
        if self.is_mounted:
            self._apply_filters()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.text_filter = event.value

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self._focus_first()

    @on(SessionCard.Open)
    def _open_card(self, event: SessionCard.Open) -> None:
        self.services.actions.run(ActionId.OPEN, event.name)

    # -- actions -----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "session" and parameters:
            return self.services.actions.available(str(parameters[0]), self.focused_session())
        if action == "approval_all":
            return self.services.controller.live
        return True

    def action_session(self, action_id: str) -> None:
        name = self.focused_session()
        if name is not None:
            self.services.actions.run(action_id, name)

    def action_approval_all(self) -> None:
        self.services.actions.toggle_approval_all()

    def action_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_clear_filter(self) -> None:
        self.query_one("#filter", Input).value = ""
        self.zone = None
        self._focus_first()

    def action_cycle_sort(self) -> None:
        self.sort_by = SORTS[(SORTS.index(self.sort_by) + 1) % len(SORTS)]

    def action_cycle_zone(self) -> None:
        self.zone = ZONE_FILTERS[(ZONE_FILTERS.index(self.zone) + 1) % len(ZONE_FILTERS)]

    def action_move(self, dx: int, dy: int) -> None:
        visible = [card for card in self.cards if card.display]
        if not visible:
            return
        focused = self.focused
        if not isinstance(focused, SessionCard) or focused not in visible:
            visible[0].focus()
            return
        columns = max(1, self.query_one("#grid", Grid).styles.grid_size_columns or 1)
        index = visible.index(focused) + dx + dy * columns
        if 0 <= index < len(visible):
            visible[index].focus()
            visible[index].scroll_visible()
