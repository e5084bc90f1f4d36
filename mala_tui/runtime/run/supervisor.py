"""Runs many sessions at once; the operator's commands, messages and answers go through it.

The supervisor owns the run's parts and wires them. Every event from every session
passes through its recorder (runtime.run.recorder: the journal, the run's live view, the
listeners). Two listeners of its own turn events into commands: the budget watch
tells a session near or over a budget through its runner's inbox, and the desk
(runtime.questions.desk) withdraws the questions of a session that ended. Every question a
person's answer is awaited for, a restart approval (runtime.questions.approvals) or a permission
request (runtime.run.permission_requests), waits at that one desk; an answer from any
console settles it there, once. Sessions can join the run while it runs (`add_task`).

At most `agent.max_concurrent` sessions run at once; the rest wait in a queue, in
the order given. A queued session is journaled with a warning saying so, and shows as
queued until its `session_started`. A journal that cannot be written (a full disk)
stops the run: every session is stopped, and the events of the shutdown go to the
journal's reserve.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.budget import BudgetCheck, BudgetLimits
from mala_tui.core.calibration import Density
from mala_tui.core.manager import ContextManager, Limits
from mala_tui.core.observations import Command, Decision, SessionHandedBack
from mala_tui.core.operator_messages import MessageError, checked_text
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.phases import ManageMode, Phase
from mala_tui.core.prompts import PromptSet
from mala_tui.core.text import plural
from mala_tui.core.view import RunState, SessionSnapshot
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.cluster.driver_runner import HostEngine, RemoteRunner
from mala_tui.runtime.cluster.session_host import BackendFactory
from mala_tui.runtime.journal.writer import RunJournal, describe_os_error
from mala_tui.runtime.questions.approvals import ApprovalMode, Approvals
from mala_tui.runtime.questions.desk import Desk
from mala_tui.runtime.run.budget_watch import BudgetListener, BudgetNotice, BudgetWatch
from mala_tui.runtime.run.landings import Landings
from mala_tui.runtime.run.permission_requests import PermissionRequests
from mala_tui.runtime.run.profiles import Profile, ProfileError, with_profile
from mala_tui.runtime.run.recorder import Listeners, RunRecorder
from mala_tui.runtime.run.run_types import RunResult
from mala_tui.runtime.run.session_limits import limits_from, runner_limits_from
from mala_tui.runtime.session.by_hand import Interactive, interactive, read_back, size_of
from mala_tui.runtime.session.processes import pid_alive
from mala_tui.runtime.session.runner import SessionRunner

Runner = SessionRunner | RemoteRunner
"""A session as the supervisor drives it: run here, or by a host a cluster engine placed."""

#: Where the warning that journals a queued session comes from.
QUEUE = "queue"
#: Where the manager's refusal of an operator's command is journaled from.
OPERATOR = "operator"
#: The longest session name a new task may have (a card's title).
MAX_NAME = 60
#: How long a session taken over by hand may take to stop its turn (past the disconnect's
#: own bound).
HAND_OVER_SECONDS = 60.0
#: Why a session ended unstarted, after the cause: the run stopped while it waited for a
#: slot, or before the run had started any.
QUEUED_NEVER_STARTED = "it was queued, never started"
BEFORE_START = "before it started"


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
    ) -> None:
        """`engine`: place each session on a host of a cluster (runtime.cluster.driver_runner),
        whose backend `host_backend` makes there; None: every session runs here."""
        self.settings = settings
        self.engine = engine
        self.host_backend = host_backend
        self.backend = backend
        self.prompts = prompts
        self.clock = clock
        self.mode = mode
        self.approval_mode: ApprovalMode = approval_mode or (
            "ask" if settings.context.require_approval else "auto"
        )
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
        self.listeners.events.append(self._tell_remote)
        self._tasks: dict[str, asyncio.Task[EndStatus]] = {}
        self._group: asyncio.TaskGroup | None = None
        self._slots: asyncio.Semaphore | None = None
        self.spec_for_fork: Callable[[SessionSpec, str, str], SessionSpec] | None = None
        """How a fork's session is made from its parent's (spec, name, instruction); in a
        worktree run, with a worktree of its own. Default: in the parent's folder."""
        self.spec_for_new: Callable[[str, str, Path], SessionSpec] | None = None
        """How a session added while the run runs is made (name, task, cwd); set by the
        launcher, which knows the run's model, environment and worktrees."""
        self.on_added: list[Callable[[str, Runner], object]] = []
        """Called with each session's runner on a cluster as it is added (before it runs)."""
        self.max_concurrent = settings.agent.max_concurrent
        self.queued: list[str] = []
        """Sessions waiting for a slot, in the order they will start."""
        self._never_started: dict[str, tuple[EndStatus, str]] = {}
        self.stop_cause = ""
        """Set when the run is stopped from outside its sessions: a signal, a full disk."""
        self.resumed: ev.RunResumed | None = None
        """Set by `runtime.run.resume`: the run goes on in its journal, opened by this event
        instead of a `run_started`."""
        self._by_hand: dict[str, int] = {}
        """Sessions opened by hand: where each transcript ended when it was (bytes)."""
        self.profiles: dict[str, Profile] = {}
        """The run's named profiles (a tasks file's `[profile.NAME]`) a session added while
        it runs may be given."""
        self.landings = Landings(self.state, self.record, self._still_running)
        """The worktree sessions' work, landed or discarded once each session has ended."""

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

    def _tell_remote(self, event: ev.Event) -> None:
        """A session on a cluster's host keeps its own events: what it restarts from."""
        runner = self.runners.get(event.session) if event.session else None
        if isinstance(runner, RemoteRunner):
            runner.observe(event)

    def _tell_budget(self, notice: BudgetNotice) -> None:
        runner = self.runners.get(notice.session)
        if runner is not None and runner.status is None:
            runner.budget_reached(notice.over, notice.reason)

    # -- building the run -----------------------------------------------------------------------

    def add_session(self, spec: SessionSpec, *, limits: Limits | None = None) -> Runner:
        if spec.name in self.runners:
            raise ValueError(f"two sessions are named {spec.name!r}")
        limits = limits or limits_from(self.settings, spec.model, spec.betas)
        if self.approval_mode in {"ask", "deny"}:
            limits = _with(limits, require_approval=True)
        elif self.approval_mode == "auto":
            limits = _with(limits, require_approval=False)
        manager = ContextManager(
            name=spec.name, task=spec.task, limits=limits, prompts=self.prompts
        )
        runner: Runner
        if self.engine is not None:
            runner = RemoteRunner(
                spec=spec,
                manager=manager,
                engine=self.engine,
                run_id=self.journal.run_id if self.journal else "",
                runner_limits=runner_limits_from(self.settings),
                backend=self.host_backend or _no_backend,
                prompts=self.prompts,
                sink=self.record,
                approvals=self.approvals,
                desk=self.desk,
                permissions=self.permissions.gate_for(spec.name),
                orphan_seconds=self.settings.cluster.orphan_minutes * 60,
                clock=self.clock,
            )
            self.runners[spec.name] = runner
            for added in self.on_added:
                added(spec.name, runner)
            return runner
        runner = SessionRunner(
            spec=spec,
            backend=self.backend,
            manager=manager,
            limits=runner_limits_from(self.settings),
            sink=self.record,
            clock=self.clock,
            permissions=self.permissions.gate_for(spec.name),
            approvals=self.approvals,
        )
        self.runners[spec.name] = runner
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
        slots = self._slots = asyncio.Semaphore(self.max_concurrent)
        if self.stop_cause:  # stopped during start-up: no session starts, each ends resumable
            self.queued = list(self.runners)
            for name in list(self.queued):
                self._end_unstarted(name, EndStatus.STOPPED, self.stop_cause, BEFORE_START)
        self.queued = list(self.runners)[self.max_concurrent :]
        for position, name in enumerate(self.queued, start=1):
            self.record(
                ev.WarningRecorded(
                    at=self.clock(),
                    session=name,
                    where=QUEUE,
                    message=f"queued ({position} of {len(self.queued)}): at most "
                    f"{plural(self.max_concurrent, 'session')} at a time (agent.max_concurrent)",
                )
            )
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for name, runner in self.runners.items():
                    self._tasks[name] = group.create_task(
                        self._run_in_slot(name, runner, slots), name=f"session {name}"
                    )
            result = self.result()
            ok, reason = result.ok, "" if result.ok else "not every session finished"
            return result
        except asyncio.CancelledError:
            self.stop_cause = self.stop_cause or "cancelled"
            raise
        finally:
            self._group = None  # the run is over: nothing can join it now
            self._end_queued(EndStatus.STOPPED, self.stop_cause or "cancelled")
            reason = self.stop_cause or reason
            self.record(ev.RunEnded(at=self.clock(), run_id=run_id, ok=ok, reason=reason))
            self.recorder.redact_transcript_copies()

    async def _run_in_slot(self, name: str, runner: Runner, slots: asyncio.Semaphore) -> EndStatus:
        async with slots:
            if name in self._never_started:
                return self._never_started[name][0]
            if name in self.queued:
                self.queued.remove(name)  # its session_started says it left the queue
            return await runner.run()

    def profile_names(self) -> list[str]:
        """The run's named profiles a session added while it runs may be given."""
        return list(self.profiles)

    def _new_name(self, name: str) -> str:
        """A name for a session joining the run, stripped; refused when unusable or taken."""
        name = name.strip()
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise ValueError(f"a session name is 1 to {MAX_NAME} printable characters")
        if name in self.runners:
            raise ValueError(f"a session is already named {name!r}")
        return name

    def _check_running(self) -> tuple[asyncio.TaskGroup, asyncio.Semaphore]:
        group, slots = self._group, self._slots
        if group is None or slots is None or self.stop_cause:
            raise ValueError("the run is not running: a session cannot join it now")
        return group, slots

    def add_task(self, name: str, task: str, cwd: Path, profile: str = "") -> None:
        """A new task for the running run, made into a session like the run's others, or
        with one of the run's named profiles over the run's settings (`profile`).

        Raises:
            ValueError: a bad name, task, folder or profile, a name taken, or the run not
                running.
        """
        if self.spec_for_new is None:
            raise ValueError("this run cannot take new sessions")
        name, task = self._new_name(name), task.strip()
        if not task:
            raise ValueError("the task is empty")
        try:
            folder = cwd.expanduser().resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            raise ValueError(f"{str(cwd)!r} is not a folder: {exc}") from None
        if not folder.is_dir():
            raise ValueError(f"{str(cwd)!r} is not a folder")
        chosen, task_settings = None, self.settings
        if profile:  # checked before the session's worktree is made
            chosen = self.profiles.get(profile)
            if chosen is None:
                known = ", ".join(self.profiles) or "none (a tasks file's [profile.NAME])"
                raise ValueError(f"this run has no profile {profile!r}; profiles: {known}")
            try:
                task_settings = chosen.apply(self.settings)
            except ProfileError as exc:
                raise ValueError(f"profile {profile}: {exc}") from None
        spec = self.spec_for_new(name, task, folder)
        if chosen is None:
            self.add_live(spec)
            return
        spec = with_profile(spec, chosen, self.settings)
        self.add_live(
            spec, limits=limits_from(task_settings, spec.model, spec.betas), profile=profile
        )
        if task_settings.budget != self.settings.budget:
            self.budget.set_limits(name, task_settings.budget.session_limits())

    def fork(self, parent: str, name: str, instruction: str) -> None:
        """A new session from `parent`'s conversation as it stands, told `instruction` instead
        of what `parent` goes on with (the agent forks the conversation into a session of its
        own: the SDK's `fork_session`). It runs with `parent`'s model, tools, limits and
        budget; in a worktree run, in a worktree of its own made from `parent`'s (its
        commits and its uncommitted edits). `parent` goes on as it was.

        Raises:
            ValueError: no such session, one without a conversation yet or on another host,
                a bad name or instruction, or the run not running.
        """
        runner = self.runners.get(parent)
        if runner is None:
            raise ValueError(f"no session is named {parent!r}")
        if not isinstance(runner, SessionRunner):
            raise ValueError(
                f"{parent} runs on another host, which keeps its conversation: it cannot "
                "be forked from here"
            )
        session_id = runner.manager.session_id
        if session_id is None:
            raise ValueError(f"{parent} has no agent session yet: there is nothing to fork")
        name = self._new_name(name)
        try:
            instruction = checked_text(instruction)
        except MessageError as exc:
            raise ValueError(f"the instruction: {exc}") from None
        self._check_running()  # before a worktree is made for it
        make = self.spec_for_fork or _in_the_same_folder
        spec = replace(make(runner.spec, name, instruction), fork_of=session_id)
        manager = runner.manager
        forked = self.add_session(spec, limits=manager.limits)
        forked.manager.fork_from(session_id, manager.transcript.messages, manager.density.ratio)
        self.budget.set_limits(name, self.budget.limits_for(parent))
        self._join(
            spec,
            forked,
            ev.SessionAdded(
                at=self.clock(),
                session=name,
                task=instruction,
                cwd=str(spec.cwd),
                forked_from=parent,
                fork_of=session_id,
            ),
        )

    def add_live(
        self, spec: SessionSpec, *, limits: Limits | None = None, profile: str = ""
    ) -> Runner:
        """A session joining the run while it runs; it waits for a slot like the others.
        `limits`, `profile`: its profile's (the run's settings when not given).

        Raises:
            ValueError: the run is not running (over, or not started), or the name is taken.
        """
        self._check_running()
        runner = self.add_session(spec, limits=limits)
        self._join(
            spec,
            runner,
            ev.SessionAdded(
                at=self.clock(),
                session=spec.name,
                task=spec.task,
                cwd=str(spec.cwd),
                profile=profile,
            ),
        )
        return runner

    def _join(self, spec: SessionSpec, runner: Runner, added: ev.SessionAdded) -> None:
        """The session added is journaled, and started when a slot is free."""
        group, slots = self._check_running()
        self.record(added)
        if slots.locked():
            self.queued.append(spec.name)
            self.record(
                ev.WarningRecorded(
                    at=self.clock(),
                    session=spec.name,
                    where=QUEUE,
                    message=f"queued ({len(self.queued)} waiting): at most "
                    f"{plural(self.max_concurrent, 'session')} at a time (agent.max_concurrent)",
                )
            )
        self._tasks[spec.name] = group.create_task(
            self._run_in_slot(spec.name, runner, slots), name=f"session {spec.name}"
        )

    def _end_queued(self, status: EndStatus, reason: str) -> None:
        """End every session still waiting for a slot: it never started, and never will."""
        for name in list(self.queued):
            self._end_unstarted(name, status, reason)

    def _end_unstarted(
        self, name: str, status: EndStatus, reason: str, why: str = QUEUED_NEVER_STARTED
    ) -> None:
        self.queued.remove(name)
        said = f"{reason} ({why})"  # a resume tells a stop with the run by the cause first
        self._never_started[name] = (status, said)
        self.record(ev.SessionEnded(at=self.clock(), session=name, status=status, reason=said))

    def result(self) -> RunResult:
        statuses: dict[str, EndStatus] = {}
        reasons: dict[str, str] = {}
        for name, runner in self.runners.items():
            if name in self._never_started:
                statuses[name], reasons[name] = self._never_started[name]
                continue
            # As journaled: a session stopped with the run gives the run's cause, one
            # stopped on its own (`x`) says so, whatever stopped the run later.
            statuses[name] = runner.status or EndStatus.FAILED
            reasons[name] = runner.end_reason
        return RunResult(
            statuses=statuses, reasons=reasons, pids=self.pids(), stop_cause=self.stop_cause
        )

    def pids(self) -> list[int]:
        """Every agent process any session started."""
        return [pid for runner in self.runners.values() for pid in runner.pids]

    def alive_pids(self) -> list[int]:
        return [pid for pid in self.pids() if pid_alive(pid)]

    # -- commands from the operator -------------------------------------------------------------

    def command(self, session: str, command: Command) -> None:
        if command in (Command.STOP, Command.CANCEL) and session in self.queued:
            self._end_unstarted(session, EndStatus.STOPPED, "stopped by the operator")
            return
        self.runners[session].command(command)

    def say(self, session: str, text: str) -> None:
        """A message for the session's agent, at its next clean point.

        Raises:
            KeyError: no such session. MessageError: nothing to send, too much, or the
                session has ended.
        """
        runner = self.runners[session]
        text = checked_text(text)
        if runner.status is not None or session in self._never_started:
            raise MessageError(f"{session} has ended: a message cannot reach its agent")
        runner.say(text)

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
        self._end_queued(EndStatus.STOPPED, self.stop_cause or "stopped by the operator")
        for name, runner in self.runners.items():
            if runner.status is None and name not in self._never_started:
                runner.command(Command.STOP, self.stop_cause or "")

    # -- a session by hand -------------------------------------------------------------------

    async def take_over(self, session: str) -> Interactive:
        """End the session's Claude Code process (its turn stopped as a pause stops it) and
        say how to open the session in the interactive Claude Code instead. A session that
        has ended has no process to end: it is only opened.

        Raises:
            ValueError: no such session, one on another host, one without an agent
                session yet, one open by hand already, or one busy (masking, restarting,
                waiting for approval: one line says which).
            ByHandError: no Claude Code CLI here.
        """
        runner = self.runners.get(session)
        if runner is None:
            raise ValueError(f"no session is named {session!r}")
        if not isinstance(runner, SessionRunner):
            where = self.state.sessions[session].host or "another host"
            raise ValueError(
                f"{session} runs on {where}, which keeps its transcript: it cannot be opened "
                "by hand from here"
            )
        manager = runner.manager
        session_id = manager.session_id
        if session_id is None:
            raise ValueError(f"{session} has no agent session yet to open by hand")
        if manager.by_hand:
            raise ValueError(f"{session} is open by hand already")
        how = interactive(runner.spec, session_id)
        if runner.status is not None:
            self._by_hand[session] = size_of(self._transcript_of(runner))
            return how
        if manager.phase not in (Phase.RUNNING, Phase.PAUSED):
            raise ValueError(
                f"{session} is {manager.phase.value.replace('_', ' ')}: it can be opened by "
                "hand while it is running or paused"
            )
        moved = asyncio.Event()
        refused: list[str] = []

        def heard(event: ev.Event) -> None:
            if event.session != session:
                return
            if isinstance(event, ev.ErrorRecorded) and event.where == OPERATOR:
                refused.append(event.message)  # the manager would not (it moved meanwhile)
            moved.set()

        def handed_over() -> bool:
            # Ended meanwhile, or taken over and its process gone: nothing else writes
            # its transcript now.
            ended = runner.status is not None
            return ended or (manager.by_hand and not runner.process_open)

        self.listeners.events.append(heard)
        try:
            runner.command(Command.TAKE_OVER)
            bound = HAND_OVER_SECONDS + self.settings.idle.disconnect_timeout_seconds
            async with asyncio.timeout(bound):
                while not handed_over():
                    if refused:
                        raise ValueError(refused[0])
                    moved.clear()
                    await moved.wait()
        except TimeoutError:
            raise ValueError(
                f"{session} did not stop its turn within {bound:.0f} s; try again"
            ) from None
        finally:
            self.listeners.events.remove(heard)
        # Where the person's part of the transcript starts: after what the ended process
        # wrote as its turn was stopped.
        self._by_hand[session] = size_of(self._transcript_of(runner))
        return how

    def _transcript_of(self, runner: SessionRunner) -> Path | None:
        session_id = runner.manager.session_id
        return self.backend.transcript_path(runner.spec, session_id) if session_id else None

    async def hand_back(self, session: str, *, go_on: bool) -> None:
        """The person is done with the session in the interactive Claude Code: its
        transcript is read again (the person's turns, the window of the latest call), then
        it goes on supervised (`go_on`) or ends. An ended session only has what the person
        did recorded.

        Raises:
            ValueError: no such session, or one that was not open by hand.
        """
        runner = self.runners.get(session)
        if not isinstance(runner, SessionRunner):
            raise ValueError(f"no session is named {session!r} here")
        path = self._transcript_of(runner)
        if runner.status is None and not runner.manager.by_hand:
            raise ValueError(f"{session} was not taken over by hand")
        since = self._by_hand.pop(session, 0)
        back = await asyncio.to_thread(read_back, path, since)
        if runner.status is None:
            runner.hand_back(
                SessionHandedBack(self.clock(), back.history, back.call, go_on, back.prompts)
            )
            return
        self.record(
            ev.HandedBack(
                at=self.clock(),
                session=session,
                prompts=back.prompts,
                tokens=back.call.context_tokens if back.call is not None else None,
            )
        )

    def transcript_path(self, session: str) -> Path | None:
        """The agent's own transcript of the session's current agent session, if it has one.

        None before the agent named its session, or when its backend keeps none.
        """
        runner = self.runners[session]
        session_id = runner.manager.session_id
        if session_id is None:
            return None
        return self.backend.transcript_path(runner.spec, session_id)

    def set_manage_mode(self, session: str, mode: ManageMode) -> None:
        """Switch how much of one session's window is managed (full, mask, off)."""
        self.runners[session].set_manage_mode(mode)

    def set_require_approval(self, session: str | None, required: bool) -> None:
        targets = self.runners.values() if session is None else [self.runners[session]]
        for runner in targets:
            runner.set_require_approval(required)

    def decide(
        self,
        session: str,
        decision: Decision | str,
        edited_text: str | None = None,
        by: AnsweredBy = AnsweredBy.OPERATOR,
        checkpoint_number: int | None = None,
        *,
        console: str = "",
    ) -> None:
        """Answer a pending approval: approve, deny, or edit (approve `edited_text` instead).

        `checkpoint_number`: the checkpoint answered (default: the session's latest asked).
        `console`: which console answered, when not the run's own (runtime.questions.desk.Reply).

        Raises:
            QuestionClosed: it no longer waits (the message says who answered it, and how).
            KeyError: no approval was asked of the session. ValueError: not a `Decision`.
        """
        self.approvals.decide(
            session, decision, edited_text, by, checkpoint_number, console=console
        )

    def answer_permission(
        self,
        session: str,
        request_id: str,
        answer: PermissionAnswer | str,
        reason: str = "",
        *,
        console: str = "",
    ) -> None:
        """Raises QuestionClosed (answered already), KeyError (never asked) or ValueError
        (not a `PermissionAnswer`)."""
        self.permissions.answer(
            session, request_id, PermissionAnswer(answer), reason, console=console
        )

    def budget_limits(self, session: str) -> tuple[BudgetLimits, BudgetLimits]:
        """The session's limits and the run's."""
        return self.budget.limits_for(session), self.budget.run_limits

    def budget_check(self, session: str) -> BudgetCheck:
        return self.budget.session_check(self.state.sessions[session], self.clock())

    def set_budget(self, session: str | None, limits: BudgetLimits) -> None:
        """New limits for one session or (None) the run, judged from the next call on."""
        self.budget.set_limits(session, limits)

    def window_contents(self, session: str) -> WindowContents | None:
        """What fills the session's window: its conversation and its calibration, now."""
        runner = self.runners.get(session)
        if runner is None:
            return None
        manager = runner.manager
        if isinstance(runner, RemoteRunner):  # its manager runs on its host: the copy here
            state = self.state.sessions.get(session)
            density = Density(1.0, False)
            if state is not None:
                density = Density(state.density, state.density_measured)
            return WindowContents(runner.mirror, density, str(runner.spec.cwd))
        return WindowContents(manager.transcript, manager.density, str(runner.spec.cwd))


def _no_backend(folder: Path) -> Backend:
    raise ValueError("a session placed on a cluster needs the backend its host makes")


def _in_the_same_folder(parent: SessionSpec, name: str, instruction: str) -> SessionSpec:
    """A fork outside a worktree run: the parent's session, in the parent's folder."""
    return replace(parent, name=name, task=instruction)


def _with(limits: Limits, **changes: bool) -> Limits:
    return replace(limits, **changes)  # type: ignore[arg-type]
