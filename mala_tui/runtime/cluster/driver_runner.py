"""A session whose host runs elsewhere (a cluster engine's), seen from the driver.

`RemoteRunner` stands in the supervisor where a local `SessionRunner` would: the same
commands, the same status, the same `run()`. It has a host placed for the session
(runtime.cluster.session_host, through a `HostEngine`: runtime.cluster.ray_engine), reads the host's
batches and records every event through the run's recorder, so the journal, the app,
`show` and `resume` see what a local session would show them. The questions the
session waits on are asked at the driver's desk, and the answers go back to the host.

When the host is lost with its node, the session is restarted on another host from
a checkpoint: its latest, or, when the agent has worked since, one built from the
transcript the driver received (the latest listed as done before it). The restart is
a `node_lost` one and goes through the usual approval when approval is on. Before a
new host is placed the old one is killed, so a session never runs twice; the events
received before the loss stay in the journal. After `max_restarts`, or in a
management mode that does not restart, the session ends failed instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.calibration import Density
from mala_tui.core.checkpoint import Checkpoint, harness_checkpoint
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import Command, SessionHandedBack
from mala_tui.core.operator_actions import (
    RequireApproval,
    SessionAction,
    SessionCommand,
    action_json,
)
from mala_tui.core.phases import ManageMode
from mala_tui.core.prompts import PromptSet
from mala_tui.core.resume_plan import (
    ORPHANED,
    ResumeFrom,
    SessionResume,
    TaskRecord,
    plan_resume,
)
from mala_tui.core.transcript import Role, Transcript
from mala_tui.core.view import RunState
from mala_tui.runtime.backends.base import PermissionGate, SessionSpec
from mala_tui.runtime.cluster.host_link import HostEngine, HostLink, HostLostError
from mala_tui.runtime.cluster.host_questions import HostQuestions
from mala_tui.runtime.cluster.mirror import Workspace
from mala_tui.runtime.cluster.replay import from_current_host, overlap
from mala_tui.runtime.cluster.session_host import BackendFactory, HostSetup
from mala_tui.runtime.cluster.wire import Batch, HostEnd, message_from_json
from mala_tui.runtime.questions.approvals import Approvals
from mala_tui.runtime.questions.desk import Desk
from mala_tui.runtime.session.agent_process import EventSink, uncancellable
from mala_tui.runtime.session.runner import RunnerLimits

#: How often the driver tells each host it is there and what it has journaled.
ACK_SECONDS = 1.0
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
        self._prompts = prompts
        self._sink = sink
        self._desk = desk
        self._questions = HostQuestions(spec.name, approvals, desk, permissions)
        """The questions its host waits on, asked at the driver's desk."""
        self._orphan_seconds = orphan_seconds
        self._clock = clock
        self._events: list[ev.Event] = list(history)
        """Every event of this session so far: what a restart after a loss is planned from."""
        self.mirror = Transcript()
        """The transcript of the session's current agent session, as its host sent it."""
        self._link: HostLink | None = None
        self._position = 0
        self._waiting: list[tuple[str, tuple[object, ...]]] = []
        """Calls made before a host was up: sent to it once it is."""
        self._require_approval = manager.require_approval
        self._pids: set[int] = set()
        self._status: EndStatus | None = None
        self._end_reason = ""
        self._last_ack = 0.0
        self.attempts = max(
            (e.attempt for e in self._events if isinstance(e, ev.HostPlaced)), default=0
        )
        """Hosts placed for the session so far (a resumed run's count goes on)."""
        self.reattach = reattach
        self._replayed: list[str] | None = None
        """After a reattach: the journal's last events of the session, which the host's
        first batch may repeat (acknowledged by no driver before it went)."""
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
        return sorted(self._pids)

    @property
    def elsewhere(self) -> str:
        """The node of the session's latest host (or "another host" before one)."""
        placed = [e.node for e in self._events if isinstance(e, ev.HostPlaced) and e.node]
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
        return WindowContents(self.mirror, density, str(self.spec.cwd))

    def take_over(self) -> asyncio.Future[str]:
        raise ValueError(self._kept_there())

    def hand_back(self, handed: SessionHandedBack) -> None:
        raise ValueError(self._kept_there())

    def _kept_there(self) -> str:
        return (
            f"{self.spec.name} runs on {self.elsewhere}, which keeps its transcript: it "
            "cannot be opened by hand from here"
        )

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
            self._require_approval = action.required
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
                    self._replayed = from_current_host(self._events)
                    manager = await self._host(link, reattached=True)
                else:  # gone since `resume` saw it: a lost host, placed anew from the plan
                    last = [e for e in self._events if isinstance(e, ev.HostPlaced)][-1:]
                    node, address = (last[0].node, last[0].address) if last else ("", "")
                    gone = "gone before the driver came back"
                    self._record_loss(node, address, gone, restart=True)
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
        self._link, self._position = link, 0
        self._record(
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
            end = await self._follow(link)
        except HostLostError as lost:
            self._link = None
            with contextlib.suppress(Exception):
                await link.kill()  # gone already, normally; never beside its successor
            return self._after_loss(lost, link)
        self._check_received(end)
        with contextlib.suppress(Exception):
            await link.release()
        self._link = None
        if reattached and end.status is EndStatus.STOPPED and end.reason.startswith(ORPHANED):
            # Wound down while no driver was there: the driver is back, the session goes on.
            manager = self._orphan_resumed()
            if manager is not None:
                return manager
        self._finish(end)
        return None

    def _orphan_resumed(self) -> ContextManager | None:
        """The manager that restarts a session its host wound down (from its checkpoint),
        as `resume` would have; None when there is nothing to restart from."""
        plan = self._plan()
        if plan is None or plan.how is not ResumeFrom.CHECKPOINT:
            return None
        limits = replace(self.manager.limits, require_approval=self._require_approval)
        manager = ContextManager(
            name=self.spec.name, task=self.spec.task, limits=limits, prompts=self._prompts
        )
        manager.resume_from(plan, 0.0)
        self.mirror = Transcript()
        return manager

    async def _follow(self, link: HostLink) -> HostEnd:
        ticker = asyncio.create_task(self._keep_telling(link), name=f"ack {self.spec.name}")
        try:
            for _ in range(3):  # a stream that ends early is asked again from where it was
                async for batch in link.batches(self._position):
                    self._take(batch, link)
                    if batch.end is not None:
                        return batch.end
            raise HostLostError("its event stream kept ending before the session did")
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker

    async def _keep_telling(self, link: HostLink) -> None:
        """Tell the host, now and then, that its driver is there even when nothing happens."""
        while True:
            await asyncio.sleep(ACK_SECONDS * 5)
            link.tell("ack", self._position)

    def _take(self, batch: Batch, link: HostLink) -> None:
        lines = batch.events
        if self._replayed is not None:
            lines = lines[overlap(self._replayed, lines) :]
            self._replayed = None
        for line in lines:
            try:
                event = ev.parse_event(json.loads(line))
            except (ValueError, ev.UnknownEventError, ev.BadEventError) as exc:
                self._record(
                    ev.ErrorRecorded(
                        at=self._clock(),
                        session=self.spec.name,
                        where=ev.Where.HOST,
                        message=f"an event from the host could not be read: {exc}",
                    )
                )
                continue
            self._record(event)
        if batch.events:
            self._position = batch.last
        if batch.transcript_reset:
            self.mirror = Transcript()
        for message in batch.messages:
            self.mirror.append(message_from_json(message))
        self._pids.update(batch.pids)
        for ask in batch.asks:
            self._questions.ask(ask, link)
        now = time.monotonic()
        if batch.end is None and now - self._last_ack >= ACK_SECONDS:
            self._last_ack = now
            link.tell("ack", self._position)

    def _record(self, event: ev.Event) -> None:
        self._sink(event)

    def recorded(self, event: ev.Event) -> None:
        """An event of this session, as the run recorded it (from its host, from here, or
        from elsewhere in the driver: its worktree, its permission requests)."""
        self._events.append(event)
        if isinstance(event, ev.ApprovalPolicySet):
            self._require_approval = event.required

    # -- a host lost ---------------------------------------------------------------------------

    def _after_loss(
        self, lost: HostLostError, link: HostLink | None = None
    ) -> ContextManager | None:
        """Record the loss; the manager the session restarts with, or None when it ends."""
        node = lost.node or (link.node if link is not None else "")
        address = lost.address or (link.address if link is not None else "")
        where = f" on {address}" if address else ""
        reason = f"its host{where} was lost ({lost.reason})"
        self._questions.drop(reason)
        plan = self._plan()
        limits = replace(self.manager.limits, require_approval=self._require_approval)
        ended = plan.ended if plan is not None else None
        if ended is not None:  # it ended before its host went: nothing to restart
            self._record_loss(node, address, lost.reason, restart=False)
            self._status = ended
            return None
        why_not = ""
        if plan is None:
            why_not = "its task is not known"
        elif plan.carried.manage not in (None, ManageMode.FULL):
            why_not = f"management mode {plan.carried.manage.value!r} does not restart"
        elif plan.carried.restarts >= limits.max_restarts:
            why_not = f"max restarts ({limits.max_restarts}) reached"
        if plan is None or why_not:
            self._record_loss(node, address, lost.reason, restart=False)
            self._finish(HostEnd(EndStatus.FAILED, f"{reason}; {why_not}"), record=True)
            return None
        self._record_loss(node, address, lost.reason, restart=True)
        checkpoint, number = self._checkpoint_after_loss(plan, limits.carryover_turns, reason)
        carried = replace(plan.carried, checkpoints=max(plan.carried.checkpoints, number))
        resume = replace(
            plan,
            how=ResumeFrom.CHECKPOINT,
            reason=reason,
            session_id=None,
            checkpoint=checkpoint,
            checkpoint_number=number,
            carried=carried,
            awaiting_approval=None,
            lost_host=reason,
        )
        manager = ContextManager(
            name=self.spec.name, task=self.spec.task, limits=limits, prompts=self._prompts
        )
        manager.resume_from(resume, 0.0)
        self.mirror = Transcript()
        return manager

    def _record_loss(self, node: str, address: str, reason: str, *, restart: bool) -> None:
        self._record(
            ev.HostLost(
                at=self._clock(),
                session=self.spec.name,
                node=node,
                address=address,
                reason=reason,
                restart=restart,
            )
        )

    def _plan(self) -> SessionResume | None:
        """The session as its events leave it (core.resume_plan), its transcript gone."""
        record = TaskRecord(self.spec.name, self.spec.task, str(self.spec.cwd))
        plan = plan_resume(self._events, [record], lambda _name, _id: False)
        found = [session for session in plan.sessions if session.name == self.spec.name]
        return found[0] if found else None

    def _checkpoint_after_loss(
        self, plan: SessionResume, carryover_turns: int, reason: str
    ) -> tuple[Checkpoint, int]:
        """The latest checkpoint when the agent has done nothing since; else one built from
        the transcript received (journaled as a harness-made checkpoint)."""
        latest = plan.checkpoint
        since_restart = [
            e for e in reversed(self._events) if isinstance(e, ev.Restarted | ev.CheckpointSaved)
        ]
        covered = bool(since_restart) and isinstance(since_restart[0], ev.CheckpointSaved)
        worked = any(m.role is Role.ASSISTANT and not m.from_harness for m in self.mirror)
        if latest is not None and (covered or not worked):
            return latest, plan.checkpoint_number
        built = harness_checkpoint(
            self.mirror,
            reason=reason,
            carryover_turns=carryover_turns,
            goal=self.spec.task,
            previous=latest,
        )
        number = plan.carried.checkpoints + 1
        self._record(
            ev.CheckpointSaved(
                at=self._clock(),
                session=self.spec.name,
                number=number,
                origin=built.origin,
                text=built.text,
            )
        )
        return built, number

    # -- the end -------------------------------------------------------------------------------

    def _check_received(self, end: HostEnd) -> None:
        """Every event the host made reached the journal: said when not (never expected)."""
        if end.sent != self._position:
            missing = end.sent - self._position
            self._record(
                ev.ErrorRecorded(
                    at=self._clock(),
                    session=self.spec.name,
                    where=ev.Where.HOST,
                    message=f"{missing} of the host's {end.sent} events never reached the journal",
                )
            )

    def _finish(self, end: HostEnd, *, record: bool = False) -> None:
        self._status, self._end_reason = end.status, end.reason
        self._pids.update(end.pids)
        if record:
            self._record(
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
                end = await self._follow(link)
        except (HostLostError, TimeoutError) as exc:
            reason = f"{self.stop_reason or 'stopped'}; its host did not say how it ended: {exc}"
            self._finish(HostEnd(EndStatus.STOPPED, reason), record=True)
            with contextlib.suppress(Exception):
                await link.kill()
            return
        self._finish(end)
        with contextlib.suppress(Exception):
            await link.release()
