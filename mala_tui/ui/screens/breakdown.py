"""What fills one session's window, by part, by tool and by file; follows the session live."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from mala_tui.core import events as ev
from mala_tui.core.breakdown import (
    WindowBreakdown,
    breakdown_of,
    digest_since_restart,
    masked_since_restart,
)
from mala_tui.core.text import tokens
from mala_tui.core.view import SessionState
from mala_tui.ui.controller import Controller
from mala_tui.ui.services import Services
from mala_tui.ui.text import literal
from mala_tui.ui.widgets.window_breakdown import WindowBreakdownView

NOT_LIVE = (
    "The breakdown is built from the session's live conversation: it is shown while the "
    "run is in progress (a journal keeps the figures, not the conversation)."
)
TOP_ROWS = 30
"""Rows of the by-tool and by-file tables: the largest, the rest summed in the last row."""


def session_breakdown(state: SessionState, controller: Controller) -> WindowBreakdown | None:
    """The session's window now, or None when the run is not live or has no figure yet."""
    contents = controller.window_contents(state.name)
    if contents is None or state.tokens <= 0:
        return None
    restarted = state.restarts[-1].at if state.restarts else None
    freed = masked_since_restart(((m.at, m.estimated_tokens) for m in state.masks), restarted)
    # The digest as the folds reported it: the conversation held may not have it.
    digest = digest_since_restart(
        ((m.at, m.digest_lines, m.digest_tokens) for m in state.masks), restarted
    )
    return breakdown_of(
        contents,
        measured=state.tokens,
        window=state.window,
        masked_would_cost=freed,
        known_digest=digest,
    )


class BreakdownScreen(Screen[None]):
    """The window of the session named at construction, split into what fills it."""

    CSS_PATH = str(Path(__file__).with_name("breakdown.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,w", "app.pop_screen", "Back")]

    def __init__(self, services: Services, name: str) -> None:
        super().__init__()
        self.services = services
        self.session_name = name

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield WindowBreakdownView(id="parts")
        yield Static(id="empty")
        with Horizontal(id="tables"):
            with Vertical():
                yield Static("By tool (calls and shown results)", classes="heading")
                yield DataTable(id="by-tool", cursor_type="row", zebra_stripes=True)
            with Vertical():
                yield Static("By file (calls and results)", classes="heading")
                yield DataTable(id="by-file", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#by-tool", DataTable).add_columns("tool", "calls", "tokens", "window")
        self.query_one("#by-file", DataTable).add_columns("file", "calls", "tokens", "window")
        self._refresh()
        self.services.bridge.events.subscribe(self, self._on_events)

    def _on_events(self, events: list[ev.Event]) -> None:
        if any(
            e.session == self.session_name
            and isinstance(e, ev.UsageRecorded | ev.MaskApplied | ev.TranscriptFolded)
            for e in events
        ):
            self._refresh()

    def _refresh(self) -> None:
        controller = self.services.controller
        state = controller.session(self.session_name)
        data = None if state is None else session_breakdown(state, controller)
        title = f"{self.session_name} \u00b7 what fills the window"
        if data is not None:
            title += (
                f" \u00b7 {tokens(data.measured)} of {tokens(data.window)} (calibrated estimate)"
            )
        self.query_one("#title", Static).update(literal(title, one_line=True))
        self.query_one(WindowBreakdownView).data = data
        empty = self.query_one("#empty", Static)
        empty.display = data is None
        self.query_one("#parts").display = data is not None
        if data is None:
            live = controller.live
            empty.update(Text(NOT_LIVE if not live else "No usage measured yet."))
            return
        window = max(1, data.window)
        for table_id, shares in (("#by-tool", data.by_tool), ("#by-file", data.by_file)):
            table = self.query_one(table_id, DataTable)
            table.clear()
            shown, rest = shares[:TOP_ROWS], shares[TOP_ROWS:]
            for share in shown:
                table.add_row(
                    literal(share.label, one_line=True),
                    Text(str(share.count)),
                    Text(tokens(share.tokens)),
                    Text(f"{share.tokens / window:.1%}"),
                )
            if rest:
                total = sum(share.tokens for share in rest)
                table.add_row(
                    Text(f"{len(rest)} more"),
                    Text(str(sum(share.count for share in rest))),
                    Text(tokens(total)),
                    Text(f"{total / window:.1%}"),
                )
