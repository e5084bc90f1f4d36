"""What the app does for its parts: put a screen or a notice in front of the person.

The session actions and the answer queue act for the person (open a dialog, say
what happened) but are not screens, so Textual gives them no `self.app`; they are
given this instead. `MalaApp` is one; the parts never import it, so the app can
import them.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from textual.notifications import SeverityLevel
from textual.screen import Screen

from mala_tui.runtime.session.by_hand import Interactive

ResultT = TypeVar("ResultT")


class Shell(Protocol):
    """The app as its parts see it (Textual's `App` methods, and the app's own navigation)."""

    @property
    def screen(self) -> Screen[object]:
        """The screen on top."""

    def push_screen(
        self, screen: Screen[ResultT], callback: Callable[[ResultT | None], None] | None = None
    ) -> object: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def bell(self) -> None: ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def run_worker(  # noqa: PLR0917 (Textual's own signature)
        self,
        work: Coroutine[Any, Any, Any],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Any:
        """Work that takes a while (git, a process), run without holding up the screen."""

    async def run_in_terminal(self, how: Interactive) -> int:
        """Give the terminal to the interactive Claude Code until it exits (the app suspends
        meanwhile, the run goes on); its exit status.

        Raises:
            ByHandError: this app's terminal cannot be given away.
        """

    def open_session(self, name: str) -> None:
        """The session's detail screen."""

    def open_checkpoints(self, name: str, number: int | None = None) -> None:
        """The checkpoint viewer on the session, at checkpoint `number` (default: the last)."""
