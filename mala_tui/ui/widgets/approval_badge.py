"""A badge that shows, on every screen, how many restarts wait for approval."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import events
from textual.reactive import reactive
from textual.widgets import Static

from mala_tui.runtime.supervisor import ApprovalRequest

if TYPE_CHECKING:
    from mala_tui.ui.app import MalaApp


class ApprovalBadge(Static):
    """ "⚑ 2 waiting for approval", hidden when none is; a click opens the first one.

    It follows the app's `approvals` signal itself, so any screen gets it by
    composing one.
    """

    DEFAULT_CSS = """
    ApprovalBadge {
        width: auto;
        height: 1;
        padding: 0 1;
        background: $accent;
        text-style: bold;
        color: $background;
        &.-none { display: none; }
    }
    """

    count: reactive[int] = reactive(0)
    """Approvals waiting for an answer."""

    def on_mount(self) -> None:
        app = cast("MalaApp", self.app)
        self.count = len(app.controller.pending())
        self.set_class(self.count == 0, "-none")
        app.bridge.approvals.subscribe(self, self._on_approvals)

    def _on_approvals(self, pending: list[ApprovalRequest]) -> None:
        self.count = len(pending)

    def watch_count(self, count: int) -> None:
        self.set_class(count == 0, "-none")
        noun = "approval" if count == 1 else "approvals"
        self.update(f"\u2691 {count} {noun} waiting \u00b7 a")

    async def on_click(self, event: events.Click) -> None:
        event.stop()
        await self.app.run_action("review_approvals")
