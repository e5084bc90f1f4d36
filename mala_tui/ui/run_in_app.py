"""The run in the app: the supervisor in a worker from mount until quit, and leaving it.

Quitting stops every session with the run (`mala-tui resume` carries them on) and exits
once the run has ended; a second quit while it stops hurries it. In a console of a run
another process hosts, quitting first asks whether to detach (the run goes on) or to stop
it. When the run ends, or its host goes, every key that needs it is hidden.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final, Protocol

from textual.worker import Worker, WorkerState

from mala_tui.config import Settings
from mala_tui.core.events import RunMode
from mala_tui.runtime.consoles.sockets import ChannelError
from mala_tui.runtime.run.signals import StopReason
from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.controller import Controller
from mala_tui.ui.screens.leave import DETACH, STOP, Leave, LeaveScreen
from mala_tui.ui.shell import Shell
from mala_tui.ui.source import LiveSource

STOP_WAIT_SECONDS: Final = 30.0
"""How long quitting waits for the sessions to stop (each disconnect is bounded at 10 s)."""
QUIT_CAUSE: Final = StopReason.QUIT.cause
"""Why every session stopped when the app is quit: the run's stop, which a resume carries on."""


class AppShell(Shell, Protocol):
    """The app as the run's lifecycle sees it: a shell that can also exit and redraw its keys,
    and says whether it is a console of a hosted run and whether the person detached it."""

    attached: bool
    detached: bool

    def exit(self, result: int | None = None) -> None: ...

    def refresh_bindings(self) -> None: ...


class RunInApp:
    """The supervisor's worker, the run's end as the app shows it, and the ways out."""

    def __init__(
        self, shell: AppShell, controller: Controller, bridge: UpdateBridge, settings: Settings
    ) -> None:
        self.shell = shell
        self.controller = controller
        self.bridge = bridge
        self.settings = settings
        self.worker: Worker[object] | None = None
        """The supervisor's worker, from mount (a live run only)."""
        self.stopping = False
        """Quit was asked for once: every session is stopping; a second quit hurries."""

    def start(self, supervisor: LiveSource) -> None:
        """Run the supervisor in a worker until the run ends."""
        self.worker = self.shell.run_worker(
            self._run(supervisor), name="supervisor", group="supervisor", exit_on_error=False
        )

    async def _run(self, supervisor: LiveSource) -> object:
        result = await supervisor.run()
        self.bridge.flush()
        lost = getattr(supervisor, "lost", "")
        self.over(lost or "the run has ended")
        if lost:  # a console whose run's host went away (killed, say)
            self.shell.notify(
                f"{lost}: `{self.settings.command('resume', self.controller.state.run_id)}` "
                "carries it on",
                title="Run lost",
                severity="error",
                timeout=60,
                markup=False,
            )
        else:
            self.shell.notify("Every session has ended.", title="Run over")
        return result

    def over(self, why: str) -> None:
        """Nothing more can be sent to the run (a console's host is gone with it): every key
        that needs the run is hidden from now on, and the header says it ended."""
        if self.controller.over:
            return
        self.controller.run_over(why)
        self.shell.refresh_bindings()
        self.bridge.flush()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker is self.worker and event.state is WorkerState.ERROR:
            self.over("the run stopped on an error")
            self.shell.notify(
                f"The run stopped on an error: {worker.error!r}",
                title="Supervisor",
                severity="error",
                timeout=30,
                markup=False,
            )

    def quit(self) -> None:
        """Stop every session, wait for the supervisor to finish (agents gone), then exit;
        in a console of a hosted run, first ask: detach (the run goes on) or stop it.

        A second quit while waiting kills the agent processes at once (each one's end
        is still journaled) and cancels the supervisor, which stops its sessions on the
        way out.
        """
        worker = self.worker
        if (
            worker is None
            or worker.state not in (WorkerState.PENDING, WorkerState.RUNNING)
            or self.controller.over
        ):
            self.shell.exit(0)
            return
        sessions = self.controller.state.sessions.values()
        if all(state.status is not None for state in sessions):
            # Every session has ended: nothing is left to stop or to leave going. The run
            # is ending; the app exits once it has.
            self.stop_and_exit(ask=False)
            return
        if self.shell.attached and not self.stopping:
            if not isinstance(self.shell.screen, LeaveScreen):
                state = self.controller.state
                leave = LeaveScreen(
                    state.run_id,
                    command=self.settings.command,
                    resumable=state.mode is not RunMode.DEMO,
                )
                self.shell.push_screen(leave, self._leave)
            return
        self.stop_and_exit()

    def _leave(self, choice: Leave | None) -> None:
        if choice == DETACH:
            self.detach()
        elif choice == STOP:
            self.stop_and_exit()

    def detach(self) -> None:
        """Close this console; the run goes on (only a console of a hosted run can, while
        the run goes on)."""
        if self.shell.attached and self.controller.live:
            self.shell.detached = True
            self.shell.exit(0)

    def close_console(self) -> None:
        """This console goes (its terminal closed, a signal to detach): detached while the
        run goes on; once the run has ended there is nothing to detach from, and it leaves.
        Never a no-op: an app left running on a terminal that is gone spins."""
        if self.shell.attached and self.controller.live:
            self.shell.detached = True
        self.shell.exit(0)

    def stop_and_exit(self, *, ask: bool = True) -> None:
        """Stop every session with the run, then exit once the run has ended. `ask`: False
        when the run was told already (a signal the run's host got too)."""
        worker = self.worker
        if worker is None or worker.state not in (WorkerState.PENDING, WorkerState.RUNNING):
            self.shell.exit(0)
            return
        supervisor = self.controller.supervisor
        assert supervisor is not None
        try:
            if self.stopping:
                supervisor.hurry()
                worker.cancel()
                return
            self.stopping = True
            # Stopped with the run, not one by one: `mala-tui resume` can carry them on.
            if ask:
                supervisor.stop_for(QUIT_CAUSE)
        except ChannelError:
            # The run's host is gone (the run over, or killed): nothing is left to stop here.
            worker.cancel()
            self.shell.exit(0)
            return
        self.shell.notify("Stopping every session...", title="Quitting", timeout=STOP_WAIT_SECONDS)
        self.shell.run_worker(self._exit_when_stopped(worker), group="quit", exclusive=True)

    async def _exit_when_stopped(self, worker: Worker[object]) -> None:
        try:
            await asyncio.wait_for(self._settled(worker), STOP_WAIT_SECONDS)
        except TimeoutError:
            worker.cancel()
            await self._settled(worker)
        self.shell.exit(0)

    @staticmethod
    async def _settled(worker: Worker[object]) -> None:
        with contextlib.suppress(Exception):
            await worker.wait()
