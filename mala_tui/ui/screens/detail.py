"""One session in depth: gauge, context over time, restart history, masked results, event log."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from mala_tui.core import events as ev
from mala_tui.core.describe import changes_summary
from mala_tui.core.operator_actions import SetBudget
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.text import plural, tokens
from mala_tui.core.view import SessionState
from mala_tui.ui.controller import ReadOnlyError
from mala_tui.ui.drawing import GaugeReading
from mala_tui.ui.format import elapsed, phase_label
from mala_tui.ui.keys import app_keys
from mala_tui.ui.services import Services
from mala_tui.ui.session_action_table import ActionId, session_bindings
from mala_tui.ui.subagents import COLUMNS as SUBAGENT_COLUMNS
from mala_tui.ui.subagents import row as subagent_row
from mala_tui.ui.text import literal
from mala_tui.ui.timeline import session_start
from mala_tui.ui.widgets.approval_badge import ApprovalBadge
from mala_tui.ui.widgets.context_chart import ChartData, ContextChart
from mala_tui.ui.widgets.cost_panel import CostData, CostPanel
from mala_tui.ui.widgets.event_log import EventLog
from mala_tui.ui.widgets.gauge import ContextGauge

HISTORY_EVENTS = (
    ev.Restarted,
    ev.MaskApplied,
    ev.MaskMeasured,
    ev.UsageRecorded,
    ev.CheckpointSaved,
)
"""Events that change the tables or the chart: others only reach the log."""
SUBAGENT_EVENTS = (
    ev.SubagentStarted,
    ev.SubagentCall,
    ev.SubagentCompacted,
    ev.SubagentEnded,
    ev.SubagentWoundDown,
    ev.SubagentResultWithheld,
    ev.BackgroundStopped,
    ev.SessionEnded,
)
"""Events that change the list of subagents (a stopped agent ends its subagents)."""
WORKTREE_EVENTS = (
    ev.WorktreeCreated,
    ev.WorktreeChanged,
    ev.WorktreeLanded,
    ev.WorktreePushed,
    ev.WorktreeDiscarded,
)
"""Events that change what the worktree line says."""


class DetailScreen(Screen[None]):
    """The session named at construction; follows it live, and reads it back for a finished run."""

    # Absolute, so subclasses defined elsewhere find it too.
    CSS_PATH = str(Path(__file__).with_name("detail.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        # The footer keeps this order and cuts at its right edge: what matters first.
        Binding("escape", "app.pop_screen", "Back"),
        *app_keys(),
        *session_bindings(ActionId.LAND, ActionId.DISCARD),
        *session_bindings(
            ActionId.CHECKPOINTS,
            ActionId.SAY,
            ActionId.PAUSE,
            ActionId.STOP,
            ActionId.MASK,
            ActionId.RESTART,
        ),
        *session_bindings(
            ActionId.APPROVAL, ActionId.MANAGE, ActionId.TRANSCRIPT, ActionId.CANCEL, show=False
        ),
        *session_bindings(ActionId.FORK, ActionId.BY_HAND, show=False),
        Binding("l", "show_tab('events')", "Event log"),
        Binding("u", "show_tab('subagents')", "Subagents"),
        Binding("d", "diff", "Worktree diff"),
        Binding("w", "window", "What fills the window"),
        Binding("b", "budget", "Budget"),
    ]

    def __init__(self, services: Services, name: str) -> None:
        super().__init__()
        self.services = services
        self.session_name = name
        self._subagent_tab = False
        """Whether it has (or is being given) its tab of subagents."""

    @property
    def state(self) -> SessionState:
        state = self.services.controller.session(self.session_name)
        if state is None:
            raise KeyError(self.session_name)
        return state

    def compose(self) -> ComposeResult:
        state = self.state
        start = session_start(state)
        self._subagent_tab = bool(state.subagents)
        with Horizontal(id="topbar"):
            yield Static(id="title")
            yield ApprovalBadge(self.services)
        yield Static(literal(state.task or "(no task)"), id="task")
        yield Static(id="worktree")
        yield ContextGauge(id="gauge")
        yield Static(id="calibration")
        with Horizontal(id="charts"):
            yield ContextChart(ChartData.of(state), id="chart")
            yield CostPanel(CostData.of(state), id="cost")
        with TabbedContent(initial="restarts"):
            with TabPane("Restarts", id="restarts"):
                yield DataTable(id="restart-table", cursor_type="row", zebra_stripes=True)
            with TabPane("Masked results", id="masks"):
                yield DataTable(id="mask-table", cursor_type="row", zebra_stripes=True)
            if self._subagent_tab:  # a session that started none has no such tab
                yield subagent_pane()
            with TabPane("Event log", id="events"):
                yield EventLog(state.log, start=start)
        yield Footer()

    def on_mount(self) -> None:
        restarts = self.query_one("#restart-table", DataTable)
        restarts.add_columns(
            "time", "reason", "tokens before", "after", "approved by", "checkpoint"
        )
        masks = self.query_one("#mask-table", DataTable)
        masks.add_columns("time", "placeholder", "batch", "est. tokens", "reclaimed", "folded")
        self._fill_tables()
        self._fill_subagents()
        self._show_cost()
        snapshot = self.services.controller.snapshot(self.session_name)
        if snapshot is not None:
            self._show(snapshot)
        self.services.bridge.snapshots.subscribe(self, self._on_snapshots)
        self.services.bridge.events.subscribe(self, self._on_events)

    def _show(self, snapshot: SessionSnapshot) -> None:
        state = phase_label(snapshot.state)
        extra = f" \u00b7 {snapshot.end_reason}" if snapshot.end_reason else ""
        if snapshot.pending_permissions:
            extra += f" \u00b7 waiting for permission ({snapshot.pending_permissions}, P)"
        approval = " \u00b7 approval on" if snapshot.require_approval else ""
        counters = (
            f" \u00b7 restarts {snapshot.restarts}/{snapshot.max_restarts}"
            f" \u00b7 masked {snapshot.masked_total} \u00b7 idle retries {snapshot.idle_retries}"
        )
        self.query_one("#title", Static).update(
            literal(f"{snapshot.name} \u00b7 {state}{extra}{counters}{approval}", one_line=True)
        )
        self.query_one(ContextGauge).reading = GaugeReading.of(snapshot)
        self.query_one("#calibration", Static).update(calibration_line(snapshot))
        self._show_worktree()

    def _show_cost(self) -> None:
        standing = self.services.controller.budget_check(self.session_name)
        self.query_one(CostPanel).data = CostData.of(self.state, standing)

    def _show_worktree(self) -> None:
        tree = self.state.worktree
        line = self.query_one("#worktree", Static)
        if line.display != (tree is not None):
            line.display = tree is not None
            self.refresh_bindings()  # the diff key is there only with a worktree
        if tree is None:
            return
        if tree.error:
            changed = f"changes unknown: {tree.error}"
        elif tree.files is None:
            changed = "changes measured when the session ends"
        else:
            changed = changes_summary(tree.files) + " (d: diff)"
        left = f" \u00b7 {tree.status.label}" if tree.status is not None else ""
        line.update(
            literal(
                f"worktree {tree.path} \u00b7 branch {tree.branch} \u00b7 {changed}{left}",
                one_line=True,
            )
        )

    def _on_snapshots(self, changed: dict[str, SessionSnapshot]) -> None:
        snapshot = changed.get(self.session_name)
        if snapshot is not None:
            self._show(snapshot)

    def _on_events(self, events: list[ev.Event]) -> None:
        mine = [event for event in events if event.session == self.session_name]
        if not mine:
            return
        self.query_one(EventLog).add(mine)
        if any(isinstance(event, HISTORY_EVENTS) for event in mine):
            self.query_one(ContextChart).data = ChartData.of(self.state)
            self._show_cost()
            if any(not isinstance(event, ev.UsageRecorded) for event in mine):
                self._fill_tables()
        if any(isinstance(event, SUBAGENT_EVENTS) for event in mine):
            if self.state.subagents and not self._subagent_tab:
                self._subagent_tab = True
                self.run_worker(self._add_subagent_pane(), group="subagents")
            else:
                self._fill_subagents()
        if any(isinstance(event, WORKTREE_EVENTS) for event in mine):
            self._show_worktree()
            self.refresh_bindings()  # land and discard depend on what is left to land

    def _fill_tables(self) -> None:
        state = self.state
        start = session_start(state)
        restarts = self.query_one("#restart-table", DataTable)
        restarts.clear()
        for restart in state.restarts:
            after = tokens(restart.tokens_after) if restart.tokens_after is not None else "-"
            restarts.add_row(
                Text(f"+{elapsed(restart.at - start)}"),
                literal(restart.reason, one_line=True),
                Text(tokens(restart.tokens_before)),
                Text(after),
                literal(restart.approved_by, one_line=True),
                Text(f"#{restart.checkpoint_number} \u2192", style="underline"),
                key=str(restart.checkpoint_number),
            )
        masks = self.query_one("#mask-table", DataTable)
        masks.clear()
        for batch, mask in enumerate(state.masks, start=1):
            reclaimed = tokens(mask.reclaimed) if mask.reclaimed is not None else "-"
            folded = (
                f"{plural(mask.folded_steps, 'step')}, ~{tokens(mask.folded_tokens)} est."
                if mask.folded_steps
                else "-"
            )
            for index, placeholder in enumerate(mask.placeholders):
                first = index == 0
                masks.add_row(
                    Text(f"+{elapsed(mask.at - start)}" if first else ""),
                    literal(placeholder, one_line=True),
                    Text(f"{batch} ({mask.count})" if first else ""),
                    Text(tokens(mask.estimated_tokens) if first else ""),
                    Text(reclaimed if first else ""),
                    Text(folded if first else ""),
                )

    async def _add_subagent_pane(self) -> None:
        """The session's first subagent started while it was open: its list appears."""
        await self.query_one(TabbedContent).add_pane(subagent_pane(), before="events")
        self._fill_subagents()
        self.refresh_bindings()  # its key too

    def _fill_subagents(self) -> None:
        """Every subagent of the session, live and finished, with its figures."""
        found = self.query("#subagent-table")
        if not found:
            return
        table = found.first(DataTable)
        state = self.state
        # A finished run read back is over at its last event, not at the clock's now.
        live = self.services.controller.live and state.status is None
        now = self.services.now() if live else state.updated_at
        gauges = state.subagent_gauges()
        labels = {gauge.agent_id: gauge.label for gauge in gauges}
        cursor = table.cursor_row
        table.clear()
        for gauge in gauges:
            cells = subagent_row(gauge, now, labels, session_over=state.status is not None)
            # Labels, types and reasons come from the agent: literal, one line each.
            table.add_row(*(literal(cell, one_line=True) for cell in cells), key=gauge.agent_id)
        if gauges:
            table.move_cursor(row=min(cursor, len(gauges) - 1))

    @on(DataTable.RowSelected, "#restart-table")
    def _open_checkpoint(self, event: DataTable.RowSelected) -> None:
        number = int(event.row_key.value or 0)
        self.services.actions.open_checkpoints(self.session_name, number)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "session" and parameters:
            return self.services.actions.available(str(parameters[0]), self.session_name)
        if action == "budget":  # a live run's budgets only
            return self.services.controller.budget() is not None
        if action == "diff":  # only sessions run with --worktree have one
            return self.state.worktree is not None
        if action == "show_tab" and parameters == ("subagents",):
            return bool(self.query("#subagent-table"))  # only once it has started one
        return True

    def action_session(self, action_id: str) -> None:
        self.services.actions.run(action_id, self.session_name)

    def action_budget(self) -> None:
        controller = self.services.controller
        try:
            session, run = controller.budget_limits(self.session_name)
        except ReadOnlyError as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return
        from mala_tui.ui.screens.budget import BudgetChange, BudgetScreen

        def apply(change: BudgetChange | None) -> None:
            if change is None:
                return
            try:
                if change.session != session:
                    controller.act(SetBudget(session=self.session_name, limits=change.session))
                if change.run != run:
                    controller.act(SetBudget(session=None, limits=change.run))
            except ReadOnlyError as exc:
                self.notify(str(exc), severity="warning", markup=False)
                return
            self.notify(f"Budget of {self.session_name} and of the run saved.")
            self._show_cost()

        self.app.push_screen(BudgetScreen(self.session_name, session, run), apply)

    def action_window(self) -> None:
        from mala_tui.ui.screens.breakdown import BreakdownScreen

        self.app.push_screen(BreakdownScreen(self.services, self.session_name))

    def action_diff(self) -> None:
        tree = self.state.worktree
        if tree is None:
            self.notify("This session has no worktree of its own (run with --worktree).")
            return
        from mala_tui.ui.screens.diff import DiffScreen

        self.app.push_screen(DiffScreen(self.session_name, tree))

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab


def subagent_pane() -> TabPane:
    """The tab listing a session's subagents (the cost column is an estimate)."""
    table: DataTable[Text] = DataTable(id="subagent-table", cursor_type="row", zebra_stripes=True)
    table.add_columns(*SUBAGENT_COLUMNS)
    return TabPane("Subagents", table, id="subagents")


def calibration_line(snapshot: SessionSnapshot) -> str:
    """Where the window figure came from, and how the manager turns text into tokens."""
    how = "measured" if snapshot.density_measured else "assumed until measured"
    return (
        f"window {snapshot.window:,} ({snapshot.window_source}) \u00b7 size estimates "
        f"{snapshot.density:.2f}x chars/4 ({how}) \u00b7 management {snapshot.manage}"
    )
