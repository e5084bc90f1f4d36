"""The limits a session runs under, from the settings: the one place they are read.

The window comes from the model name, the betas and the model table before the first
request (core.window); everything else is the config's, layered as it says.
"""

from __future__ import annotations

from mala_tui.config import Settings
from mala_tui.core.budget import BudgetLimits
from mala_tui.core.limits import Limits
from mala_tui.core.phases import ManageMode
from mala_tui.core.subagent_window import SubagentLimits
from mala_tui.core.window import (
    CLI_DEFAULT_MODEL,
    DEFAULT_MODEL_WINDOWS,
    Window,
    resolve_window,
)
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.session.runner_limits import RunnerLimits


def task_limits(
    task_settings: Settings, run_settings: Settings, spec: SessionSpec
) -> tuple[Limits, BudgetLimits | None]:
    """A task's limits under its profile (`task_settings`, the profile over the run's), and
    its own budget when the profile changes it (None: the run's applies): the one place a
    profile's limits are made, for the run's tasks and those added while it runs."""
    limits = limits_from(task_settings, spec.model, spec.betas)
    budget = task_settings.budget
    return limits, budget.session_limits() if budget != run_settings.budget else None


def subagent_limits_for(
    settings: Settings, model: str | None, betas: tuple[str, ...] = ()
) -> SubagentLimits | None:
    """The thresholds the session's subagents are kept under (`[context.subagents]`), over
    the session's window; None when mala-tui only watches (`manage = "off"`)."""
    if settings.context.manage is ManageMode.OFF:
        return None
    subagents = settings.context.subagents
    return SubagentLimits(
        window=window_for(settings, model, betas).tokens,
        soft_threshold=subagents.soft_threshold,
        hard_threshold=subagents.hard_threshold,
    )


def window_for(settings: Settings, model: str | None, betas: tuple[str, ...] = ()) -> Window:
    """The session's window before its first request (see core.window).

    No model named: Claude Code runs its own default model, whose window is in the table,
    unless `context.context_limit` was set, which then says what the window is."""
    table = {**DEFAULT_MODEL_WINDOWS, **settings.context.model_windows}
    if not model and "context_limit" not in settings.context.model_fields_set:
        model = CLI_DEFAULT_MODEL
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
        manage=context.manage,
        never_mask_tools=frozenset(context.never_mask_tools),
        cache_ttl_seconds=context.cache_ttl_seconds,
        keep_recent_observations=context.keep_recent_observations,
        mask_min_batch_tokens=context.mask_min_batch_tokens,
        carryover_turns=context.carryover_turns,
        max_restarts=context.max_restarts,
        require_approval=context.require_approval,
        max_idle_retries=idle.max_idle_retries,
        idle_retry_backoff=idle.idle_retry_backoff,
        disconnect_timeout=idle.disconnect_timeout_seconds,
        api_failure_seconds=idle.api_failure_seconds,
    )


def runner_limits_from(settings: Settings) -> RunnerLimits:
    return RunnerLimits(
        idle_timeout=settings.idle.idle_timeout_seconds,
        disconnect_timeout=settings.idle.disconnect_timeout_seconds,
        session_timeout=settings.idle.session_timeout_seconds,
    )
