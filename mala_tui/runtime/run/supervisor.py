"""Runs many sessions at once; the operator's commands, messages and answers go through it.

The supervisor owns the run's parts and wires them. Every event from every session
passes through its recorder (runtime.run.recorder: the journal, the run's live view, the
listeners). Two listeners of its own turn events into commands: the budget watch
tells a session near or over a budget through its runner's inbox, and the desk
(runtime.questions.desk) withdraws the questions of a session that ended. Every question a
person's answer is awaited for, a restart approval (runtime.questions.approvals) or a permission
request (runtime.run.permission_requests), waits at that one desk; an answer from any
console settles it there, once. Sessions can join the run while it runs (`AddSession`).

At most `agent.max_concurrent` sessions run at once; the rest wait in a queue, in
the order given. A queued session is journaled with a warning saying so, and shows as
queued until its `session_started`. A journal that cannot be written (a full disk)
stops the run: every session is stopped, and the events of the shutdown go to the
journal's reserve.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.budget import BudgetCheck, BudgetLimits
from mala_tui.core.manager import Limits
from mala_tui.core.observations import Command
from mala_tui.core.operator_actions import (
    OperatorAction,
    SessionCommand,
)
from mala_tui.core.prompts import PromptSet
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.cluster.host_link import HostEngine
from mala_tui.runtime.cluster.session_host import BackendFactory
from mala_tui.runtime.journal.writer import RunJournal, describe_os_error
from mala_tui.runtime.questions.approvals import ApprovalMode, Approvals, effective_mode
from mala_tui.runtime.questions.desk import Desk
from mala_tui.runtime.run.budget_watch import BudgetListener, BudgetNotice, BudgetWatch
from mala_tui.runtime.run.hand_over import HandOver
from mala_tui.runtime.run.landings import Landings
from mala_tui.runtime.run.new_sessions import Joining, NewSessions
from mala_tui.runtime.run.operator_routes import STOPPED_BY_OPERATOR, OperatorRoutes
from mala_tui.runtime.run.permission_requests import PermissionRequests
from mala_tui.runtime.run.recorder import Listeners, RunRecorder
from mala_tui.runtime.run.run_types import RunResult
from mala_tui.runtime.run.runners import HostPlan, Runner, RunnerMaker
from mala_tui.runtime.run.session_limits import limits_from
from mala_tui.runtime.run.slots import Slots
from mala_tui.runtime.session.by_hand import Interactive
from mala_tui.runtime.session.processes import pid_alive


class Supervisor:
    def __init__(
        self,
        *,
        settings: Settings,
        backend: Backend,
        prompts: PromptSet,
        journal: RunJournal | None,
        approval_mode: ApprovalMode | None = None,
        clock: Callable[[], float] = time.time,
        mode: ev.RunMode = ev.RunMode.RUN,
        engine: HostEngine | None = None,
        host_backend: BackendFactory | None = None,
        hosts: HostPlan | None = None,
        joining: Joining | None = None,
        max_concurrent: int | None = None,
        resumed: ev.RunResumed | None = None,
        past: Sequence[ev.Event] = (),
    ) -> None:
        """Everything the run needs, given here: nothing is set on it afterwards.

        `engine`: place each session on a host of a cluster (runtime.cluster.driver_runner),
        whose backend `host_backend` makes there, given what `hosts` says; None: every
        session runs here. `joining`: how sessions added while it runs are made (none
        can be without it). `max_concurrent`: at most this many sessions at once (default
        `agent.max_concurrent`). `resumed`: the run goes on in its journal, opened by this
        event instead of a `run_started`, its events so far `past`."""
        self.settings = settings
        self.backend = backend
        self.prompts = prompts
        self.clock = clock
        self.mode = mode
        self.approval_mode = effective_mode(approval_mode, settings)
        self.recorder = RunRecorder(
            journal=journal,
            state=RunState(
                run_id=journal.run_id if journal else "", prices=settings.pricing.table()
            ),
            on_storage_failure=self._storage_failed,
        )
        self.budget = BudgetWatch(settings.budget.session_limits(), settings.budget.run_limits())
        self.runners: dict[str, Runner] = {}
        self.desk = Desk()
        """Where every question a person's answer is awaited for waits (runtime.questions.desk)."""
        self.approvals = Approvals.from_settings(settings, self.desk, self.approval_mode)
        self.permissions = PermissionRequests.from_settings(
            settings, desk=self.desk, record=self.record, clock=clock
        )
        self.listeners.events.append(BudgetListener(self.budget, self.state, self._tell_budget))
        self.listeners.events.append(self.desk.observe)
        self.listeners.events.append(self._tell_runner)
        self.stop_cause = ""
        """Set when the run is stopped from outside its sessions: a signal, a full disk."""
        self.resumed = resumed
        """The run goes on in its journal, opened by this event instead of a `run_started`."""
        self.state.apply_all(past)  # the history so far, in the app too
        self.permissions.remember(past)
        self._own_parts(
            backend=backend,
            engine=engine,
            host_backend=host_backend,
            run_id=journal.run_id if journal else "",
            hosts=hosts or HostPlan(),
            joining=joining or Joining(),
        )
        self.slots.max_concurrent = max_concurrent or settings.agent.max_concurrent
        self.landings = Landings(self.state, self.record, self._still_running)
        """The worktree sessions' work, landed or discarded once each session has ended."""

    def _own_parts(
        self,
        *,
        backend: Backend,
        engine: HostEngine | None,
        host_backend: BackendFactory | None,
        run_id: str,
        hosts: HostPlan,
        joining: Joining,
    ) -> None:
        """The parts the supervisor owns past its recorder, desk and budget watch."""
        self.maker = RunnerMaker(
            settings=self.settings,
            backend=backend,
            prompts=self.prompts,
            record=self.record,
            clock=self.clock,
            approvals=self.approvals,
            desk=self.desk,
            permissions=self.permissions,
            engine=engine,
            host_backend=host_backend,
            run_id=run_id,
            hosts=hosts,
            approval_mode=self.approval_mode,
        )
        """Makes each session's runner, here or on a cluster's host (runtime.run.runners)."""
        self.slots = Slots(record=self.record, clock=self.clock)
        """Which sessions run, which wait for a slot (runtime.run.slots)."""
        self.new_sessions = NewSessions(
            settings=self.settings,
            runners=self.runners,
            add_session=self.add_session,
            budget=self.budget,
            slots=self.slots,
            record=self.record,
            clock=self.clock,
            stop_cause=lambda: self.stop_cause,
            joining=joining,
        )
        """Sessions joining the run while it runs (runtime.run.new_sessions)."""
        self.hand_over = HandOver(
            runners=self.runners,
            listeners=self.listeners,
            backend=backend,
            settings=self.settings,
            record=self.record,
            clock=self.clock,
        )
        """Sessions opened by hand and handed back (runtime.run.hand_over)."""
        self.routes = OperatorRoutes(
            runners=self.runners,
            approvals=self.approvals,
            permissions=self.permissions,
            new_sessions=self.new_sessions,
            budget=self.budget,
            slots=self.slots,
        )
        """Where each thing a person does goes (runtime.run.operator_routes)."""

    # -- the recorder's, read here ---------------------------------------------------------------

    @property
    def journal(self) -> RunJournal | None:
        return self.recorder.journal

    @property
    def state(self) -> RunState:
        """The run's live view: every event so far, reduced (core.view)."""
        return self.recorder.state

    @property
    def listeners(self) -> Listeners:
        return self.recorder.listeners

    @property
    def storage_failure(self) -> OSError | None:
        """The first error writing the run's files, once there has been one."""
        return self.recorder.storage_failure

    @property
    def queued(self) -> list[str]:
        """Sessions waiting for a slot, in the order they will start."""
        return self.slots.queued

    def record(self, event: ev.Event) -> ev.Event:
        """Journal an event, apply it to the view, tell the listeners (runtime.run.recorder)."""
        return self.recorder.record(event)

    def snapshots(self) -> dict[str, SessionSnapshot]:
        return self.recorder.snapshots()

    def _storage_failed(self, exc: OSError) -> None:
        """The run's files cannot be written: every session stops (the recorder says so once)."""
        self.stop_for(f"the run's files could not be written: {describe_os_error(exc)}")

    def _still_running(self, session: str) -> str | None:
        """Why a session's work cannot be landed yet: it has not ended."""
        if session in self.queued:
            return "queued"
        state = self.state.sessions.get(session)
        if state is not None and state.status is None:
            return "still running"
        return None

    def _tell_runner(self, event: ev.Event) -> None:
        """A session on a cluster's host keeps its own events: what it restarts from."""
        runner = self.runners.get(event.session) if event.session else None
        if runner is not None:
            runner.recorded(event)

    def _tell_budget(self, notice: BudgetNotice) -> None:
        runner = self.runners.get(notice.session)
        if runner is not None and runner.status is None:
            runner.budget_reached(notice.over, notice.reason)

    # -- building the run -----------------------------------------------------------------------

    def add_session(
        self,
        spec: SessionSpec,
        *,
        limits: Limits | None = None,
        budget: BudgetLimits | None = None,
    ) -> Runner:
        """A session of the run, with its profile's `limits` and `budget` when it has one
        (the run's settings when not)."""
        if spec.name in self.runners:
            raise ValueError(f"two sessions are named {spec.name!r}")
        runner = self.maker.make(spec, limits or limits_from(self.settings, spec.model, spec.betas))
        self.runners[spec.name] = runner
        if budget is not None:
            self.budget.set_limits(spec.name, budget)
        return runner

    # -- running ---------------------------------------------------------------------------------

    async def run(self) -> RunResult:
        """Run every session to its end; on cancellation every session is stopped first."""
        run_id = self.journal.run_id if self.journal else ""
        self.record(
            self.resumed
            or ev.RunStarted(
                at=self.clock(), run_id=run_id, sessions=tuple(self.runners), mode=self.mode
            )
        )
        ok, reason = False, "cancelled"
        slots = self.slots.queue(self.runners, self.stop_cause)
        try:
            await self.slots.run_all(self.runners, slots)
            result = self.result()
            ok, reason = result.ok, "" if result.ok else "not every session finished"
            return result
        except asyncio.CancelledError:
            self.stop_cause = self.stop_cause or "cancelled"
            raise
        finally:
            self.slots.close()
            self.slots.end_queued(EndStatus.STOPPED, self.stop_cause or "cancelled")
            reason = self.stop_cause or reason
            self.record(ev.RunEnded(at=self.clock(), run_id=run_id, ok=ok, reason=reason))

    def profile_names(self) -> list[str]:
        """The run's named profiles a session added while it runs may be given."""
        return self.new_sessions.profile_names()

    def result(self) -> RunResult:
        """How each session ended, as journaled (runtime.run.slots)."""
        return self.slots.result(self.runners, self.stop_cause)

    def pids(self) -> list[int]:
        """Every agent process any session started."""
        return self.result().pids

    def alive_pids(self) -> list[int]:
        return [pid for pid in self.pids() if pid_alive(pid)]

    # -- what a person does ---------------------------------------------------------------------

    def act(self, action: OperatorAction) -> None:
        """Carry out what a person did (core.operator_actions): answers go to the desk, new
        sessions and budgets to the run's own parts, the rest to the session's runner.

        Raises:
            KeyError: no such session, or no such question was asked.
            QuestionClosed: the question was answered already (it says by whom, and how).
            MessageError: a message that cannot reach the agent (it says why).
            ValueError: a session that cannot be added (it says why).
        """
        self.routes.act(action)

    def stop_for(self, cause: str) -> None:
        """Stop every session because of `cause` (a signal, a full disk): the results say so."""
        self.set_stop_cause(cause)
        self.stop_all()

    def set_stop_cause(self, cause: str) -> None:
        """Why every session is about to stop (the first cause given wins); each session's
        own ending says so, however it is stopped (a command, or its task cancelled)."""
        self.stop_cause = self.stop_cause or cause
        for runner in self.runners.values():
            runner.stop_reason = self.stop_cause

    def hurry(self) -> None:
        """The stop was asked for again: every agent process is killed now, not waited
        for (each one's end is still journaled as its session stops)."""
        for runner in self.runners.values():
            runner.hurry()

    def stop_all(self) -> None:
        self.slots.end_queued(EndStatus.STOPPED, self.stop_cause or STOPPED_BY_OPERATOR)
        for name, runner in self.runners.items():
            if runner.status is None and name not in self.slots.never_started:
                runner.apply(
                    SessionCommand(session=name, command=Command.STOP, reason=self.stop_cause)
                )

    # -- a session by hand -------------------------------------------------------------------

    async def take_over(self, session: str) -> Interactive:
        """Open the session by hand (runtime.run.hand_over.HandOver.take_over)."""
        return await self.hand_over.take_over(session)

    async def hand_back(self, session: str, *, go_on: bool) -> None:
        """The person is done with the session by hand (runtime.run.hand_over)."""
        await self.hand_over.hand_back(session, go_on=go_on)

    def transcript_path(self, session: str) -> Path | None:
        """The agent's own transcript of the session's current agent session, if it has one.

        None before the agent named its session, or when its backend keeps none.
        """
        runner = self.runners[session]
        session_id = runner.manager.session_id
        if session_id is None:
            return None
        return self.backend.transcript_path(runner.spec, session_id)

    def budget_limits(self, session: str) -> tuple[BudgetLimits, BudgetLimits]:
        """The session's limits and the run's."""
        return self.budget.limits_for(session), self.budget.run_limits

    def budget_check(self, session: str) -> BudgetCheck:
        return self.budget.session_check(self.state.sessions[session], self.clock())

    def window_contents(self, session: str) -> WindowContents | None:
        """What fills the session's window: its conversation and its calibration, now."""
        runner = self.runners.get(session)
        return None if runner is None else runner.window(self.state)
