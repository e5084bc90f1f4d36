"""A session's checkpoints: each rendered by sections, what changed from the one before, export."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from mala_tui.core.session_records import CheckpointRecord
from mala_tui.runtime.journal.writer import safe_file_name
from mala_tui.ui.format import elapsed
from mala_tui.ui.services import Services
from mala_tui.ui.text import literal
from mala_tui.ui.timeline import session_start
from mala_tui.ui.widgets.approval_badge import ApprovalBadge
from mala_tui.ui.widgets.checkpoint_view import CheckpointView

ORIGIN_NOTES = {
    "tagged": "written by the agent",
    "fenced": "written by the agent (in a code fence)",
    "untagged": "the agent's whole answer (no checkpoint tags)",
    "harness": "built by mala-tui from the transcript: the agent could not write one",
    "edited": "edited by a person at approval",
}


class CheckpointScreen(Screen[None]):
    """Lists the session's checkpoints; the highlighted one is shown against its predecessor."""

    # Absolute, so subclasses defined elsewhere find it too.
    CSS_PATH = str(Path(__file__).with_name("checkpoints.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("e", "export", "Export"),
    ]

    number: reactive[int] = reactive(0, init=False)
    """The checkpoint shown (its number within the session)."""

    def __init__(self, services: Services, name: str, number: int | None = None) -> None:
        super().__init__()
        self.services = services
        self.session_name = name
        self._initial = number

    @property
    def records(self) -> list[CheckpointRecord]:
        state = self.services.controller.session(self.session_name)
        return list(state.checkpoints) if state is not None else []

    def record(self, number: int) -> CheckpointRecord | None:
        return next((r for r in self.records if r.number == number), None)

    def compose(self) -> ComposeResult:
        with Horizontal(id="topbar"):
            yield Static(
                literal(f"Checkpoints \u00b7 {self.session_name}", one_line=True), id="title"
            )
            yield ApprovalBadge(self.services)
        with Horizontal(id="body"):
            yield OptionList(id="list")
            with VerticalScroll(id="sections"):
                yield Static(id="meta")
                yield CheckpointView()
        yield Footer()

    def on_mount(self) -> None:
        self._fill_list()
        records = self.records
        if not records:
            self.query_one("#meta", Static).update(Text("This session has no checkpoint yet."))
            return
        numbers = [r.number for r in records]
        wanted = self._initial if self._initial in numbers else numbers[-1]
        self.query_one(OptionList).highlighted = numbers.index(wanted)
        self.number = wanted
        self.query_one(OptionList).focus()

    def _fill_list(self) -> None:
        state = self.services.controller.session(self.session_name)
        start = session_start(state) if state is not None else 0.0
        options = self.query_one(OptionList)
        options.clear_options()
        for record in self.records:
            label = Text(f"#{record.number}", style="bold")
            label.append(f"  +{elapsed(record.at - start)}  {record.origin}")
            options.add_option(Option(label, id=str(record.number)))

    def watch_number(self, number: int) -> None:
        record = self.record(number)
        if record is None:
            return
        previous = self.record(number - 1)
        meta = Text(f"Checkpoint #{record.number}", style="bold")
        meta.append(f" \u00b7 {ORIGIN_NOTES.get(record.origin, record.origin)}")
        if previous is not None:
            meta.append(f" \u00b7 compared with #{previous.number}")
        if record.path:
            meta.append("\n")
            meta.append_text(literal(record.path, style="dim"))
        self.query_one("#meta", Static).update(meta)
        self.query_one(CheckpointView).checkpoint = (
            record.text,
            previous.text if previous is not None else None,
        )
        self.query_one("#sections", VerticalScroll).scroll_home(animate=False)

    @on(OptionList.OptionHighlighted, "#list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            self.number = int(event.option.id)

    def action_export(self) -> None:
        record = self.record(self.number)
        if record is None:
            self.app.bell()
            return
        from mala_tui.ui.screens.export import ExportScreen

        default = Path.cwd() / f"{safe_file_name(self.session_name)}-checkpoint-{record.number}.md"

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.export_to(record, path)

        self.app.push_screen(ExportScreen(default), chosen)

    def export_to(self, record: CheckpointRecord, path: Path) -> bool:
        """Write the checkpoint's markdown to a new file; never overwrites one."""
        try:
            with path.expanduser().open("x", encoding="utf-8") as out:
                out.write(record.text if record.text.endswith("\n") else record.text + "\n")
        except FileExistsError:
            self.app.notify(
                f"{path} exists already: choose another name", severity="error", markup=False
            )
            return False
        except OSError as exc:
            self.app.notify(
                f"Could not write {path}: {exc.strerror or exc}", severity="error", markup=False
            )
            return False
        self.app.notify(f"Checkpoint #{record.number} written to {path}", markup=False)
        return True
