"""What becomes of a session the person has had open by hand: back to mala-tui, or ended.

Asked once the interactive Claude Code has exited. Its transcript has been read again
already when the answer goes: the gauge, the masked results and the next decisions are
those of the conversation as the person left it.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from mala_tui.ui.text import literal


class HandBackScreen(ModalScreen[bool]):
    """Dismisses with True to hand the session back (it goes on supervised), False to end
    it. There is no third way: the session waits, paused, until one is chosen."""

    CSS_PATH = str(Path(__file__).with_name("by_hand.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "answer(True)", "Hand back"),
        Binding("e", "answer(False)", "End it"),
    ]

    def __init__(self, session: str, how: str) -> None:
        super().__init__()
        self.session_name, self._how = session, how

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(literal(f"{self.session_name}: back from Claude Code"), id="title")
            yield Static(
                literal(
                    f"{self._how} Hand it back (b): mala-tui reads what you did, then the agent "
                    "goes on with its task, supervised. End it (e): it stops here, as you "
                    "left it."
                ),
                id="body",
            )
            with Horizontal(id="buttons"):
                yield Button("Hand back", variant="primary", id="yes")
                yield Button("End it", variant="error", id="no")

    def on_mount(self) -> None:
        self.query_one("#yes", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, hand_back: bool) -> None:
        self.dismiss(hand_back)
