"""What mala-tui does for a subagent whose window nears full: the decision, pure.

A subagent's window is not mala-tui's to mask or restart (its transcript is the CLI's,
read once, and it cannot be resumed: docs/ARCHITECTURE.md, "Subagents and background
work"). What mala-tui can do is answer the PostToolUse hook that fires inside it, before
the subagent's next request: add a line the subagent's model reads with the result (wind
down: return your findings now), or replace the result (withheld: it would push the
window past the hard threshold). The CLI compacts a subagent itself only once the API
refuses its prompt; these act before that, so its findings are kept whole.

The figure judged is an estimate: the subagent's latest call's prompt (exact, from the
stream) plus the new result at chars/4, the same first guess the main thread starts from.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mala_tui.core.text import tokens as short

CHARS_PER_TOKEN = 4
"""The first guess at a result's tokens from its characters, as the main thread's."""


@dataclass(frozen=True, slots=True)
class SubagentLimits:
    """A session's subagents' thresholds, as fractions of their window."""

    window: int
    """Tokens: the session's window (a subagent runs the session's model unless told)."""
    soft_threshold: float = 0.85
    """From here the subagent is told, once, to return its findings now."""
    hard_threshold: float = 0.95
    """A result that would take the window past here is withheld from the subagent."""


class SubagentAct(StrEnum):
    CARRY_ON = "carry_on"
    WIND_DOWN = "wind_down"
    WITHHOLD = "withhold"


@dataclass(frozen=True, slots=True)
class SubagentVerdict:
    act: SubagentAct
    tokens: int
    """The subagent's window before this result (its latest call's prompt)."""
    result_tokens: int
    """The result's estimate (chars/4)."""

    @property
    def estimate(self) -> int:
        """What the subagent's next request would carry with the result in it."""
        return self.tokens + self.result_tokens


def result_tokens(chars: int) -> int:
    return max(0, chars) // CHARS_PER_TOKEN


def judge(
    limits: SubagentLimits, tokens: int, result_chars: int, *, wound_down: bool
) -> SubagentVerdict:
    """What to do with one tool result of a subagent's whose window holds `tokens`.

    Withheld when the result would take the window past the hard threshold (whatever was
    said before: a result that big must not reach it); else told to wind down once the
    window with the result reaches the soft threshold, once per subagent."""
    size = result_tokens(result_chars)
    estimate = tokens + size
    if estimate > limits.hard_threshold * limits.window:
        return SubagentVerdict(SubagentAct.WITHHOLD, tokens, size)
    if not wound_down and estimate >= limits.soft_threshold * limits.window:
        return SubagentVerdict(SubagentAct.WIND_DOWN, tokens, size)
    return SubagentVerdict(SubagentAct.CARRY_ON, tokens, size)


def wind_down_text(verdict: SubagentVerdict, window: int) -> str:
    """What the subagent's model reads beside the result (the hook's additional context)."""
    return (
        f"mala-tui: your context window is nearly full (~{short(verdict.estimate)} of "
        f"{short(window)} tokens). Wrap up now: fetch nothing more, and return your findings "
        "so far as your final answer, saying what you did not get to."
    )


def withheld_text(tool: str, verdict: SubagentVerdict, window: int) -> str:
    """What the subagent reads in place of a result that would overflow its window."""
    return (
        f"[mala-tui withheld this {tool} result (~{short(verdict.result_tokens)} tokens): it "
        f"would take your context window past its limit (~{short(verdict.estimate)} of "
        f"{short(window)}). Do not fetch it again. Wrap up now: return your findings so far "
        "as your final answer, saying what you did not get to.]"
    )
