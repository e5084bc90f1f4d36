"""Running what the operator can do to a session, for the app's keys and its palette.

The actions themselves, their keys and when each is offered are the table in
`ui.session_action_table`; here each is run by id, with the notices and
confirmations it needs. Landing and discarding a worktree are `ui.landing_actions`,
opening a session by hand `ui.by_hand_actions`.
"""

from __future__ import annotations

from typing import Final

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
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.by_hand_actions import ByHandActions
from mala_tui.ui.controller import Controller, ReadOnlyError
from mala_tui.ui.format import phase_label
from mala_tui.ui.landing_actions import LandingActions
from mala_tui.ui.session_action_table import ACTIONS_BY_ID, LANDING_ACTIONS, ActionId
from mala_tui.ui.shell import Shell

RESTARTABLE_ENDINGS: Final = frozenset({EndStatus.STOPPED, EndStatus.FAILED, EndStatus.DENIED})


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
        self.landing = LandingActions(shell, controller, bridge)
        self.by_hand = ByHandActions(shell, controller, bridge)

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
        self.by_hand.open(snapshot)

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
        self.landing.land(snapshot)

    def _discard(self, snapshot: SessionSnapshot) -> None:
        self.landing.discard(snapshot)

    def _send(self, name: str, command: Command) -> None:
        try:
            self.controller.act(SessionCommand(session=name, command=command))
        except ReadOnlyError as exc:  # the run ended, or its host went, since the key
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        self.shell.notify(f"{name}: {command.value.replace('_', ' ')} sent", markup=False)
