"""A session whose host runs elsewhere (a cluster engine's), seen from the driver.

`RemoteRunner` stands in the supervisor where a local `SessionRunner` would: the same
commands, the same status, the same `run()`. It has a host placed for the session
(runtime.cluster.session_host, through a `HostEngine`: runtime.cluster.ray_engine), and
relays commands to it. Its parts: a `HostFollower` (runtime.cluster.host_follower) reads
the host's batches and records every event through the run's recorder, so the journal,
the app, `show` and `resume` see what a local session would show them; the questions the
session waits on are asked at the driver's desk (runtime.cluster.host_questions), and the
answers go back to the host; a `RestartPlanner` (runtime.cluster.restart_planner) keeps the
session's events and plans from them how the session goes on when its host is lost.

When the host is lost with its node, the session is restarted on another host from a
checkpoint. Before a new host is placed the old one is killed, so a session never runs
twice; the events received before the loss stay in the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.calibration import Density
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import Command, SessionHandedBack
from mala_tui.core.operator_actions import (
    RequireApproval,
    SessionAction,
    SessionCommand,
    action_json,
)
from mala_tui.core.prompts import PromptSet
from mala_tui.core.resume_plan import ORPHANED
from mala_tui.core.run_view import RunState
from mala_tui.runtime.backends.base import PermissionGate, SessionSpec
from mala_tui.runtime.cluster.host_follower import HostFollower
from mala_tui.runtime.cluster.host_link import HostEngine, HostLink, HostLostError
from mala_tui.runtime.cluster.host_questions import HostQuestions
from mala_tui.runtime.cluster.mirror import Workspace
from mala_tui.runtime.cluster.replay import from_current_host
from mala_tui.runtime.cluster.restart_planner import RestartPlanner
from mala_tui.runtime.cluster.session_host import BackendFactory, HostSetup
from mala_tui.runtime.cluster.wire import HostEnd
from mala_tui.runtime.questions.approvals import Approvals
from mala_tui.runtime.questions.desk import Desk
from mala_tui.runtime.session.agent_process import EventSink, uncancellable
from mala_tui.runtime.session.runner_limits import RunnerLimits

#: How long a stopping driver waits for a host to say how its session ended.
STOP_WAIT_SECONDS = 60.0


class RemoteRunner:
    """One session, run by a host elsewhere; the supervisor's side of it."""

    def __init__(
        self,
        *,
        spec: SessionSpec,
        manager: ContextManager,
        engine: HostEngine,
        run_id: str,
        runner_limits: RunnerLimits,
        backend: BackendFactory,
        prompts: PromptSet,
        sink: EventSink,
        approvals: Approvals,
        desk: Desk,
        permissions: PermissionGate | None = None,
        orphan_seconds: float = 30 * 60.0,
        clock: Callable[[], float] = time.time,
        history: Sequence[ev.Event] = (),
        reattach: bool = False,
        workspace: Workspace | None = None,
    ) -> None:
        """`history`: the session's events journaled before (a resumed run's); `reattach`:
        its latest host may still run (a resumed run's), taken up again first; `workspace`:
        in a worktree run, the worktree each host makes from its mirror of the repository
        (runtime.cluster.mirror), from the last snapshot when one was pushed (a host after
        a lost one), pushing one after each turn."""
        self.spec = spec
        self.manager = manager
        """The manager the session starts with (the host runs its copy; a restart after a
        lost host gets a new one)."""
        self._engine = engine
        self._run_id = run_id
        self._runner_limits = runner_limits
        self._backend = backend
        self._sink = sink
        self._desk = desk
        self._questions = HostQuestions(spec.name, approvals, desk, permissions)
        """The questions its host waits on, asked at the driver's desk."""
        self._orphan_seconds = orphan_seconds
        self._clock = clock
        self._follower = HostFollower(
            session=spec.name, sink=sink, clock=clock, questions=self._questions
        )
        self._planner = RestartPlanner(
            spec=spec, manager=manager, prompts=prompts, sink=sink, clock=clock, history=history
        )
        self._link: HostLink | None = None
        self._waiting: list[tuple[str, tuple[object, ...]]] = []
        """Calls made before a host was up: sent to it once it is."""
        self._status: EndStatus | None = None
        self._end_reason = ""
        self.attempts = max((e.attempt for e in self._planner.placed()), default=0)
        """Hosts placed for the session so far (a resumed run's count goes on)."""
        self.reattach = reattach
        self.stop_reason = ""
        self.workspace = workspace

    # -- what the supervisor reads -------------------------------------------------------------

    @property
    def status(self) -> EndStatus | None:
        return self._status

    @property
    def end_reason(self) -> str:
        return self._end_reason

    @property
    def pids(self) -> list[int]:
        """Every agent process the session's hosts started (pids on their machines)."""
        return sorted(self._follower.pids)

    @property
    def elsewhere(self) -> str:
        """The node of the session's latest host (or "another host" before one)."""
        placed = [e.node for e in self._planner.placed() if e.node]
        return placed[-1] if placed else "another host"

    @property
    def process_open(self) -> bool:
        """Its agent's process is on its host, never here."""
        return False

    def window(self, state: RunState) -> WindowContents:
        """Its transcript as the host sent it; the calibration from the run's view (the
        manager runs on the host)."""
        session = state.sessions.get(self.spec.name)
        density = Density(1.0, False)
        if session is not None:
            density = Density(session.density, session.density_measured)
        return WindowContents(self._follower.mirror, density, str(self.spec.cwd))

    def take_over(self) -> asyncio.Future[str]:
        raise ValueError(self._kept_there())

    def hand_back(self, handed: SessionHandedBack) -> None:
        raise ValueError(self._kept_there())

    def _kept_there(self) -> str:
        return (
            f"{self.spec.name} runs on {self.elsewhere}, which keeps its transcript: it "
            "cannot be opened by hand from here"
        )

    def recorded(self, event: ev.Event) -> None:
        """An event of this session, as the run recorded it (from its host, from here, or
        from elsewhere in the driver: its worktree, its permission requests)."""
        self._planner.recorded(event)

    # -- commands, relayed to the host ---------------------------------------------------------

    def _tell(self, method: str, *args: object) -> None:
        if self._link is None:
            self._waiting.append((method, args))
        else:
            self._link.tell(method, *args)

    def apply(self, action: SessionAction) -> None:
        """What a person did to the session, relayed to its host as JSON (its enums
        serialized by pydantic); one told before the host runs waits for it."""
        if isinstance(action, RequireApproval):
            self._planner.require_approval = action.required
        self._tell("apply", action_json(action))

    def hurry(self) -> None:
        """The stop was asked for again: the host kills the agent process now."""
        self._tell("hurry")

    def budget_reached(self, over: bool, reason: str) -> None:
        self._tell("budget_reached", over, reason)

    # -- the session's life --------------------------------------------------------------------

    async def run(self) -> EndStatus:
        manager: ContextManager | None = self.manager
        try:
            if self.reattach and self.attempts:
                link = await self._engine.find(self.spec.name, self.attempts)
                if link is not None:
                    self._follower.replayed = from_current_host(self._planner.events)
                    manager = await self._host(link, reattached=True)
                else:  # gone since `resume` saw it: a lost host, placed anew from the plan
                    last = self._planner.placed()[-1:]
                    node, address = (last[0].node, last[0].address) if last else ("", "")
                    gone = "gone before the driver came back"
                    self._planner.record_loss(node, address, gone, restart=True)
                    self._desk.withdraw_session(self.spec.name, "its host is gone")
            while manager is not None:
                self.attempts += 1
                try:
                    link = await self._engine.place(
                        self.spec.name, self.attempts, self._setup(manager)
                    )
                except HostLostError as lost:
                    manager = self._after_loss(lost)
                    continue
                manager = await self._host(link)
        except asyncio.CancelledError:
            await uncancellable(self._stop_on_cancel())
            raise
        return self._status or EndStatus.FAILED

    def _setup(self, manager: ContextManager) -> HostSetup:
        return HostSetup(
            run_id=self._run_id,
            spec=self.spec,
            manager=manager,
            runner_limits=self._runner_limits,
            backend=self._backend,
            orphan_seconds=self._orphan_seconds,
            workspace=self.workspace,
        )

    async def _host(self, link: HostLink, *, reattached: bool = False) -> ContextManager | None:
        """Follow one placed host to the session's end; after a loss, the next manager."""
        self._link = link
        self._follower.position = 0  # a new host's outbox
        self._sink(
            ev.HostPlaced(
                at=self._clock(),
                session=self.spec.name,
                node=link.node,
                address=link.address,
                attempt=self.attempts,
                reattached=reattached,
            )
        )
        waiting, self._waiting = self._waiting, []
        for method, args in waiting:
            link.tell(method, *args)
        try:
            end = await self._follower.follow(link)
        except HostLostError as lost:
            self._link = None
            with contextlib.suppress(Exception):
                await link.kill()  # gone already, normally; never beside its successor
            return self._after_loss(lost, link)
        self._follower.check_received(end)
        with contextlib.suppress(Exception):
            await link.release()
        self._link = None
        if reattached and end.status is EndStatus.STOPPED and end.reason.startswith(ORPHANED):
            # Wound down while no driver was there: the driver is back, the session goes on.
            manager = self._planner.orphan_resumed()
            if manager is not None:
                self._follower.forget_transcript()
                return manager
        self._finish(end)
        return None

    def _after_loss(
        self, lost: HostLostError, link: HostLink | None = None
    ) -> ContextManager | None:
        """Record the loss; the manager the session restarts with, or None when it ends."""
        node = lost.node or (link.node if link is not None else "")
        address = lost.address or (link.address if link is not None else "")
        where = f" on {address}" if address else ""
        reason = f"its host{where} was lost ({lost.reason})"
        self._questions.drop(reason)
        after = self._planner.after_loss(node, address, lost.reason, reason, self._follower.mirror)
        if isinstance(after, ContextManager):
            self._follower.forget_transcript()
            return after
        if isinstance(after, HostEnd):
            self._finish(after, record=True)
        else:  # it had ended before its host went
            self._status = after
        return None

    # -- the end -------------------------------------------------------------------------------

    def _finish(self, end: HostEnd, *, record: bool = False) -> None:
        self._status, self._end_reason = end.status, end.reason
        self._follower.pids.update(end.pids)
        if record:
            self._sink(
                ev.SessionEnded(
                    at=self._clock(), session=self.spec.name, status=end.status, reason=end.reason
                )
            )

    async def _stop_on_cancel(self) -> None:
        """The driver is stopping: stop the session on its host and journal its end."""
        link = self._link
        if self._status is not None:
            return
        if link is None:
            reason = self.stop_reason or "stopped by the operator"
            self._finish(HostEnd(EndStatus.STOPPED, f"{reason} (before its host ran)"), record=True)
            return
        stop = SessionCommand(session=self.spec.name, command=Command.STOP, reason=self.stop_reason)
        link.tell("apply", action_json(stop))
        try:
            async with asyncio.timeout(STOP_WAIT_SECONDS):
                end = await self._follower.follow(link)
        except (HostLostError, TimeoutError) as exc:
            reason = f"{self.stop_reason or 'stopped'}; its host did not say how it ended: {exc}"
            self._finish(HostEnd(EndStatus.STOPPED, reason), record=True)
            with contextlib.suppress(Exception):
                await link.kill()
            return
        self._finish(end)
        with contextlib.suppress(Exception):
            await link.release()
