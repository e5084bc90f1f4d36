"""Land a worktree session's work: the commit message drafted from its checkpoint, edited
here, then its branch merged into the branch the run started from.

The draft is the subject (from the task), what the checkpoint says was done, and where the
work came from; the person edits it before anything happens. What is left to land is read
from git as the dialog opens. A refusal (a conflict, a base checkout with uncommitted
changes...) is said on one line in the dialog, with nothing changed, and the dialog stays.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from mala_tui.core import events as ev
from mala_tui.core.session_records import BranchStatus
from mala_tui.runtime.git.landing import LandingError
from mala_tui.ui.text import literal

Land = Callable[[str], Awaitable[ev.WorktreeLanded]]
"""Lands with this commit message; raises LandingError saying why when it is refused."""
ReadStatus = Callable[[], Awaitable[BranchStatus | None]]
"""What is left to land, read from git now."""


class LandScreen(ModalScreen[ev.WorktreeLanded | None]):
    """Dismisses with the landing done, or None (escape, cancel)."""

    CSS_PATH = str(Path(__file__).with_name("land.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "land", "Land"),
    ]

    def __init__(
        self,
        session: str,
        branch: str,
        into: str,
        draft: str,
        *,
        land: Land,
        read_status: ReadStatus,
    ) -> None:
        super().__init__()
        self.session_name = session
        self._branch, self._into, self._draft = branch, into, draft
        self._land, self._read_status = land, read_status
        self._landing = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(literal(f"Land {self.session_name}", one_line=True), id="title")
            into = self._into or "(a detached HEAD: nothing to merge into)"
            yield Static(literal(f"{self._branch} into {into}", one_line=True), id="branches")
            yield Static("reading what is left to land...", id="status")
            yield Static(
                "Commit message (of the agent's uncommitted edits; a merge commit's body)",
                id="label",
            )
            yield TextArea(self._draft, id="message", soft_wrap=True, show_line_numbers=False)
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Land", variant="primary", id="land")
                yield Button("Cancel", id="cancel")
            yield Static(
                "ctrl+s lands \u00b7 escape cancels \u00b7 a fast-forward when it can be, else "
                "a merge commit; refused with nothing changed on a conflict",
                id="hint",
            )

    def on_mount(self) -> None:
        self.query_one("#message", TextArea).focus()
        self.run_worker(self._show_status(), group="land-status", exit_on_error=False)

    async def _show_status(self) -> None:
        line = self.query_one("#status", Static)
        try:
            found = await self._read_status()
        except LandingError as exc:
            line.update(literal(str(exc)))
            return
        line.update(literal("its branch is gone" if found is None else found.label))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "land":
            self.action_land()
        else:
            self.dismiss(None)

    def action_land(self) -> None:
        if self._landing:
            return
        self._landing = True
        self.query_one("#error", Static).update("landing...")
        text = self.query_one("#message", TextArea).text
        self.run_worker(self._do_land(text), group="land", exit_on_error=False)

    async def _do_land(self, text: str) -> None:
        try:
            done = await self._land(text)
        except LandingError as exc:
            self._landing = False
            self.query_one("#error", Static).update(literal(str(exc)))
            return
        self.dismiss(done)

    def action_cancel(self) -> None:
        if not self._landing:
            self.dismiss(None)
