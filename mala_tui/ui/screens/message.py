"""The message box: something the operator says to one agent.

The message does not cut into the agent's step: it goes at the session's next
clean point (after the tools running now, before its next model request), at
once when the agent is idle, or with the fresh session's first prompt when a
restart is under way. The dialog says so, and how many messages already wait.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from mala_tui.core.text import plural
from mala_tui.ui.text import literal

Send = Callable[[str], None]
"""Sends the text; raises (ValueError and the like) with a message to show when it cannot."""


class MessageScreen(ModalScreen[str | None]):
    """Dismisses with the text sent, or None (escape, cancel)."""

    CSS_PATH = str(Path(__file__).with_name("message.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "send", "Send"),
    ]

    def __init__(self, session: str, doing: str, waiting: int, send: Send) -> None:
        super().__init__()
        self.session_name = session
        self._doing = doing
        self._waiting = waiting
        self._send = send

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(literal(f"Message to {self.session_name}", one_line=True), id="title")
            already = (
                f" Waiting already: {plural(self._waiting, 'message')}." if self._waiting else ""
            )
            yield Static(
                literal(
                    f"It is {self._doing}. The message goes at its next clean point (after "
                    "the tools running now, before its next model request), at once if it is "
                    f"idle, or with the fresh session's first prompt after a restart.{already}"
                ),
                id="body",
            )
            yield TextArea(id="text", soft_wrap=True, show_line_numbers=False)
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Send", variant="primary", id="send")
                yield Button("Cancel", id="cancel")
            yield Static("ctrl+s sends \u00b7 escape cancels", id="hint")

    def on_mount(self) -> None:
        self.query_one("#text", TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "send":
            self.action_send()
        else:
            self.dismiss(None)

    def action_send(self) -> None:
        text = self.query_one("#text", TextArea).text
        try:
            self._send(text)
        except (ValueError, KeyError, RuntimeError) as exc:
            # KeyError's str() is the repr of its key: say it plainly.
            reason = f"no session named {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            self.query_one("#error", Static).update(literal(reason))
            return
        self.dismiss(text.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
