"""A new session for the running run: its task, its name, the folder it works in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static, TextArea

from mala_tui.ui.text import literal


@dataclass(frozen=True)
class NewTask:
    name: str
    task: str
    cwd: Path


Add = Callable[[NewTask], None]
"""Adds the session; raises ValueError (or the like) saying why when it cannot."""


class NewTaskScreen(ModalScreen[NewTask | None]):
    """Dismisses with the task added, or None (escape, cancel)."""

    CSS_PATH = str(Path(__file__).with_name("new_task.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "add", "Add"),
    ]

    def __init__(self, name: str, cwd: Path, add: Add) -> None:
        super().__init__()
        self._name, self._cwd, self._add = name, cwd, add

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("New session", id="title")
            yield Static("Task", classes="label")
            yield TextArea(id="task", soft_wrap=True, show_line_numbers=False)
            with Grid(id="fields"):
                yield Static("Name", classes="label")
                yield Input(self._name, id="name")
                yield Static("Folder", classes="label")
                yield Input(str(self._cwd), id="cwd")
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Add", variant="primary", id="add")
                yield Button("Cancel", id="cancel")
            yield Static(
                "ctrl+s adds \u00b7 escape cancels \u00b7 it starts when a slot is free "
                "(agent.max_concurrent)",
                id="hint",
            )

    def on_mount(self) -> None:
        self.query_one("#task", TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "add":
            self.action_add()
        else:
            self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_add()

    def action_add(self) -> None:
        wanted = NewTask(
            self.query_one("#name", Input).value.strip(),
            self.query_one("#task", TextArea).text.strip(),
            Path(self.query_one("#cwd", Input).value.strip() or "."),
        )
        try:
            self._add(wanted)
        except (ValueError, RuntimeError) as exc:
            self.query_one("#error", Static).update(literal(str(exc)))
            return
        self.dismiss(wanted)

    def action_cancel(self) -> None:
        self.dismiss(None)
