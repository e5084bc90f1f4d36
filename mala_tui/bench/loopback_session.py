"""One scenario's session on the loopback, under a supervisor: what the measurements share."""

from __future__ import annotations

from pathlib import Path

from mala_tui.config import Settings
from mala_tui.loopback import MODEL, LoopbackServer, Scenario, materialize_workspace
from mala_tui.loopback.env import offline_cli_env
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.run.supervisor import Supervisor


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
