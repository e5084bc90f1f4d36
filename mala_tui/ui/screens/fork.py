"""Fork a session: a new session from its conversation as it stands, with another
instruction, supervised beside it.

The agent copies the conversation into a session of its own (the SDK's `fork_session`),
so the session forked goes on untouched. In a worktree run the fork works in a worktree
of its own, made from the forked session's (its commits and its uncommitted edits).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static, TextArea

from mala_tui.ui.text import literal

Fork = Callable[[str, str], None]
"""Forks into a session with this name, told this instruction; raises ValueError (or the
like) saying why when it cannot."""


class ForkScreen(ModalScreen[str | None]):
    """Dismisses with the fork's name, or None (escape, cancel)."""

    CSS_PATH = str(Path(__file__).with_name("fork.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "fork", "Fork"),
    ]

    def __init__(self, parent: str, name: str, fork: Fork, *, worktree: bool) -> None:
        super().__init__()
        self.parent_name = parent
        self._name, self._fork, self._worktree = name, fork, worktree

    def compose(self) -> ComposeResult:
        where = (
            "in a worktree of its own, made from this session's (its commits and its "
            "uncommitted edits)"
            if self._worktree
            else "in the same folder"
        )
        with Vertical(id="dialog"):
            yield Static(literal(f"Fork {self.parent_name}", one_line=True), id="title")
            yield Static(
                literal(
                    f"A new session starts from {self.parent_name}'s conversation as it stands "
                    f"and is told the instruction below instead; it works {where}. "
                    f"{self.parent_name} goes on as it was."
                ),
                id="body",
            )
            yield Static("Instruction", classes="label")
            yield TextArea(id="instruction", soft_wrap=True, show_line_numbers=False)
            with Grid(id="fields"):
                yield Static("Name", classes="label")
                yield Input(self._name, id="name")
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Fork", variant="primary", id="fork")
                yield Button("Cancel", id="cancel")
            yield Static("ctrl+s forks \u00b7 escape cancels", id="hint")

    def on_mount(self) -> None:
        self.query_one("#instruction", TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "fork":
            self.action_fork()
        else:
            self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_fork()

    def action_fork(self) -> None:
        name = self.query_one("#name", Input).value.strip()
        instruction = self.query_one("#instruction", TextArea).text
        try:
            self._fork(name, instruction)
        except (ValueError, KeyError, RuntimeError) as exc:
            reason = f"no session named {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            self.query_one("#error", Static).update(literal(reason))
            return
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)
