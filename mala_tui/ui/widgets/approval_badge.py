"""A badge that shows, on every screen, how many restarts wait for approval and how many
tool uses wait for permission: both are questions waiting for a person."""

from __future__ import annotations

from textual import events
from textual.reactive import reactive
from textual.widgets import Static

from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion, Question
from mala_tui.ui.services import Services


class ApprovalBadge(Static):
    """ "⚑ 2 approvals waiting · a  ⚑ 1 permission waiting · P", hidden when nothing
    waits; a click opens the first (approvals first, as the answer queue asks them).

    It follows the bridge's `questions` signal itself, so any screen gets it by
    composing one with its services.
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
    permissions: reactive[int] = reactive(0)
    """Permission requests waiting for an answer."""

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services

    def on_mount(self) -> None:
        self.count = len(self.services.controller.pending())
        self.permissions = len(self.services.controller.pending_permissions())
        self._show()
        self.services.bridge.questions.subscribe(self, self._on_questions)

    def _on_questions(self, waiting: list[Question]) -> None:
        self.count = sum(isinstance(question, ApprovalQuestion) for question in waiting)
        self.permissions = sum(isinstance(question, PermissionQuestion) for question in waiting)

    def watch_count(self) -> None:
        self._show()

    def watch_permissions(self) -> None:
        self._show()

    def _show(self) -> None:
        self.set_class(self.count == 0 and self.permissions == 0, "-none")
        parts = []
        if self.count:
            noun = "approval" if self.count == 1 else "approvals"
            parts.append(f"\u2691 {self.count} {noun} waiting \u00b7 a")
        if self.permissions:
            noun = "permission" if self.permissions == 1 else "permissions"
            parts.append(f"\u2691 {self.permissions} {noun} waiting \u00b7 P")
        self.update("  ".join(parts))

    async def on_click(self, event: events.Click) -> None:
        event.stop()
        await self.app.run_action("review_approvals" if self.count else "review_permissions")
