"""What the operator can do to a session, shared by the key bindings and the command palette.

Every screen's session bindings are made from this table (`session_bindings`:
the key, the footer's word and the `session('pause')` action come from here),
the palette lists the same table, and availability is decided in one place: a
finished run read from its journal offers only what reads; a session that has
ended cannot be paused, stopped or masked, but a stopped or failed one can be
restarted from its checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from textual.binding import Binding

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Command
from mala_tui.core.operator_actions import (
    ForkSession,
    RequireApproval,
    SayToAgent,
    SessionCommand,
    SetManageMode,
)
from mala_tui.core.phases import ManageMode, Phase
from mala_tui.core.text import plural
from mala_tui.core.view import SessionSnapshot
from mala_tui.runtime.consoles.sockets import ChannelError
from mala_tui.runtime.git.landing import LandingError
from mala_tui.runtime.session.by_hand import ByHandError, console_problem, in_tmux, run_in_tmux
from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.controller import Controller, ReadOnlyError
from mala_tui.ui.format import phase_label
from mala_tui.ui.screens.by_hand import HandBackScreen
from mala_tui.ui.shell import Shell
from mala_tui.ui.source import HandSource


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


RESTARTABLE_ENDINGS: Final = frozenset({EndStatus.STOPPED, EndStatus.FAILED, EndStatus.DENIED})
LANDING_ACTIONS: Final = frozenset({ActionId.LAND, ActionId.DISCARD})
"""What finishes a worktree session's work: offered only for sessions that have a worktree."""


class SessionActions:
    """Runs a session action by id for the app, with the notices and confirmations it needs.

    What an action changes is shown as the run records it: the bridge is flushed after
    one, so a change the run records at once (an approval setting, a queued message)
    shows at once.
    """

    def __init__(self, shell: Shell, controller: Controller, bridge: UpdateBridge) -> None:
        self.shell = shell
        self.controller = controller
        self.bridge = bridge

    def available(self, action_id: str, name: str | None) -> bool | None:
        """True: offered; None: shown but not possible now; False: not offered at all."""
        action = ACTIONS_BY_ID.get(action_id)
        if action is None:
            return False
        if action.live_only and not self.controller.live:
            return False
        snapshot = self.controller.snapshot(name) if name is not None else None
        if snapshot is None:
            # No session in focus: a landing key is not offered (it would read as if the
            # run had worktrees); the others are shown, not possible until one is.
            return False if action_id in LANDING_ACTIONS else None
        if action_id in LANDING_ACTIONS:
            return self._landing_available(action_id, snapshot)
        if action_id == ActionId.CHECKPOINTS:
            state = self.controller.session(snapshot.name)
            return True if state is not None and state.checkpoints else None
        if snapshot.status is None:
            return True
        if action_id == ActionId.RESTART:
            gone = snapshot.worktree_status is not None and snapshot.worktree_status.discarded
            return True if snapshot.status in RESTARTABLE_ENDINGS and not gone else None
        return True if action.when_ended else None

    def _landing_available(self, action_id: str, snapshot: SessionSnapshot) -> bool | None:
        """Not offered without a worktree (or a way to land), shown but not possible once
        discarded. While the session runs, or with nothing left to land, it is offered so
        that pressing it says why it is refused."""
        state = self.controller.session(snapshot.name)
        if self.controller.landings() is None or state is None or state.worktree is None:
            return False
        found = snapshot.worktree_status
        return None if found is not None and found.discarded else True

    def run(self, action_id: str, name: str) -> None:
        snapshot = self.controller.snapshot(name)
        if snapshot is None or not self.available(action_id, name):
            # Chosen in the palette just before the run or the session changed: say why.
            action = ACTIONS_BY_ID.get(action_id)
            label = action.label if action is not None else action_id
            why = self.controller.over or (
                "the run has ended" if not self.controller.live else "not possible now"
            )
            self.shell.notify(f"{label}: {name}: {why}", severity="warning", markup=False)
            return
        try:
            getattr(self, f"_{action_id}")(snapshot)
        except ReadOnlyError as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)

    # -- one method per action, named after its id -------------------------------------------------

    def _open(self, snapshot: SessionSnapshot) -> None:
        self.shell.open_session(snapshot.name)

    def _checkpoints(self, snapshot: SessionSnapshot) -> None:
        self.open_checkpoints(snapshot.name)

    def open_checkpoints(self, name: str, number: int | None = None) -> None:
        """The checkpoint viewer on this session, at checkpoint `number` (default: the last)."""
        self.shell.open_checkpoints(name, number)

    def _pause(self, snapshot: SessionSnapshot) -> None:
        command = Command.RESUME if snapshot.phase is Phase.PAUSED else Command.PAUSE
        self._send(snapshot.name, command)

    def _stop(self, snapshot: SessionSnapshot) -> None:
        from mala_tui.ui.screens.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                self._send(snapshot.name, Command.STOP)

        self.shell.push_screen(
            ConfirmScreen(
                f"Stop {snapshot.name}?",
                f"It is {phase_label(snapshot.phase)}. Its checkpoint is kept, and it can be "
                "restarted by hand.",
                confirm="Stop",
            ),
            answered,
        )

    def _mask(self, snapshot: SessionSnapshot) -> None:
        self._send(snapshot.name, Command.MASK_NOW)

    def _restart(self, snapshot: SessionSnapshot) -> None:
        self._send(snapshot.name, Command.RESTART_NOW)

    def _approval(self, snapshot: SessionSnapshot) -> None:
        required = not snapshot.require_approval
        self.controller.act(RequireApproval(session=snapshot.name, required=required))
        state = "on" if required else "off"
        self.shell.notify(f"{snapshot.name}: approval before restarts is {state}", markup=False)
        self.bridge.flush()

    def _manage(self, snapshot: SessionSnapshot) -> None:
        modes = list(ManageMode)
        mode = modes[(modes.index(snapshot.manage) + 1) % len(modes)]
        self.controller.act(SetManageMode(session=snapshot.name, mode=mode))
        self.shell.notify(f"{snapshot.name}: management mode {mode.value}", markup=False)

    def _transcript(self, snapshot: SessionSnapshot) -> None:
        path = self.controller.transcript_path(snapshot.name)
        if path is None:
            self.shell.notify(
                f"{snapshot.name} has no agent transcript yet", severity="warning", markup=False
            )
            return
        self.shell.copy_to_clipboard(str(path))
        self.shell.notify(str(path), title="Transcript path copied", markup=False, timeout=10)

    def toggle_approval_all(self) -> None:
        """Approval on for every session, or off when every session already has it."""
        controller = self.controller
        try:
            required = not controller.requires_approval_everywhere()
            controller.act(RequireApproval(session=None, required=required))
        except ReadOnlyError as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        state = "on" if required else "off"
        self.shell.notify(f"Approval before restarts is {state} for every session")
        self.bridge.flush()

    def _say(self, snapshot: SessionSnapshot) -> None:
        from mala_tui.ui.screens.message import MessageScreen

        name = snapshot.name

        def sent(text: str | None) -> None:
            if text:
                self.shell.notify(f"{name}: message queued for its next clean point", markup=False)
                self.bridge.flush()

        self.shell.push_screen(
            MessageScreen(
                name,
                phase_label(snapshot.phase),
                snapshot.messages_waiting,
                lambda text: self.controller.act(SayToAgent(session=name, text=text)),
            ),
            sent,
        )

    def _cancel(self, snapshot: SessionSnapshot) -> None:
        from mala_tui.ui.screens.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                self._send(snapshot.name, Command.CANCEL)

        self.shell.push_screen(
            ConfirmScreen(
                f"Cancel {snapshot.name}?",
                f"It is {phase_label(snapshot.phase)}. It is asked to write its checkpoint "
                "first (unless one is written already), then it stops and does not restart. "
                "The checkpoint is kept.",
                confirm="Cancel session",
            ),
            answered,
        )

    def _by_hand(self, snapshot: SessionSnapshot) -> None:
        problem = console_problem()
        hands = self.controller.hands()
        if problem is None and hands is None:
            problem = (
                "this console cannot open a session by hand; `mala-tui open` can, once the "
                "run has ended"
            )
        if problem is not None or hands is None:
            self.shell.notify(problem or "", severity="warning", markup=False)
            return
        self.shell.run_worker(self._open_by_hand(hands, snapshot.name), group="by-hand")

    async def _open_by_hand(self, hands: HandSource, name: str) -> None:
        """End its process, open it in the interactive Claude Code (a tmux window, else this
        terminal), and once that has exited, ask whether it goes on or ends."""
        try:
            how = await hands.take_over(name)
        except (ValueError, ByHandError, ChannelError) as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        self.bridge.flush()
        ended = self.controller.state.sessions[name].status is not None
        failed = ""
        try:
            if in_tmux():
                self.shell.notify(
                    f"{name} is open in Claude Code in a tmux window of its own; when you "
                    "exit it there, mala-tui asks what becomes of it",
                    title="By hand",
                    timeout=15,
                    markup=False,
                )
                await run_in_tmux(how)
            else:
                await self.shell.run_in_terminal(how)
        except (ByHandError, OSError) as exc:
            failed = f"Claude Code could not be opened ({exc})."
        if ended:
            await self._hand_back(hands, name, go_on=False)  # what the person did, read back
            return

        def answered(go_on: bool | None) -> None:
            self.shell.run_worker(self._hand_back(hands, name, go_on=bool(go_on)), group="by-hand")

        self.shell.push_screen(HandBackScreen(name, failed or "Claude Code has exited."), answered)

    async def _hand_back(self, hands: HandSource, name: str, *, go_on: bool) -> None:
        try:
            await hands.hand_back(name, go_on=go_on)
        except (ValueError, ChannelError) as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        self.bridge.flush()

    def _fork(self, snapshot: SessionSnapshot) -> None:
        from mala_tui.ui.screens.fork import ForkScreen

        parent = snapshot.name
        taken = set(self.controller.snapshots())
        number = 1
        while f"{parent}-fork{number}" in taken:
            number += 1
        state = self.controller.session(parent)

        def forked(name: str | None) -> None:
            if name:
                self.shell.notify(f"{name} forked from {parent}", markup=False)
                self.bridge.flush()

        self.shell.push_screen(
            ForkScreen(
                parent,
                f"{parent}-fork{number}",
                lambda name, instruction: self.controller.act(
                    ForkSession(parent=parent, name=name, instruction=instruction)
                ),
                worktree=state is not None and state.worktree is not None,
            ),
            forked,
        )

    def _land(self, snapshot: SessionSnapshot) -> None:
        from mala_tui.core.describe import summary
        from mala_tui.ui.screens.land import LandScreen

        landings = self.controller.landings()
        if landings is None:
            return
        name = snapshot.name
        try:
            target = landings.target(name)
            draft = landings.draft(name)
        except LandingError as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        left = snapshot.worktree_status
        if left is not None and not left.to_land:
            self.shell.notify(f"{name}: nothing to land ({left.label})", markup=False)
            return

        def landed(event: ev.WorktreeLanded | None) -> None:
            if event is not None:
                self.shell.notify(f"{name}: {summary(event)}", title="Landed", markup=False)
                self.bridge.flush()

        self.shell.push_screen(
            LandScreen(
                name,
                target.branch,
                target.base_branch,
                draft,
                land=lambda message: landings.land(name, message),
                read_status=lambda: landings.status(name),
            ),
            landed,
        )

    def _discard(self, snapshot: SessionSnapshot) -> None:
        self.shell.run_worker(self._discard_asking(snapshot.name), group="discard")

    async def _discard_asking(self, name: str) -> None:
        """Discarded only once the person says so, told what would be lost (if anything):
        a worktree and its branch cannot be had back."""
        from mala_tui.ui.screens.confirm import ConfirmScreen

        landings = self.controller.landings()
        if landings is None:
            return
        try:
            found = await landings.status(name)
            target = landings.target(name)
        except LandingError as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        work = found is not None and found.to_land

        def answered(yes: bool | None) -> None:
            if yes:
                self.shell.run_worker(self._discard_now(name, force=work), group="discard")

        if found is not None and found.to_land:
            into = target.base_branch or "the commit the run started from"
            lost = [f"{plural(found.ahead, 'commit')} not in {into}"] if found.ahead else []
            if found.uncommitted:
                lost.append("uncommitted edits")
            body = (
                f"Its branch {target.branch} has {' and '.join(lost)}. Discarding removes its "
                "worktree and its branch: that work is lost. Land it (L) to keep it."
            )
        else:
            left = found.label if found is not None else "nothing to land"
            body = (
                f"Its branch {target.branch}: {left}, so no work is lost. Discarding removes "
                "its worktree and its branch."
            )
        self.shell.push_screen(ConfirmScreen(f"Discard {name}?", body, confirm="Discard"), answered)

    async def _discard_now(self, name: str, *, force: bool) -> None:
        from mala_tui.core.describe import summary

        landings = self.controller.landings()
        if landings is None:
            return
        try:
            event = await landings.discard(name, force=force)
        except LandingError as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        self.shell.notify(f"{name}: {summary(event)}", title="Discarded", markup=False)
        self.bridge.flush()

    def _send(self, name: str, command: Command) -> None:
        try:
            self.controller.act(SessionCommand(session=name, command=command))
        except ReadOnlyError as exc:  # the run ended, or its host went, since the key
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        self.shell.notify(f"{name}: {command.value.replace('_', ' ')} sent", markup=False)
