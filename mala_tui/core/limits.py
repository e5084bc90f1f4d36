"""The settings one manager decides with, copied from the config: the core reads no files."""

from __future__ import annotations

from dataclasses import dataclass

from mala_tui.core.phases import ManageMode
from mala_tui.core.usage import CHARS_PER_TOKEN, estimate_tokens
from mala_tui.core.window import WindowSource


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Thresholds are fractions of the window; token figures are in the API's tokens.

    The configurable ones have no defaults here: the config's are the only ones
    (`runtime.run.supervisor.limits_from` builds these from the settings).
    """

    soft_threshold: float
    hard_threshold: float
    mask_target_threshold: float
    """Masking goes on down to this fraction: one cache miss buys room for many steps."""
    context_limit: int
    """The window this session starts with (see core.window)."""
    window_source: WindowSource = WindowSource.DEFAULT
    keep_recent_observations: int
    mask_min_batch_tokens: int
    carryover_turns: int
    max_restarts: int
    require_approval: bool
    max_idle_retries: int
    idle_retry_backoff: tuple[float, ...]
    disconnect_timeout: float
    api_failure_seconds: float | None
    """How long every API call may fail in a row (Claude Code's retries and mala-tui's)
    before the session fails; None: only the retry counts bound it."""
    checkpoint_prompt_tokens: int = 10_000
    """Bound on the checkpoint's copy in the continuation prompt (the full text is saved)."""
    carryover_tokens: int = 6_000
    """Bound on the carried-over steps in the continuation prompt."""
    max_mask_failures: int = 2
    """Masking is given up for the session after this many failures in a row."""
    manage: ManageMode
    never_mask_tools: frozenset[str]
    """Tools whose results are never masked."""
    cache_ttl_seconds: float
    """The prompt cache's lifetime: a request after a longer silence finds the cache
    cold and writes its whole prompt again, so a mask just before it costs nothing."""

    @property
    def task_room(self) -> int:
        """The most a task may take of the window: what a session may fill before it
        is restarted (the whole window when mala-tui does not restart it)."""
        if self.manage is ManageMode.FULL:
            return int(self.hard_threshold * self.context_limit)
        return self.context_limit


def oversized_task(task: str, limits: Limits) -> str | None:
    """Why `task` cannot be given to a session under `limits`, or None when it fits.

    The size is the chars/4 estimate (the API counts only once it is sent): a task the
    estimate lets through and the API refuses ends its session at the refusal instead.
    A task past the room cannot be worked on as given: its session would be restarted,
    or refused, before the agent did any of it.
    """
    tokens = estimate_tokens(len(task))
    room = limits.task_room
    if tokens <= room:
        return None
    size = f"about {tokens:,} tokens ({len(task):,} characters at {CHARS_PER_TOKEN} a token)"
    window = f"{limits.context_limit:,}-token window"
    if room < limits.context_limit:
        bound = (
            f"more than the {room:,} of its {window} a session may fill before it restarts "
            f"(hard threshold {limits.hard_threshold:g})"
        )
    else:
        bound = f"more than its {window}"
    return f"{size}: {bound}; shorten it, or put its bulk in a file the agent reads"
