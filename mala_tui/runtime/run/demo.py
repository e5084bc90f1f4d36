"""The demo: four real Claude Code sessions against the loopback model, offline, no key.

One session reads large files (soft zone: masking), one runs a long task (hard
zone: wind-down, checkpoint, restart), one meets a stalled model once (idle
timeout and recovery), one stays in the normal zone and hands work to two
background subagents (their windows, their reports). Each runs in its own
workspace with its own CLI config dir under the run's folder, so nothing
touches the user's ~/.claude and everything can be inspected afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mala_tui.config import Settings
from mala_tui.config_loading import LoadedSettings
from mala_tui.core.events import RunMode
from mala_tui.loopback import (
    MODEL,
    LoopbackServer,
    load_scenario,
    materialize_workspace,
    offline_cli_env,
)
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.journal.writer import RunJournal, StorageError, describe_os_error
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.run.launch import agent_spec, build_supervisor, open_journal
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.runtime.run.task_plans import TaskPlan

DEMO_SCENARIOS = ("soft-zone-reader", "hard-zone-long-task", "stall-once", "normal-zone-helpers")

#: Settings the demo needs to show its behaviour in minutes; a user's own value wins.
DEMO_DEFAULTS: dict[str, dict[str, Any]] = {
    "idle": {"idle_timeout_seconds": 20.0, "idle_retry_backoff": (0.0, 2.0, 5.0)},
}


def demo_settings(loaded: LoadedSettings) -> Settings:
    """The user's settings, with the demo's values where the user set nothing."""
    settings = loaded.settings
    for section, values in DEMO_DEFAULTS.items():
        keep = {
            key: value
            for key, value in values.items()
            if loaded.sources.get(f"{section}.{key}", "default") == "default"
        }
        if keep:
            updated = getattr(settings, section).model_copy(update=keep)
            settings = settings.model_copy(update={section: updated})
    return settings


@dataclass
class DemoRun:
    supervisor: Supervisor
    server: LoopbackServer
    journal: RunJournal
    folder: Path


@asynccontextmanager
async def demo_run(
    loaded: LoadedSettings,
    *,
    approval_mode: ApprovalMode | None = None,
    scenarios: tuple[str, ...] = DEMO_SCENARIOS,
    response_delay_s: float | None = None,
) -> AsyncIterator[DemoRun]:
    """Start the loopback model and a supervisor over the demo sessions; stop both after.

    Raises:
        StorageError: the run's folder, or the demo's workspaces in it, cannot be written.
    """
    settings = demo_settings(loaded)
    loaded = LoadedSettings(settings, loaded.sources, loaded.config_file, loaded.config_file_exists)
    loaded_scenarios = {name: load_scenario(name) for name in scenarios}
    plans = [TaskPlan(name, scenario.task, Path()) for name, scenario in loaded_scenarios.items()]
    # Everything the demo makes lives in the private run folder and is private too: the
    # workspaces, the agents' own files, the model's request log (the CLIs inherit it).
    journal = open_journal(loaded, RunMode.DEMO, plans)
    umask = os.umask(0o077)
    folder = journal.directory / "demo"
    workspaces = {name: folder / name / "workspace" for name in scenarios}
    try:
        for name, scenario in loaded_scenarios.items():
            workspaces[name].mkdir(parents=True)
            materialize_workspace(scenario, workspaces[name])
    except OSError as exc:
        journal.close()
        os.umask(umask)
        # Nothing ran: leave no half-made run behind to be listed as "running?".
        shutil.rmtree(journal.directory, ignore_errors=True)
        raise StorageError(f"cannot make the demo's workspaces: {describe_os_error(exc)}") from None
    server = LoopbackServer(
        loaded_scenarios, workspace=workspaces, response_delay_s=response_delay_s
    )
    try:
        await server.start()
    except BaseException:
        journal.close()
        os.umask(umask)
        raise
    try:
        specs = []
        for plan in plans:
            home = folder / plan.name / "home"
            specs.append(
                agent_spec(
                    TaskPlan(plan.name, plan.task, workspaces[plan.name]),
                    settings,
                    model=MODEL,
                    env=offline_cli_env(server.url_for(plan.name), home),
                    private_home=home,
                )
            )
        supervisor = build_supervisor(
            loaded=loaded,
            backend=ClaudeBackend.for_run(journal.directory),
            journal=journal,
            specs=specs,
            approval_mode=approval_mode,
            mode=RunMode.DEMO,
        )
        yield DemoRun(supervisor, server, journal, folder)
    finally:
        try:
            with contextlib.suppress(OSError):  # a full disk: the journal has the run
                server.write_log(journal.directory / "loopback-requests.jsonl")
            await server.stop()
        finally:
            journal.close()
            os.umask(umask)
