"""Turning characters into tokens with the session's own measured density.

The manager knows the conversation as text, and the API tells it, at every
call, how many tokens the whole prompt took. Per-block sizes (what a mask would
free, what a carry-over would bring, how large the result about to be sent is)
can only be estimated from the text, and characters/4 is wrong by up to 4x for
dense text: logs, numbers, JSON and CJK tokenize far denser than prose.

So each session fits a line through its own (estimate, measured) pairs, one per
API call: measured = overhead + density x estimate. The overhead is what the
transcript does not hold (the system prompt, the tool definitions); the density
(tokens per chars/4 token) is the slope, and scales every per-block estimate.
A plain ratio measured/estimate would fold the fixed overhead into the density
and overstate it early in a session by as much as the overhead weighs. Until the
pairs spread far enough apart to fit a slope, the density is the prior: 1.0 at
first, the previous session's fit after a restart (same model, same tools).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: The estimate must have moved this many (chars/4) tokens across the pairs before a
#: slope is trusted: below it, the CLI's own small additions dominate the fit.
MIN_SPREAD_TOKENS: Final = 2_000
#: Densities outside this range are taken as a broken fit, not a tokenizer.
MIN_DENSITY: Final = 0.2
MAX_DENSITY: Final = 10.0


@dataclass(frozen=True, slots=True)
class Density:
    """The calibration in force: tokens per chars/4 token, and whether it was measured."""

    ratio: float
    measured: bool
    overhead: int = 0
    """Tokens of the prompt the transcript does not hold (system prompt, tools)."""

    def scale(self, estimated_tokens: int) -> int:
        return round(max(0, estimated_tokens) * self.ratio)

    def describe(self) -> str:
        how = "measured" if self.measured else "assumed"
        return f"{self.ratio:.2f}x chars/4 ({how})"


class Calibration:
    """A least-squares line through one session's (estimate, measured) pairs."""

    __slots__ = ("_n", "_prior", "_sx", "_sxx", "_sxy", "_sy", "_xmax", "_xmin")

    def __init__(self, prior: float = 1.0) -> None:
        self._prior = prior
        self._clear()

    def _clear(self) -> None:
        self._n = 0
        self._sx = self._sy = self._sxx = self._sxy = 0.0
        self._xmin = float("inf")
        self._xmax = float("-inf")

    def observe(self, estimated_tokens: int, measured_tokens: int) -> None:
        """One API call: the transcript's chars/4 estimate and the prompt the API counted."""
        if estimated_tokens <= 0 or measured_tokens <= 0:
            return
        x, y = float(estimated_tokens), float(measured_tokens)
        self._n += 1
        self._sx += x
        self._sy += y
        self._sxx += x * x
        self._sxy += x * y
        self._xmin = min(self._xmin, x)
        self._xmax = max(self._xmax, x)

    def restart(self) -> None:
        """A fresh session: new pairs, the last fit as the prior (same model, same tools)."""
        current = self.density
        self._prior = current.ratio
        self._clear()

    @property
    def density(self) -> Density:
        n = self._n
        if n >= 2 and self._xmax - self._xmin >= MIN_SPREAD_TOKENS:
            variance = self._sxx - self._sx * self._sx / n
            if variance > 0:
                slope = (self._sxy - self._sx * self._sy / n) / variance
                if MIN_DENSITY <= slope <= MAX_DENSITY:
                    overhead = (self._sy - slope * self._sx) / n
                    return Density(slope, True, max(0, round(overhead)))
        if n >= 1:
            # One point, or too little spread: the prior density, the rest is overhead.
            mean_x, mean_y = self._sx / n, self._sy / n
            return Density(self._prior, False, max(0, round(mean_y - self._prior * mean_x)))
        return Density(self._prior, False)
