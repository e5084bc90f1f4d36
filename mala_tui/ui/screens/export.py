"""Asks where to write a checkpoint's markdown."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ExportScreen(ModalScreen[Path | None]):
    """An editable path; enter dismisses with it, escape with None."""

    # Absolute, so subclasses defined elsewhere find it too.
    CSS_PATH = str(Path(__file__).with_name("export.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: Path) -> None:
        super().__init__()
        self._default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Export the checkpoint as markdown to:", id="title")
            yield Input(str(self._default), id="path")
            yield Static(
                "enter writes a new file (never replaces one) \u00b7 escape cancels", id="hint"
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(Path(value) if value else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
