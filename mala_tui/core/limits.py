"""The settings one manager decides with, copied from the config: the core reads no files."""

from __future__ import annotations

from dataclasses import dataclass

from mala_tui.core.phases import ManageMode
from mala_tui.core.window import WindowSource


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Thresholds are fractions of the window; token figures are in the API's tokens.

    The configurable ones have no defaults here: the config's are the only ones
    (`runtime.supervisor.limits_from` builds these from the settings).
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
    checkpoint_prompt_tokens: int = 10_000
    """Bound on the checkpoint's copy in the continuation prompt (the full text is saved)."""
    carryover_tokens: int = 6_000
    """Bound on the carried-over steps in the continuation prompt."""
    max_mask_failures: int = 2
    """Masking is given up for the session after this many failures in a row."""
    manage: ManageMode
    never_mask_tools: frozenset[str]
    """Tools whose results are never masked."""
