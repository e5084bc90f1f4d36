"""The settings one manager decides with, copied from the config: the core reads no files."""

from __future__ import annotations

from dataclasses import dataclass

from mala_tui.core.phases import ManageMode
from mala_tui.core.window import WindowSource


@dataclass(frozen=True, slots=True)
class Limits:
    """Thresholds are fractions of the window; token figures are in the API's tokens."""

    soft_threshold: float = 0.40
    hard_threshold: float = 0.80
    mask_target_threshold: float = 0.0
    """Masking goes on down to this fraction: one cache miss buys room for many steps."""
    context_limit: int = 200_000
    """The window this session starts with (see core.window)."""
    window_source: WindowSource = WindowSource.DEFAULT
    keep_recent_observations: int = 2
    mask_min_batch_tokens: int = 30_000
    carryover_turns: int = 5
    max_restarts: int = 5
    require_approval: bool = False
    max_idle_retries: int = 2
    idle_retry_backoff: tuple[float, ...] = (0.0, 5.0, 15.0)
    disconnect_timeout: float = 10.0
    checkpoint_prompt_tokens: int = 10_000
    """Bound on the checkpoint's copy in the continuation prompt (the full text is saved)."""
    carryover_tokens: int = 6_000
    """Bound on the carried-over steps in the continuation prompt."""
    max_mask_failures: int = 2
    """Masking is given up for the session after this many failures in a row."""
    manage: ManageMode = ManageMode.FULL
    never_mask_tools: frozenset[str] = frozenset()
    """Tools whose results are never masked."""
