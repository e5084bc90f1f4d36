"""How large a session's context window is, known before its first request.

The CLI reports the window (`model_usage[model]["contextWindow"]`) only when a
turn ends, and one turn can be a whole task: a session judged against a guessed
200,000 until then masks a 1M session at 8% of its window. So the window is
resolved up front from what the session is started with, most specific first:

1. the model name: a `[1m]` suffix asks Claude Code for the 1M window;
2. the betas: `context-1m-...` gives the 1M window to a model that has one;
3. a per-model table (config, with defaults for current Claude models),
   matched by the longest name prefix;
4. the configured default.

When the CLI's own report arrives it replaces the figure: it is what the CLI
enforces. Every figure carries where it came from, and the gauge says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

ONE_MILLION: Final = 1_000_000
LONG_CONTEXT_SUFFIX: Final = "[1m]"
LONG_CONTEXT_BETA_PREFIX: Final = "context-1m"

#: Windows of current Claude models by name prefix. All are 200,000 tokens unless the
#: 1M window is asked for (suffix or beta). Users add or override entries in config.
DEFAULT_MODEL_WINDOWS: Final[Mapping[str, int]] = {
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "opus": 200_000,
    "sonnet": 200_000,
    "haiku": 200_000,
}


class WindowSource(StrEnum):
    """Where a window figure came from; shown beside the gauge."""

    MODEL_NAME = "model name"
    BETA = "beta"
    TABLE = "model table"
    DEFAULT = "default"
    CLI = "CLI report"


@dataclass(frozen=True, slots=True)
class Window:
    tokens: int
    source: WindowSource

    def describe(self) -> str:
        return f"{self.tokens:,} ({self.source.value})"


def resolve_window(
    model: str | None,
    betas: tuple[str, ...] = (),
    table: Mapping[str, int] = DEFAULT_MODEL_WINDOWS,
    default: int = 200_000,
) -> Window:
    """The window a session starts with, before the CLI has said anything."""
    name = (model or "").strip().lower()
    if name.endswith(LONG_CONTEXT_SUFFIX):
        return Window(ONE_MILLION, WindowSource.MODEL_NAME)
    if any(beta.strip().lower().startswith(LONG_CONTEXT_BETA_PREFIX) for beta in betas):
        return Window(ONE_MILLION, WindowSource.BETA)
    if name:
        matches = [prefix for prefix in table if name.startswith(prefix.lower())]
        if matches:
            return Window(table[max(matches, key=len)], WindowSource.TABLE)
    return Window(default, WindowSource.DEFAULT)
