"""`q` in a console attached to a run its host runs: detach (the run goes on) or stop it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Final, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from mala_tui.ui.text import literal

Leave = Literal["detach", "stop"]
DETACH: Final = "detach"
STOP: Final = "stop"


class LeaveScreen(ModalScreen[Leave | None]):
    """Dismisses with "detach" (d), "stop" (s), or None to stay (escape, n)."""

    CSS_PATH = str(Path(__file__).with_name("confirm.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "choose('detach')", "Detach"),
        Binding("s", "choose('stop')", "Stop the run"),
        Binding("n,escape", "choose('')", "Stay"),
    ]

    def __init__(self, run_id: str, *, command: Callable[..., str], resumable: bool = True) -> None:
        """`command`: a `mala-tui` command as the user would paste it (`Settings.command`);
        `resumable`: False for a demo, whose model server ends with it."""
        super().__init__()
        self.run_id = run_id
        self.command = command
        self.resumable = resumable

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(literal(f"Leave run {self.run_id}?"), id="title")
            yield Static(
                literal(
                    "Detach: this console closes and the run goes on "
                    f"({self.command('attach', self.run_id)} opens it again).\n"
                    "Stop: every session is stopped with the run "
                    + (
                        f"({self.command('resume', self.run_id)} carries it on)."
                        if self.resumable
                        else "(a demo cannot be resumed)."
                    )
                ),
                id="body",
            )
            with Horizontal(id="buttons"):
                yield Button("Detach", variant="primary", id="detach")
                yield Button("Stop the run", variant="error", id="stop")
                yield Button("Stay", id="stay")

    def on_mount(self) -> None:
        self.query_one("#detach", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_choose(event.button.id or "")

    def action_choose(self, choice: str) -> None:
        self.dismiss(DETACH if choice == DETACH else STOP if choice == STOP else None)
