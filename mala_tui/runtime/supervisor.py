"""Runs many sessions at once, records what happens, publishes snapshots, holds approvals.

Every event from every session passes through one sink: it is journaled, applied
to the run's live view (core.view), and handed to the listeners (the app, the
headless printer) with a frozen snapshot of the session it changed. Nothing is
held back here: how often to redraw is the display's business, and the app's
bridge gathers updates per frame (ui.bridge). Events come per API call and per
message, never per token. Approval requests queue here until someone answers
them; an answer goes to the session's runner.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.manager import ContextManager, Limits
from mala_tui.core.observations import Command, Decision
from mala_tui.core.phases import ManageMode
from mala_tui.core.prompts import PromptSet
from mala_tui.core.view import RunState, SessionSnapshot
from mala_tui.core.window import DEFAULT_MODEL_WINDOWS, Window, resolve_window
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.journal import RunJournal
from mala_tui.runtime.session import RunnerLimits, SessionRunner

ApprovalMode = Literal["ask", "auto", "deny"]
SnapshotListener = Callable[[dict[str, SessionSnapshot]], None]
EventListener = Callable[[ev.Event], None]
ApprovalListener = Callable[[list["ApprovalRequest"]], None]


@dataclass(frozen=True)
class ApprovalRequest:
    """A checkpoint waiting for a person: approve, deny, or approve an edited text."""

    session: str
    checkpoint_number: int
    checkpoint_text: str
    reason: str
    asked_at: float


@dataclass
class RunResult:
    statuses: dict[str, EndStatus]
    reasons: dict[str, str]
    pids: list[int]

    @property
    def ok(self) -> bool:
        return all(status is EndStatus.DONE for status in self.statuses.values())


def window_for(settings: Settings, model: str | None, betas: tuple[str, ...] = ()) -> Window:
    """The session's window before its first request (see core.window)."""
    table = {**DEFAULT_MODEL_WINDOWS, **settings.context.model_windows}
    return resolve_window(model, betas, table, settings.context.context_limit)


def limits_from(
    settings: Settings, model: str | None = None, betas: tuple[str, ...] = ()
) -> Limits:
    context, idle = settings.context, settings.idle
    window = window_for(settings, model or settings.agent.model, betas)
    return Limits(
        soft_threshold=context.soft_threshold,
        hard_threshold=context.hard_threshold,
        mask_target_threshold=context.mask_target_threshold,
        context_limit=window.tokens,
        window_source=window.source,
        manage=ManageMode(context.manage),
        never_mask_tools=frozenset(context.never_mask_tools),
        keep_recent_observations=context.keep_recent_observations,
        mask_min_batch_tokens=context.mask_min_batch_tokens,
        carryover_turns=context.carryover_turns,
        max_restarts=context.max_restarts,
        require_approval=context.require_approval,
        max_idle_retries=idle.max_idle_retries,
        idle_retry_backoff=idle.idle_retry_backoff,
        disconnect_timeout=idle.disconnect_timeout_seconds,
    )


def runner_limits_from(settings: Settings) -> RunnerLimits:
    return RunnerLimits(
        idle_timeout=settings.idle.idle_timeout_seconds,
        disconnect_timeout=settings.idle.disconnect_timeout_seconds,
        session_timeout=settings.idle.session_timeout_seconds,
        approval_timeout=settings.context.approval_timeout_seconds,
        approval_timeout_decision=settings.context.approval_timeout_decision,
    )


@dataclass
class _Listeners:
    snapshots: list[SnapshotListener] = field(default_factory=list)
    events: list[EventListener] = field(default_factory=list)
    approvals: list[ApprovalListener] = field(default_factory=list)


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
        mode: str = "run",
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.prompts = prompts
        self.journal = journal
        self.clock = clock
        self.mode = mode
        self.approval_mode: ApprovalMode = approval_mode or (
            "ask" if settings.context.require_approval else "auto"
        )
        self.state = RunState(run_id=journal.run_id if journal else "")
        self.runners: dict[str, SessionRunner] = {}
        self.approvals: list[ApprovalRequest] = []
        self.listeners = _Listeners()
        self._tasks: dict[str, asyncio.Task[EndStatus]] = {}

    # -- building the run -----------------------------------------------------------------------

    def add_session(self, spec: SessionSpec, *, limits: Limits | None = None) -> SessionRunner:
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
        runner = SessionRunner(
            spec=spec,
            backend=self.backend,
            manager=manager,
            limits=runner_limits_from(self.settings),
            sink=self.record,
            clock=self.clock,
        )
        self.runners[spec.name] = runner
        return runner

    # -- running ---------------------------------------------------------------------------------

    async def run(self) -> RunResult:
        """Run every session to its end; on cancellation every session is stopped first."""
        run_id = self.journal.run_id if self.journal else ""
        self.record(
            ev.RunStarted(
                at=self.clock(), run_id=run_id, sessions=tuple(self.runners), mode=self.mode
            )
        )
        ok, reason = False, "cancelled"
        try:
            async with asyncio.TaskGroup() as group:
                for name, runner in self.runners.items():
                    self._tasks[name] = group.create_task(runner.run(), name=f"session {name}")
            result = self.result()
            ok, reason = result.ok, "" if result.ok else "not every session finished"
            return result
        finally:
            self.record(ev.RunEnded(at=self.clock(), run_id=run_id, ok=ok, reason=reason))

    def result(self) -> RunResult:
        return RunResult(
            statuses={
                name: runner.status or EndStatus.FAILED for name, runner in self.runners.items()
            },
            reasons={name: runner.end_reason for name, runner in self.runners.items()},
            pids=self.pids(),
        )

    def pids(self) -> list[int]:
        """Every agent process any session started."""
        return [pid for runner in self.runners.values() for pid in runner.pids]

    def alive_pids(self) -> list[int]:
        return [pid for pid in self.pids() if pid_alive(pid)]

    # -- commands from the operator -------------------------------------------------------------

    def command(self, session: str, command: Command) -> None:
        self.runners[session].command(command)

    def stop_all(self) -> None:
        for runner in self.runners.values():
            if runner.status is None:
                runner.command(Command.STOP)

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
        self, session: str, decision: Decision, edited_text: str | None = None, by: str = "operator"
    ) -> None:
        """Answer a pending approval: approve, deny, or edit (approve `edited_text` instead)."""
        pending = [a for a in self.approvals if a.session == session]
        if not pending:
            raise KeyError(f"no approval is pending for {session!r}")
        self.runners[session].answer_approval(decision, edited_text, by)

    # -- the sink ---------------------------------------------------------------------------------

    def record(self, event: ev.Event) -> ev.Event:
        if isinstance(event, ev.CheckpointSaved) and not event.path and self.journal is not None:
            path = self.journal.save_checkpoint(event.session, event.number, event.text)
            event = event.model_copy(update={"path": str(path)})
        if self.journal is not None:
            self.journal.write(event)
        self.state.apply(event)
        self._track_approvals(event)
        for listener in self.listeners.events:
            listener(event)
        if event.session:
            self._publish(event.session)
        return event

    def _track_approvals(self, event: ev.Event) -> None:
        if isinstance(event, ev.ApprovalRequested):
            state = self.state.sessions[event.session]
            text = state.checkpoints[-1].text if state.checkpoints else ""
            request = ApprovalRequest(
                event.session, event.checkpoint_number, text, event.reason, event.at
            )
            if self.approval_mode == "deny":
                self.runners[event.session].answer_approval(Decision.DENY, None, "policy")
            else:
                self.approvals.append(request)
        elif isinstance(event, ev.ApprovalDecided | ev.SessionEnded):
            self.approvals = [a for a in self.approvals if a.session != event.session]
        else:
            return
        for listener in self.listeners.approvals:
            listener(list(self.approvals))

    def _publish(self, session: str) -> None:
        state = self.state.sessions.get(session)
        if state is None or not self.listeners.snapshots:
            return
        changed = {session: state.snapshot()}
        for listener in self.listeners.snapshots:
            listener(changed)

    def snapshots(self) -> dict[str, SessionSnapshot]:
        return {name: state.snapshot() for name, state in self.state.sessions.items()}


def _with(limits: Limits, **changes: bool) -> Limits:
    return replace(limits, **changes)  # type: ignore[arg-type]


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
