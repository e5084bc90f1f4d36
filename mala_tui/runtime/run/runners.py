"""A session's runner as the supervisor drives it: run here, or by a host a cluster placed.

`Runner` is what the supervisor asks of either kind, and all it knows of them.
`RunnerMaker` makes each session's runner from its spec and its manager, with the run's
parts (its recorder's sink, the desk, the approvals, the permission requests) and, on a
cluster, what its hosts are to be given (`HostPlan`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.manager import ContextManager, Limits
from mala_tui.core.observations import SessionHandedBack
from mala_tui.core.operator_actions import SessionAction
from mala_tui.core.prompts import PromptSet
from mala_tui.core.run_view import RunState
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.cluster.driver_runner import RemoteRunner
from mala_tui.runtime.cluster.host_link import HostEngine
from mala_tui.runtime.cluster.mirror import Workspace
from mala_tui.runtime.cluster.session_host import BackendFactory
from mala_tui.runtime.questions.approvals import ApprovalMode, Approvals
from mala_tui.runtime.questions.desk import Desk
from mala_tui.runtime.run.permission_requests import PermissionRequests
from mala_tui.runtime.run.session_limits import runner_limits_from
from mala_tui.runtime.session.runner import SessionRunner


class Runner(Protocol):
    """A session as the supervisor drives it: run here (runtime.session.runner), or by a
    host a cluster engine placed (runtime.cluster.driver_runner)."""

    spec: SessionSpec
    manager: ContextManager
    stop_reason: str
    """Why the session is being stopped, when cancelled for a cause (a signal, a full disk)."""

    @property
    def status(self) -> EndStatus | None:
        """How the session ended; None while it runs (or has not started)."""

    @property
    def end_reason(self) -> str: ...

    @property
    def pids(self) -> list[int]:
        """Every agent process the session started (on its host's machine, on a cluster)."""

    @property
    def elsewhere(self) -> str:
        """Where the session's agent runs when it is not here (a cluster's node, which
        keeps its transcript); "" when it runs in this process."""

    @property
    def process_open(self) -> bool:
        """An agent process of the session is open here now."""

    def apply(self, action: SessionAction) -> None:
        """What a person did to the session (core.operator_actions)."""

    def hurry(self) -> None:
        """The stop was asked for again: the agent process is killed now."""

    def budget_reached(self, over: bool, reason: str) -> None:
        """Near a budget limit (wind down, checkpoint, stop) or at it (stop now)."""

    def take_over(self) -> asyncio.Future[str]:
        """Stop the turn and end the process for a person to open the session by hand; the
        future says "" once taken, or why not. Raises ValueError when it runs elsewhere."""

    def hand_back(self, handed: SessionHandedBack) -> None:
        """The person is done with the session by hand."""

    def recorded(self, event: ev.Event) -> None:
        """An event of this session, as the run journaled it (from wherever it came)."""

    def window(self, state: RunState) -> WindowContents:
        """What fills the session's window now (the run's view gives the figures a
        runner elsewhere does not hold)."""

    async def run(self) -> EndStatus: ...


def _no_workspace(session: str) -> Workspace | None:
    return None


@dataclass(frozen=True)
class HostPlan:
    """What a cluster run's hosts are given with each session, known before it is placed."""

    workspace_for: Callable[[str], Workspace | None] = _no_workspace
    """In a worktree run, the worktree its host makes from its mirror of the repository
    (runtime.cluster.mirror); raises WorktreeError when the repository cannot be written."""
    history: Mapping[str, Sequence[ev.Event]] = field(default_factory=dict)
    """A resumed run's events of each session so far: what a restart after a loss is
    planned from."""
    reattach: frozenset[str] = frozenset()
    """A resumed run's sessions whose latest host may still run: taken up again first."""


class RunnerMaker:
    """Makes each session's runner: here, or (with an `engine`) on a host of a cluster."""

    def __init__(
        self,
        *,
        settings: Settings,
        backend: Backend,
        prompts: PromptSet,
        record: Callable[[ev.Event], ev.Event],
        clock: Callable[[], float],
        approvals: Approvals,
        desk: Desk,
        permissions: PermissionRequests,
        engine: HostEngine | None,
        host_backend: BackendFactory | None,
        run_id: str,
        hosts: HostPlan,
        approval_mode: ApprovalMode,
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.prompts = prompts
        self.record = record
        self.clock = clock
        self.approvals = approvals
        self.desk = desk
        self.permissions = permissions
        self.engine = engine
        self.host_backend = host_backend
        self.run_id = run_id
        self.hosts = hosts
        self.approval_mode = approval_mode

    def make(self, spec: SessionSpec, limits: Limits) -> Runner:
        """The session's manager, under `limits` as the run's approval mode has them (a
        mode given on the command line overrides the settings), and its runner."""
        if self.approval_mode in {ApprovalMode.ASK, ApprovalMode.DENY}:
            limits = replace(limits, require_approval=True)
        elif self.approval_mode is ApprovalMode.AUTO:
            limits = replace(limits, require_approval=False)
        manager = ContextManager(
            name=spec.name, task=spec.task, limits=limits, prompts=self.prompts
        )
        if self.engine is not None:
            return RemoteRunner(
                spec=spec,
                manager=manager,
                engine=self.engine,
                run_id=self.run_id,
                runner_limits=runner_limits_from(self.settings),
                backend=self.host_backend or _no_backend,
                prompts=self.prompts,
                sink=self.record,
                approvals=self.approvals,
                desk=self.desk,
                permissions=self.permissions.gate_for(spec.name),
                orphan_seconds=self.settings.cluster.orphan_minutes * 60,
                clock=self.clock,
                history=self.hosts.history.get(spec.name, ()),
                reattach=spec.name in self.hosts.reattach,
                workspace=self.hosts.workspace_for(spec.name),
            )
        return SessionRunner(
            spec=spec,
            backend=self.backend,
            manager=manager,
            limits=runner_limits_from(self.settings),
            sink=self.record,
            clock=self.clock,
            permissions=self.permissions.gate_for(spec.name),
            approvals=self.approvals,
        )


def _no_backend(folder: Path) -> Backend:
    raise ValueError("a session placed on a cluster needs the backend its host makes")
