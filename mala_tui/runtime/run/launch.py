"""Building a run: tasks into session specs, a journal, a supervisor.

`mala-tui run`, `mala-tui demo` and the app all start runs through here, so a
run is journaled, and its agent processes are accounted for, the same way
whatever started it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mala_tui.config import Settings
from mala_tui.config_loading import LoadedSettings, user_config_dir
from mala_tui.core import events as ev
from mala_tui.core.limits import oversized_task
from mala_tui.core.phases import ManageMode
from mala_tui.core.prompts import PromptSet
from mala_tui.core.retry import cli_retries_within
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.cluster.host_link import HostEngine
from mala_tui.runtime.cluster.session_host import BackendFactory
from mala_tui.runtime.journal.writer import RunJournal, new_run_id
from mala_tui.runtime.questions.approvals import ApprovalMode, effective_mode
from mala_tui.runtime.run.new_sessions import Joining
from mala_tui.runtime.run.profiles import (
    Profile,
    profiles_json,
)
from mala_tui.runtime.run.run_types import RunResult
from mala_tui.runtime.run.runners import HostPlan
from mala_tui.runtime.run.session_limits import limits_from, subagent_limits_for, task_limits
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.runtime.run.task_plans import TaskPlan

EXIT_OK = 0
EXIT_NOT_ALL_DONE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: run.json's mark of a run whose sessions each work in a git worktree of their own.
WORKTREE_KEY = "worktree"
#: run.json's named profiles (`[profile.NAME]` of the tasks file), for sessions added later.
PROFILES_KEY = "profiles"


def agent_spec(plan: TaskPlan, settings: Settings, **extra: Any) -> SessionSpec:
    """How the task's agent starts: the settings, with the task's profile over them (a
    model given here, as `--model` is, counts only for a task whose profile names none).

    Raises:
        ProfileError: the profile does not hold over these settings (a resume under
            settings changed since the run started).
    """
    profile = plan.profile
    task_settings = profile.apply(settings)
    agent = task_settings.agent
    given = extra.pop("model", None)
    spec = SessionSpec(
        name=plan.name,
        task=plan.task,
        cwd=plan.cwd,
        model=profile.settings.get("model") or given or agent.model,
        allowed_tools=agent.allowed_tools,
        disallowed_tools=profile.disallowed_tools,
        permission_mode=agent.permission_mode,
        mcp_config=profile.mcp_config,
        env={**profile.env, **extra.pop("env", {})},
        own_compaction=task_settings.context.manage is ManageMode.OFF,
        cli_retries=_cli_retries(task_settings),
        **extra,
    )
    if spec.subagent_limits is None:  # unless the caller gave its own
        limits = subagent_limits_for(task_settings, spec.model, spec.betas)
        spec = replace(spec, subagent_limits=limits)
    return spec


def _cli_retries(settings: Settings) -> int | None:
    """The CLI's own retries of a failed call, fitted to the bound on a failing endpoint."""
    bound = settings.idle.api_failure_seconds
    return None if bound is None else cli_retries_within(bound)


def oversized(plans: Sequence[TaskPlan], settings: Settings, model: str | None) -> str | None:
    """Why a task cannot run as given (its estimate past what its window holds, with its
    own profile's model and thresholds), or None when every task fits."""
    for plan in plans:
        spec = agent_spec(plan, settings, model=model)
        limits = limits_from(plan.profile.apply(settings), spec.model, spec.betas)
        problem = oversized_task(plan.task, limits)
        if problem is not None:
            return f"task {plan.name!r} is {problem}"
    return None


def prompts_for(settings: Settings) -> PromptSet:
    """The user's own templates (config dir's prompts/) over the shipped ones, checked now."""
    return load_prompts(user_config_dir() / "prompts")


def open_journal(
    loaded: LoadedSettings,
    mode: ev.RunMode,
    tasks: Sequence[TaskPlan],
    *,
    worktree: bool = False,
    where: Mapping[str, object] | None = None,
    profiles: Mapping[str, Profile] | None = None,
) -> RunJournal:
    """The run's folder, run.json and journal; `worktree`: each session works in a worktree
    of its own (a resume makes one for a session whose start-up was stopped before it had);
    `where`: where the sessions run, when not here (the engine, the cluster's address);
    `profiles`: the tasks file's named profiles, which a session added later may take."""
    settings = loaded.settings
    meta: dict[str, Any] = {
        **(where or {}),
        "mode": mode,
        "pid": os.getpid(),  # `mala-tui resume` refuses a run this process still writes
        "tasks": [_task_json(t) for t in tasks],
        "settings": settings.model_dump(mode="json"),
        "settings_sources": dict(loaded.sources),
        "config_file": str(loaded.config_file),
    }
    if worktree:
        meta[WORKTREE_KEY] = True
    if profiles:
        meta[PROFILES_KEY] = profiles_json(profiles)
    return RunJournal.create(settings.resolved_data_dir(), new_run_id(), meta)


def _task_json(plan: TaskPlan) -> dict[str, Any]:
    """A task as run.json keeps it (its profile too, when it has one, for `resume`)."""
    entry: dict[str, Any] = {"name": plan.name, "task": plan.task, "cwd": str(plan.cwd)}
    if not plan.profile.empty:
        entry["profile"] = plan.profile.to_json()
    return entry


def build_supervisor(
    *,
    loaded: LoadedSettings,
    backend: Backend,
    journal: RunJournal,
    specs: Sequence[SessionSpec],
    approval_mode: ApprovalMode | None,
    mode: ev.RunMode,
    profiles: Mapping[str, Profile] | None = None,
    template: SessionSpec | None = None,
    joining: Joining | None = None,
    engine: HostEngine | None = None,
    host_backend: BackendFactory | None = None,
    hosts: HostPlan | None = None,
    resumed: ev.RunResumed | None = None,
    past: Sequence[ev.Event] = (),
) -> Supervisor:
    """The run's supervisor, built whole, with a session per spec; a session with a
    profile gets the thresholds, management mode and budgets of its profile. Sessions
    added while it runs join as `joining` says, by default made like `template` (or the
    first spec). `hosts`, `resumed`, `past`: as `Supervisor` takes them.

    Raises:
        WorktreeError: a session's host cannot be given its worktree (`hosts`).
    """
    joining = joining or Joining()
    if joining.spec_for_new is None and (template is not None or specs):
        joining = replace(joining, spec_for_new=like(template or specs[0]))
    supervisor = Supervisor(
        settings=loaded.settings,
        backend=backend,
        prompts=prompts_for(loaded.settings),
        journal=journal,
        approval_mode=approval_mode,
        mode=mode,
        engine=engine,
        host_backend=host_backend,
        hosts=hosts,
        joining=joining,
        max_concurrent=_cluster_slots(loaded, engine) if engine is not None else None,
        resumed=resumed,
        past=past,
    )
    for spec in specs:
        profile = (profiles or {}).get(spec.name)
        if profile is None or profile.empty:
            supervisor.add_session(spec)
            continue
        limits, budget = task_limits(profile.apply(loaded.settings), loaded.settings, spec)
        supervisor.add_session(spec, limits=limits, budget=budget)
    return supervisor


def _cluster_slots(loaded: LoadedSettings, engine: HostEngine) -> int:
    """A cluster runs as many sessions at once as it has slots for, unless capped."""
    capped = loaded.sources.get("agent.max_concurrent", "default") != "default"
    cap = loaded.settings.agent.max_concurrent if capped else engine.slots
    return max(1, min(engine.slots, cap))


def plain_spec(plan: TaskPlan, settings: Settings, **extra: Any) -> SessionSpec:
    """`agent_spec` without the task's profile: what a session added to the run gets (its
    own task, the run's settings), since a profile belongs to the task that named it."""
    return agent_spec(replace(plan, profile=Profile()), settings, **extra)


def like(template: SessionSpec) -> Callable[[str, str, Path], SessionSpec]:
    """Sessions added while the run runs get what the run's first one got (model, tools,
    environment), with their own name, task and folder."""

    def spec(name: str, task: str, cwd: Path) -> SessionSpec:
        return replace(template, name=name, task=task, cwd=cwd)

    return spec


class HeadlessApprovalError(ValueError):
    """Approvals are to be asked but there is no terminal to ask on."""


def check_headless_approvals(supervisor: Supervisor, interactive: bool) -> None:
    """Headless runs can ask on a terminal; without one an `ask` would wait forever."""
    check_approval_mode(supervisor.approval_mode, supervisor.settings, interactive)


def check_approval_mode(
    approval_mode: ApprovalMode | None, settings: Settings, interactive: bool
) -> None:
    """`check_headless_approvals` before there is a supervisor (or a journal) to ask."""
    if effective_mode(approval_mode, settings) is not ApprovalMode.ASK or interactive:
        return
    if settings.context.approval_timeout_seconds is not None:
        return  # a timeout answers every request
    raise HeadlessApprovalError(
        "approvals are set to ask, but this headless run has no terminal to ask on: "
        "use --approve auto or --approve deny, or set context.approval_timeout_seconds"
    )


def run_status(result: RunResult) -> int:
    """The exit status of a run that came to its end: 0 when every session finished."""
    return EXIT_OK if result.ok else EXIT_NOT_ALL_DONE
