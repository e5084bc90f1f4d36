"""What the operator can do to a session: one table, shared by the key bindings and the palette.

Every screen's session bindings are made from this table (`session_bindings`:
the key, the footer's word and the `session('pause')` action come from here),
and the palette lists the same table. Whether an action is offered is decided in
one place, `ui.session_actions.SessionActions.available`: a finished run read
from its journal offers only what reads; a session that has ended cannot be
paused, stopped or masked, but a stopped or failed one can be restarted from its
checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Protocol

from textual.binding import Binding


class ActionId(StrEnum):
    """What the operator can do to a session: the table's ids, the key bindings'
    `session('<id>')` argument, and the name of the method that does it."""

    OPEN = "open"
    CHECKPOINTS = "checkpoints"
    PAUSE = "pause"
    STOP = "stop"
    MASK = "mask"
    RESTART = "restart"
    APPROVAL = "approval"
    MANAGE = "manage"
    TRANSCRIPT = "transcript"
    SAY = "say"
    BY_HAND = "by_hand"
    FORK = "fork"
    LAND = "land"
    DISCARD = "discard"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class SessionAction:
    id: ActionId
    key: str
    short: str
    """The footer's word for it."""
    label: str
    """The palette's and the help's name for it."""
    help: str
    live_only: bool = True
    when_ended: bool = False
    """Still offered once the session has ended."""


SESSION_ACTIONS: Final = (
    SessionAction(
        ActionId.OPEN,
        "enter",
        "Open",
        "Open",
        "chart, restarts, masked results and event log",
        live_only=False,
        when_ended=True,
    ),
    SessionAction(
        ActionId.CHECKPOINTS,
        "c",
        "Checkpoints",
        "Checkpoints",
        "every checkpoint, what changed, export",
        live_only=False,
        when_ended=True,
    ),
    SessionAction(
        ActionId.PAUSE,
        "p",
        "Pause/resume",
        "Pause or resume",
        "hold the session after its current turn, or go on",
    ),
    SessionAction(ActionId.STOP, "x", "Stop", "Stop", "end the session; its checkpoint is kept"),
    SessionAction(
        ActionId.MASK,
        "m",
        "Mask now",
        "Mask now",
        "mask old tool results now, whatever the pressure",
    ),
    SessionAction(
        ActionId.RESTART,
        "r",
        "Restart now",
        "Checkpoint and restart now",
        "wind down, checkpoint, start fresh",
        when_ended=True,
    ),
    SessionAction(
        ActionId.APPROVAL,
        "v",
        "Approval on/off",
        "Require approval on or off",
        "ask before this session restarts",
    ),
    SessionAction(
        ActionId.MANAGE,
        "g",
        "Manage mode",
        "Management mode: full, mask, off",
        "what mala-tui does to this window: mask and restart, mask only, or watch only",
    ),
    SessionAction(
        ActionId.TRANSCRIPT,
        "o",
        "Transcript path",
        "Transcript path",
        "copy the agent's transcript path",
        when_ended=True,
    ),
    SessionAction(
        ActionId.SAY,
        "t",
        "Message",
        "Message to the agent",
        "say something to the agent: it goes at its next clean point",
    ),
    SessionAction(
        ActionId.BY_HAND,
        "h",
        "By hand",
        "Open in Claude Code by hand",
        "end its process and open it in the interactive Claude Code; afterwards hand it back "
        "or end it",
        when_ended=True,
    ),
    SessionAction(
        ActionId.FORK,
        "f",
        "Fork",
        "Fork the conversation",
        "a new session from this one's conversation as it stands, with another instruction",
        when_ended=True,
    ),
    SessionAction(
        ActionId.LAND,
        "L",
        "Land",
        "Land its work",
        "commit what the agent left (message drafted from its checkpoint, yours to edit), "
        "then merge its branch into the branch the run started from",
        live_only=False,
        when_ended=True,
    ),
    SessionAction(
        ActionId.DISCARD,
        # Not D: that detaches, and one key means one thing (a refused discard once fell
        # through to detach, and an offered one took the place of detach).
        "delete",
        "Discard",
        "Discard its worktree",
        "remove its worktree and branch (asks first, saying what would be lost)",
        live_only=False,
        when_ended=True,
    ),
    SessionAction(
        ActionId.CANCEL,
        "X",
        "Cancel",
        "Cancel (checkpoint, then stop)",
        "take the session out of the run: it writes its checkpoint, then stops",
    ),
)
ACTIONS_BY_ID: Final[dict[str, SessionAction]] = {action.id: action for action in SESSION_ACTIONS}
"""By id; a binding's `session('<id>')` gives its id as a plain string."""


def session_bindings(*ids: ActionId, show: bool = True) -> list[Binding]:
    """Key bindings for these actions, in this order, each running `session('<id>')` on the
    screen; `show` puts them in the footer. A screen lists the ones it offers."""
    return [
        Binding(ACTIONS_BY_ID[i].key, f"session('{i}')", ACTIONS_BY_ID[i].short, show=show)
        for i in ids
    ]


LANDING_ACTIONS: Final = frozenset({ActionId.LAND, ActionId.DISCARD})
"""What finishes a worktree session's work: offered only for sessions that have a worktree."""


class SessionActionRunner(Protocol):
    """What a screen or the palette may ask of the app about these actions
    (`ui.session_actions.SessionActions` answers): a screen names an action by its id
    and never reaches up into what runs it."""

    def available(self, action_id: str, name: str | None) -> bool | None:
        """True: offered; None: shown but not possible now; False: not offered at all."""
        ...

    def run(self, action_id: str, name: str) -> None: ...

    def open_checkpoints(self, name: str, number: int | None = None) -> None: ...

    def toggle_approval_all(self) -> None: ...
