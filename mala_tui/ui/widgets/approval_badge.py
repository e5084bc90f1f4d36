"""A badge that shows, on every screen, how many restarts wait for approval."""

from __future__ import annotations

from textual import events
from textual.reactive import reactive
from textual.widgets import Static

from mala_tui.core.questions import ApprovalQuestion, Question
from mala_tui.ui.services import Services


class ApprovalBadge(Static):
    """ "⚑ 2 waiting for approval", hidden when none is; a click opens the first one.

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

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services

    def on_mount(self) -> None:
        self.count = len(self.services.controller.pending())
        self.set_class(self.count == 0, "-none")
        self.services.bridge.questions.subscribe(self, self._on_questions)

    def _on_questions(self, waiting: list[Question]) -> None:
        self.count = sum(isinstance(question, ApprovalQuestion) for question in waiting)

    def watch_count(self, count: int) -> None:
        self.set_class(count == 0, "-none")
        noun = "approval" if count == 1 else "approvals"
        self.update(f"\u2691 {count} {noun} waiting \u00b7 a")

    async def on_click(self, event: events.Click) -> None:
        event.stop()
        await self.app.run_action("review_approvals")
