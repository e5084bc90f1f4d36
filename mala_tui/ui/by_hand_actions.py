"""A session opened by hand: its process ended, the interactive Claude Code opened on its
conversation (a tmux window of its own, else this terminal), and once that has exited,
the person asked whether the session goes on or ends."""

from __future__ import annotations

from mala_tui.core.session_records import SessionSnapshot
from mala_tui.runtime.consoles.sockets import ChannelError
from mala_tui.runtime.session.by_hand import ByHandError, console_problem, in_tmux, run_in_tmux
from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.controller import Controller
from mala_tui.ui.screens.by_hand import HandBackScreen
from mala_tui.ui.shell import Shell
from mala_tui.ui.source import HandSource


class ByHandActions:
    """The by-hand action of `ui.session_actions.SessionActions`, with its workers."""

    def __init__(self, shell: Shell, controller: Controller, bridge: UpdateBridge) -> None:
        self.shell = shell
        self.controller = controller
        self.bridge = bridge

    def open(self, snapshot: SessionSnapshot) -> None:
        """Open the session by hand, or say why this console cannot."""
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
