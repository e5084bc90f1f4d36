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
enforces. But the CLI reports what it believes, and a model behind a proxy or a
gateway may take less: when the API refuses a prompt smaller than the window
believed, the window is estimated from that refusal (`RefusalBounds`) and no
report of the CLI's raises it again. Every figure carries where it came from,
and the gauge says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

ONE_MILLION: Final = 1_000_000
LONG_CONTEXT_SUFFIX: Final = "[1m]"
LONG_CONTEXT_BETA_PREFIX: Final = "context-1m"

#: Windows of current Claude models by name prefix, the longest prefix winning: what
#: Claude Code 2.1.330 (bundled with the SDK) reports as `contextWindow`, measured model
#: by model. The 5.x models, Opus 4.7 and 4.8, and the aliases (which it maps to the 5.5
#: models) have 1M by default; the older ones 200,000 unless the 1M window is asked for
#: (suffix or beta). Users add or override entries in config.
DEFAULT_MODEL_WINDOWS: Final[Mapping[str, int]] = {
    "claude-opus-5": ONE_MILLION,
    "claude-sonnet-5": ONE_MILLION,
    "claude-haiku-5": ONE_MILLION,
    "claude-fable-5": ONE_MILLION,
    "claude-opus-4-8": ONE_MILLION,
    "claude-opus-4-7": ONE_MILLION,
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "opus": ONE_MILLION,
    "sonnet": ONE_MILLION,
    "haiku": ONE_MILLION,
}

#: The model Claude Code answers as when it is given none (measured as above).
CLI_DEFAULT_MODEL: Final = "claude-opus-5-5"


class WindowSource(StrEnum):
    """Where a window figure came from; shown beside the gauge."""

    MODEL_NAME = "model name"
    BETA = "beta"
    TABLE = "model table"
    DEFAULT = "default"
    CLI = "CLI report"
    REFUSAL = "refusal estimate"
    """Lower than the session was told: the API refused a prompt that should have fit."""


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


@dataclass(frozen=True, slots=True)
class RefusalBounds:
    """What the API's refusals say of a window smaller than the session was told.

    The API's refusal names its limit (`prompt is too long: N tokens > M maximum`),
    but Claude Code passes on only "Prompt is too long". What is left are two
    bounds: the largest context the API accepted (measured), and the prompt it
    refused (an estimate: the last measured call plus what joined it since). The
    window lies between them; decisions take the midpoint, and every later refusal
    or acceptance narrows it.
    """

    accepted: int
    refused: int

    @property
    def window(self) -> int:
        return (self.accepted + self.refused + 1) // 2

    def refusing(self, refused: int) -> RefusalBounds:
        """Another refusal: the window is at most this. One estimated at or below what
        was accepted contradicts a measurement and says nothing."""
        if refused <= self.accepted:
            return self
        return RefusalBounds(self.accepted, min(self.refused, refused))

    def accepting(self, accepted: int) -> RefusalBounds | None:
        """A context the API took: the window is at least this. None when it reaches the
        refused estimate: that estimate was too low, and the bounds are dropped."""
        if accepted <= self.accepted:
            return self
        if accepted >= self.refused:
            return None
        return RefusalBounds(accepted, self.refused)

    def describe(self) -> str:
        return (
            f"between {self.accepted:,} (the largest context accepted) and "
            f"~{self.refused:,} (the prompt refused, estimated)"
        )


def learn_from_refusal(
    bounds: RefusalBounds | None, *, accepted: int, refused: int, news_below: int
) -> RefusalBounds | None:
    """The bounds after the API refused a prompt of about `refused` tokens.

    `news_below`: a refusal says the window is smaller than believed only when the
    prompt was one the session's own thresholds let through (below the hard
    threshold of the window believed); a refusal above that is a session that ran
    out, or an estimate a little low, and teaches nothing. Nothing is learnt without
    a measured context to bound it from below, or from an estimate at or below it.
    """
    if bounds is not None:
        raised = bounds.accepting(accepted)
        if raised is not None:
            return raised.refusing(refused)
    if accepted <= 0 or refused <= accepted or refused >= news_below:
        return None
    return RefusalBounds(accepted, refused)
