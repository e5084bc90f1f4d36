"""The restart approval: a session's checkpoint, with Approve, Deny, and Edit-then-approve."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widgets import Button, ContentSwitcher, Footer, Static, TextArea

from mala_tui.core.observations import Decision
from mala_tui.core.questions import ApprovalQuestion, Question
from mala_tui.ui.services import Services
from mala_tui.ui.text import literal
from mala_tui.ui.widgets.checkpoint_view import CheckpointView


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """What the person decided; `text` is the edited checkpoint when the decision is EDIT."""

    request: ApprovalQuestion
    decision: Decision
    text: str | None = None


class ApprovalScreen(ModalScreen[ApprovalAnswer | None]):
    """One pending approval; dismissed with the answer, or None to decide later.

    The checkpoint is shown by sections, literally. Edit swaps in a text area
    holding the checkpoint; approving from there approves the edited text. If
    the request stops waiting meanwhile (the session ended, a timeout decided),
    the screen closes itself and says so.
    """

    # Absolute, so subclasses defined elsewhere find it too.
    CSS_PATH = str(Path(__file__).with_name("approval.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve"),
        Binding("d", "deny", "Deny"),
        Binding("e", "edit", "Edit"),
        Binding("escape", "later", "Later"),
        Binding("ctrl+s", "approve_edited", "Approve edited", show=False),
    ]

    editing: reactive[bool] = reactive(False, bindings=True)
    """True while the checkpoint is open in the editor."""

    def __init__(
        self,
        services: Services,
        request: ApprovalQuestion,
        *,
        previous: str | None = None,
        waiting: int = 1,
    ) -> None:
        super().__init__()
        self.services = services
        self.request = request
        self.previous = previous
        """The session's checkpoint before this one, to show what changed; None for the first."""
        self.waiting = waiting
        self._finished = False

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog"):
            yield Static(
                literal(f"Restart {request.session} from checkpoint #{request.checkpoint_number}?"),
                id="title",
            )
            queue = f" \u00b7 {self.waiting - 1} more waiting" if self.waiting > 1 else ""
            yield Static(literal(f"{request.reason}{queue}"), id="meta")
            with ContentSwitcher(initial="view", id="body"):
                with VerticalScroll(id="view"):
                    yield CheckpointView(request.checkpoint_text, self.previous)
                yield TextArea(
                    request.checkpoint_text, id="editor", soft_wrap=True, show_line_numbers=False
                )
            with Horizontal(id="buttons"):
                yield Button("Approve", variant="success", id="approve")
                yield Button("Deny", variant="error", id="deny")
                yield Button("Edit", variant="primary", id="edit")
                yield Button("Approve edited", variant="success", id="approve-edited")
                yield Button("Cancel edit", id="cancel-edit")
                yield Button("Later", id="later")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#view").focus()
        self._show_buttons()
        self.services.bridge.questions.subscribe(self, self._questions_changed)

    def watch_editing(self) -> None:
        if self.is_mounted:
            self._show_buttons()

    def _show_buttons(self) -> None:
        editing = self.editing
        for button in self.query(Button):
            shown_in_editor = button.id in {"approve-edited", "cancel-edit"}
            button.display = shown_in_editor == editing or button.id == "later"
        self.query_one(ContentSwitcher).current = "editor" if editing else "view"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in {"approve", "deny", "edit"}:
            return not self.editing
        if action == "approve_edited":
            return self.editing
        return True

    def _questions_changed(self, waiting: list[Question]) -> None:
        if self._finished or self.app.screen is not self:
            return  # answered already: the list changed because of this very answer
        if all(question.id != self.request.id for question in waiting):
            self.app.notify(f"{self.request.session} no longer waits for approval", markup=False)
            self._finish(None)

    def _finish(self, answer: ApprovalAnswer | None) -> None:
        if not self._finished:
            self._finished = True
            self.dismiss(answer)

    # -- answers -----------------------------------------------------------------------------------

    def action_approve(self) -> None:
        self._finish(ApprovalAnswer(self.request, Decision.APPROVE))

    def action_deny(self) -> None:
        self._finish(ApprovalAnswer(self.request, Decision.DENY))

    def action_edit(self) -> None:
        self.editing = True
        self.query_one(TextArea).focus()

    def action_approve_edited(self) -> None:
        text = self.query_one(TextArea).text
        if not text.strip():
            self.app.notify("An empty checkpoint cannot be approved", severity="error")
            return
        self._finish(ApprovalAnswer(self.request, Decision.EDIT, text))

    def action_later(self) -> None:
        if self.editing:
            self.editing = False
            self.query_one("#view").focus()
            return
        self._finish(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        actions = {
            "approve": self.action_approve,
            "deny": self.action_deny,
            "edit": self.action_edit,
            "approve-edited": self.action_approve_edited,
            "cancel-edit": self.action_later,
            "later": self.action_later,
        }
        actions[event.button.id or ""]()
