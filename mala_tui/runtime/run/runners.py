"""A session's runner as the supervisor drives it: run here, or by a host a cluster placed.

`RunnerMaker` makes each session's runner from its spec and its manager, with the run's
parts (its recorder's sink, the desk, the approvals, the permission requests);
`window_contents` says what fills a runner's window, wherever it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.calibration import Density
from mala_tui.core.manager import ContextManager
from mala_tui.core.prompts import PromptSet
from mala_tui.core.view import RunState
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.cluster.driver_runner import RemoteRunner
from mala_tui.runtime.cluster.host_link import HostEngine
from mala_tui.runtime.cluster.session_host import BackendFactory
from mala_tui.runtime.questions.approvals import Approvals
from mala_tui.runtime.questions.desk import Desk
from mala_tui.runtime.run.permission_requests import PermissionRequests
from mala_tui.runtime.run.session_limits import runner_limits_from
from mala_tui.runtime.session.runner import SessionRunner

Runner = SessionRunner | RemoteRunner
"""A session as the supervisor drives it: run here, or by a host a cluster engine placed."""


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

    def make(self, spec: SessionSpec, manager: ContextManager) -> Runner:
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


def window_contents(runner: Runner, state: RunState) -> WindowContents:
    """What fills the session's window: its conversation and its calibration, now."""
    manager = runner.manager
    if isinstance(runner, RemoteRunner):  # its manager runs on its host: the copy here
        session = state.sessions.get(runner.spec.name)
        density = Density(1.0, False)
        if session is not None:
            density = Density(session.density, session.density_measured)
        return WindowContents(runner.mirror, density, str(runner.spec.cwd))
    return WindowContents(manager.transcript, manager.density, str(runner.spec.cwd))


def _no_backend(folder: Path) -> Backend:
    raise ValueError("a session placed on a cluster needs the backend its host makes")
