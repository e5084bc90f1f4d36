"""Running real Claude Code sessions against the loopback model in tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from claude_agent_sdk import ClaudeAgentOptions

from mala_tui.core import events as ev
from mala_tui.core.manager import ContextManager, Limits
from mala_tui.loopback import (
    MODEL,
    LoopbackServer,
    Scenario,
    materialize_workspace,
    offline_cli_env,
)
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.session.runner import SessionRunner
from tests.support.factories import default_runner_limits

E = TypeVar("E", bound=ev.EventBase)

TOOLS = ("Read", "Grep", "Glob", "Bash", "Edit", "Write")


def session_spec(
    name: str, scenario: Scenario, server: LoopbackServer, root: Path, route: str | None = None
) -> SessionSpec:
    workspace = root / name / "workspace"
    home = root / name / "home"
    workspace.mkdir(parents=True)
    materialize_workspace(scenario, workspace)
    url = server.url_for(route) if route else server.base_url
    return SessionSpec(
        name=name,
        task=scenario.task,
        cwd=workspace,
        model=MODEL,
        allowed_tools=TOOLS,
        permission_mode="acceptEdits",
        env=offline_cli_env(url, home),
        private_home=home,
    )


@dataclass
class Recorded:
    events: list[ev.Event] = field(default_factory=list)

    def __call__(self, event: ev.Event) -> ev.Event:
        self.events.append(event)
        return event

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


def runner(
    spec: SessionSpec,
    limits: Limits,
    *,
    idle_timeout: float = 60.0,
    backup_dir: Path | None = None,
    sink: Callable[[ev.Event], ev.Event] | None = None,
) -> tuple[SessionRunner, Recorded]:
    recorded = Recorded()
    manager = ContextManager(name=spec.name, task=spec.task, limits=limits, prompts=load_prompts())
    return (
        SessionRunner(
            spec=spec,
            backend=ClaudeBackend(backup_dir=backup_dir),
            manager=manager,
            limits=default_runner_limits(
                idle_timeout=idle_timeout, disconnect_timeout=limits.disconnect_timeout
            ),
            sink=sink or recorded,
        ),
        recorded,
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def big_reader(count: int, final_answer: str) -> Scenario:
    """A main agent whose one foreground subagent, S, reads `count` big files (72 KB
    each, about 18,000 tokens) and reports `final_answer`: a subagent whose window fills."""
    return Scenario.model_validate(
        {
            "name": "big-reader",
            "task": f"Have a helper read the {count} big files and sum up its report.",
            "final_answer": "Summary: the helper reported.",
            "workspace": {"files": [{"path": "big/f{i:02d}.txt", "count": count, "size": 72_000}]},
            "steps": [
                {"tool": "Agent", "subagent": "S", "background": False, "description": "Read big"}
            ],
            "subagents": [
                {
                    "name": "S",
                    "task": f"Read the {count} big files and report.",
                    "final_answer": final_answer,
                    "steps": [{"tool": "Read", "path": "big/f{i:02d}.txt", "count": count}],
                }
            ],
        }
    )


def cli_options(
    scenario: Scenario, workspace: Path, env: dict[str, str], **extra: Any
) -> ClaudeAgentOptions:
    """The bundled CLI on the loopback, in `workspace`, with the scenario's tools."""
    return ClaudeAgentOptions(
        cwd=str(workspace),
        env=env,
        model=MODEL,
        tools=scenario.tools,
        allowed_tools=scenario.tools,
        permission_mode="acceptEdits",
        setting_sources=[],
        **extra,
    )
