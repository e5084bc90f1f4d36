"""What the app hands its screens and its parts, so none of them reaches up into the app.

A screen is given a `Services` when it is made and uses only that: the
controller (reads and commands), the bridge (live updates to subscribe to), the
session actions, and the time now (the run's age is reckoned from the journal's
start, not from when this console opened). The app's parts that are not screens
(the answer queue) are given it too, with the `shell` that puts screens and notices
in front of the person. Screens stay testable on their own and a change
to the app's insides cannot silently break one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.controller import Controller
from mala_tui.ui.session_action_table import SessionActionRunner
from mala_tui.ui.shell import Shell


@dataclass(frozen=True, slots=True)
class Services:
    controller: Controller
    bridge: UpdateBridge
    actions: SessionActionRunner
    """The session actions (ui.session_actions), as far as screens may use them."""
    now: Callable[[], float]
    """Wall-clock seconds, as the events' times (`at`)."""
    shell: Shell
    """The app, as far as its parts may use it (ui.shell)."""
