"""The keys of the screen the user came from, with what each does."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

PALETTE_NOTE = (
    "Every action is also in the command palette (ctrl+p): type a session's name "
    'or an action, e.g. "stop parser" or "theme".'
)


class HelpScreen(ModalScreen[None]):
    """Lists every binding active where help was asked for, the app's own included."""

    # Absolute, so subclasses defined elsewhere find it too.
    CSS_PATH = str(Path(__file__).with_name("help.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, title: str, bindings: dict[str, ActiveBinding]) -> None:
        super().__init__()
        self._title = title
        self._keys = bindings

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        seen: set[tuple[str, str]] = set()
        ours = _own_bindings(self._keys)
        for active in self._keys.values():
            binding = active.binding
            if binding.system or (binding.action, binding.description) not in ours:
                continue  # Textual's own scrolling and focus keys: every app has them
            key = self.app.get_key_display(binding)
            if (key, binding.description) in seen:
                continue
            seen.add((key, binding.description))
            description = Text(binding.description)
            if binding.tooltip:
                description.append(f"  {binding.tooltip}", style="dim")
            if not active.enabled:
                description.stylize("dim")
            table.add_row(Text(key), description)
        with Vertical(id="dialog"):
            yield Static(Text(f"Keys \u00b7 {self._title}"), id="title")
            with VerticalScroll(id="keys"):
                yield Static(table)
            yield Static(Text(PALETTE_NOTE), id="note")


def _own_bindings(keys: dict[str, ActiveBinding]) -> set[tuple[str, str]]:
    """(action, description) of the bindings mala-tui's own classes declare."""
    own: set[tuple[str, str]] = set()
    for active in keys.values():
        for cls in type(active.node).__mro__:
            if not cls.__module__.startswith("mala_tui."):
                continue
            for binding in cls.__dict__.get("BINDINGS", []):
                if isinstance(binding, Binding) and binding.description:
                    own.add((binding.action, binding.description))
    return own
