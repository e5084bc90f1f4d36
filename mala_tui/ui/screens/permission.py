"""A permission request: an agent asks to use a tool outside its allowed set; allow or deny."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static

from mala_tui.core.permissions import CUT_INPUT_NOTE, PermissionAnswer
from mala_tui.core.questions import PermissionQuestion, Question
from mala_tui.ui.format import elapsed
from mala_tui.ui.services import Services
from mala_tui.ui.text import literal

ASK_REASON = "Why deny? The agent reads it. Enter denies (empty: no reason); Esc goes back"


@dataclass(frozen=True, slots=True)
class PermissionReply:
    """The operator's answer; `reason` goes to the agent with a deny."""

    request: PermissionQuestion
    answer: PermissionAnswer
    reason: str = ""


class PermissionScreen(ModalScreen[PermissionReply | None]):
    """One waiting request; dismissed with the answer, or None to answer later.

    The tool's input is shown literally, whole. Deny takes the reason typed in the
    input (Enter there denies too): the agent reads it as the tool's result. If the
    request stops waiting meanwhile (a timeout, the session ended), the screen
    closes itself and says so.
    """

    CSS_PATH = str(Path(__file__).with_name("permission.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "allow_once", "Allow once"),
        Binding("s", "allow_session", "Allow for session"),
        Binding("d", "deny", "Deny"),
        Binding("escape", "later", "Later"),
    ]

    def __init__(
        self,
        services: Services,
        request: PermissionQuestion,
        *,
        waiting: int = 1,
    ) -> None:
        super().__init__()
        self.services = services
        self.request = request
        self.waiting = waiting
        self._finished = False

    def compose(self) -> ComposeResult:
        request = self.request
        state = self.services.controller.session(request.session)
        started = state.started_at if state is not None else None
        when = f" \u00b7 asked at +{elapsed(request.asked_at - started)}" if started else ""
        queue = f" \u00b7 {self.waiting - 1} more waiting" if self.waiting > 1 else ""
        with Vertical(id="dialog"):
            yield Static(
                literal(f"{request.session} asks to use {request.tool}", one_line=True),
                id="title",
            )
            yield Static(
                literal(f"request #{request.request_id}{when}{queue}", one_line=True),
                id="meta",
            )
            with VerticalScroll(id="input-view"):
                yield Static(literal(request.input_text or request.summary), id="tool-input")
            if not request.allow_offered:
                yield Static(
                    literal(f"{CUT_INPUT_NOTE[0].upper()}{CUT_INPUT_NOTE[1:]}."), id="cut-note"
                )
            yield Input(placeholder="Reason for a deny (the agent reads it)", id="reason")
            with Horizontal(id="buttons"):
                if request.allow_offered:  # a person must see everything they approve
                    yield Button("Allow once", variant="success", id="allow-once")
                    yield Button("Allow for this session", variant="primary", id="allow-session")
                yield Button("Deny", variant="error", id="deny")
                yield Button("Later", id="later")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#input-view").focus()
        self.services.bridge.questions.subscribe(self, self._questions_changed)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Typing a reason must not answer: letters go to the input while it has focus.
        if action in {"allow_once", "allow_session"} and not self.request.allow_offered:
            return False
        if action in {"allow_once", "allow_session", "deny"}:
            return not isinstance(self.focused, Input)
        return True

    def _questions_changed(self, waiting: list[Question]) -> None:
        if self._finished or self.app.screen is not self:
            return  # answered already: the list changed because of this very answer
        request = self.request
        if all(question.id != request.id for question in waiting):
            self.app.notify(
                f"{request.session}: request #{request.request_id} no longer waits",
                markup=False,
            )
            self._finish(None)

    def _finish(self, reply: PermissionReply | None) -> None:
        if not self._finished:
            self._finished = True
            self.dismiss(reply)

    # -- answers -----------------------------------------------------------------------------------

    def action_allow_once(self) -> None:
        self._finish(PermissionReply(self.request, PermissionAnswer.ALLOW_ONCE))

    def action_allow_session(self) -> None:
        self._finish(PermissionReply(self.request, PermissionAnswer.ALLOW_SESSION))

    def action_deny(self) -> None:
        """Deny with the reason typed; with none typed yet, ask for it first (as the
        headless prompt does): the agent reads it, and a bare deny tells it nothing."""
        field = self.query_one("#reason", Input)
        if not field.value.strip():
            field.placeholder = ASK_REASON
            field.focus()
            return
        self._deny()

    def _deny(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        self._finish(PermissionReply(self.request, PermissionAnswer.DENY, reason))

    def action_later(self) -> None:
        if isinstance(self.focused, Input):
            self.query_one("#input-view").focus()
            return
        self._finish(None)

    @on(Input.Submitted, "#reason")
    def _reason_given(self) -> None:
        self._deny()  # Enter in the reason's field: the reason typed, or none

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        actions = {
            "allow-once": self.action_allow_once,
            "allow-session": self.action_allow_session,
            "deny": self.action_deny,
            "later": self.action_later,
        }
        actions[event.button.id or ""]()
