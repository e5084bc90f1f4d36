"""A new session for the running run: its task, its name, the folder it works in, and,
when the run's tasks file has named profiles, which one it runs with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Select, Static, TextArea

from mala_tui.ui.text import literal


@dataclass(frozen=True)
class NewTask:
    name: str
    task: str
    cwd: Path
    profile: str = ""
    """One of the run's named profiles; "" for the run's own settings."""


RUN_SETTINGS: Final = "the run's settings"
"""The profile choice that is no profile."""


Add = Callable[[NewTask], None]
"""Adds the session; raises ValueError (or the like) saying why when it cannot."""


class NewTaskScreen(ModalScreen[NewTask | None]):
    """Dismisses with the task added, or None (escape, cancel)."""

    CSS_PATH = str(Path(__file__).with_name("new_task.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "add", "Add"),
    ]

    def __init__(self, name: str, cwd: Path, add: Add, profiles: Sequence[str] = ()) -> None:
        """`profiles`: the run's named profiles (none: no choice is offered)."""
        super().__init__()
        self._name, self._cwd, self._add = name, cwd, add
        self._profiles = list(profiles)

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
                if self._profiles:
                    yield Static("Profile", classes="label")
                    yield Select(
                        [(literal(RUN_SETTINGS), ""), *((literal(p), p) for p in self._profiles)],
                        value="",
                        allow_blank=False,
                        id="profile",
                    )
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
        chosen = self.query("#profile")
        profile = str(chosen.first(Select).value) if chosen else ""
        wanted = NewTask(
            self.query_one("#name", Input).value.strip(),
            self.query_one("#task", TextArea).text.strip(),
            Path(self.query_one("#cwd", Input).value.strip() or "."),
            profile,
        )
        try:
            self._add(wanted)
        except (ValueError, RuntimeError) as exc:
            self.query_one("#error", Static).update(literal(str(exc)))
            return
        self.dismiss(wanted)

    def action_cancel(self) -> None:
        self.dismiss(None)
