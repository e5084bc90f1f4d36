"""One scenario's session on the loopback, under a supervisor: what the measurements share."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

from mala_tui.config import Settings
from mala_tui.core.events import RunMode
from mala_tui.loopback import MODEL, LoopbackServer, Scenario, materialize_workspace
from mala_tui.loopback.env import offline_cli_env
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.journal.writer import RunJournal
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.run.launch import agent_spec
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.runtime.run.task_plans import TaskPlan


def supervised_session(
    name: str,
    scenario: Scenario,
    server: LoopbackServer,
    root: Path,
    allowed_tools: tuple[str, ...],
    *,
    auto_compact: bool = False,
) -> Supervisor:
    """A supervisor (shipped settings, no journal) with the scenario's task as its one
    session, in a workspace made under `root`, the CLI pointed at `server`.
    `auto_compact`: leave the CLI's compaction on (a subagent's window is its to manage;
    mala-tui's PreCompact hook still holds the main thread's)."""
    workspace, home = root / "workspace", root / "home"
    workspace.mkdir(parents=True)
    materialize_workspace(scenario, workspace)
    spec = SessionSpec(
        name=name,
        task=scenario.task,
        cwd=workspace,
        model=MODEL,
        allowed_tools=allowed_tools,
        permission_mode="acceptEdits",
        env=offline_cli_env(server.base_url, home, auto_compact=auto_compact),
        private_home=home,
    )
    supervisor = Supervisor(
        settings=Settings(), backend=ClaudeBackend(), prompts=load_prompts(), journal=None
    )
    supervisor.add_session(spec)
    return supervisor


def for_scenario(settings: Settings, scenario: Scenario, server: LoopbackServer) -> Settings:
    """The settings a managed session of `scenario` runs under on `server`: its prompt
    cache's lifetime (in the server's time), and the scenario's allowed tools."""
    context = settings.context.model_copy(
        update={"cache_ttl_seconds": server.cache_ttl_s / server.time_scale}
    )
    agent = settings.agent.model_copy(update={"allowed_tools": tuple(scenario.allowed_tools)})
    return settings.model_copy(update={"context": context, "agent": agent})


def loopback_supervisor(
    settings: Settings,
    journal: RunJournal,
    mode: RunMode,
    *,
    clock: Callable[[], float] = time.time,
) -> Supervisor:
    """A supervisor for sessions on a loopback model: restarts approved, journaled."""
    return Supervisor(
        settings=settings,
        backend=ClaudeBackend.for_run(journal.directory),
        prompts=load_prompts(),
        clock=clock,
        journal=journal,
        approval_mode=ApprovalMode.AUTO,
        mode=mode,
    )


def loopback_spec(
    name: str,
    scenario: Scenario,
    workspace: Path,
    url: str,
    home: Path,
    *,
    settings: Settings | None = None,
    env: Mapping[str, str] | None = None,
) -> SessionSpec:
    """A session of `scenario` on the model at `url`, its CLI's files under `home`."""
    return agent_spec(
        TaskPlan(name, scenario.task, workspace),
        settings or Settings(),
        model=MODEL,
        env={**offline_cli_env(url, home), **(env or {})},
        private_home=home,
    )
