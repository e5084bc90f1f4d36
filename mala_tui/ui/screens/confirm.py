"""A yes-or-no question before an action that cannot be taken back."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from mala_tui.ui.text import literal


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True for the confirming button (or y), False otherwise (n, escape)."""

    # Absolute, so subclasses defined elsewhere find it too.
    CSS_PATH = str(Path(__file__).with_name("confirm.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, body: str, *, confirm: str = "Yes") -> None:
        super().__init__()
        self._title, self._body, self._confirm = title, body, confirm

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(literal(self._title), id="title")
            yield Static(literal(self._body), id="body")
            with Horizontal(id="buttons"):
                yield Button(self._confirm, variant="error", id="yes")
                yield Button("Cancel", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
