"""Token accounting: how full a session's context window is, and how we know.

The CLI reports usage in two shapes that look alike and mean different things:

* each assistant message (one API call) carries that call's `input_tokens`,
  `cache_creation_input_tokens`, `cache_read_input_tokens` and `output_tokens`;
* the turn's `ResultMessage` carries the *sum* of those over every call of the turn.

The window holds the latest call's whole prompt plus what it wrote, so the
primary measure is the latest call's four fields added together. Summing calls
counts the same prompt prefix once per call (1.4M "tokens" have been seen in a
200K window that way); dropping cache reads from a sum cures the symptom
but under-counts the real window, since with prompt caching most of the prompt
*is* cache reads. That cumulative measure is kept as the first fallback, with
its accumulator API, for clients that only see per-turn numbers; a characters/4
estimate of the transcript is the second; with nothing at all, tracking is
disabled and the pressure is 0 (never act on a number we do not have).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

#: Tokens per character assumed by the estimate; English and code average near 4.
CHARS_PER_TOKEN: Final = 4

#: Seed 001's sentinel for `CumulativeUsage.tracking_state`: usage is unavailable,
#: pressure reads 0. Totals themselves never go negative.
TRACKING_DISABLED: Final = -1
TRACKING_ENABLED: Final = 0

USAGE_FIELDS: Final = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


class UsageSource(StrEnum):
    """Where a context figure came from, best first."""

    PER_CALL = "per_call"
    """The latest API call's prompt plus output: exact."""
    CUMULATIVE = "cumulative"
    """Per-turn input+output deltas summed since the session started: approximate."""
    ESTIMATE = "estimate"
    """Characters of the transcript divided by 4: rough."""
    DISABLED = "disabled"
    """No usage at all: pressure is 0 and nothing is done on it."""

    @property
    def exact(self) -> bool:
        return self is UsageSource.PER_CALL


class Zone(StrEnum):
    """Where the pressure sits relative to the thresholds."""

    NORMAL = "normal"
    SOFT = "soft"
    HARD = "hard"


def zone_of(pressure: float, soft: float, hard: float) -> Zone:
    """The zone a pressure falls in, given a session's thresholds: the one place it is decided."""
    if pressure >= hard:
        return Zone.HARD
    if pressure >= soft:
        return Zone.SOFT
    return Zone.NORMAL


class UsageFieldError(ValueError):
    """A usage field that is not a count; the message names the field and the value."""


def _count(raw: Mapping[str, object], name: str, notes: list[str]) -> int:
    """Read one usage field as a non-negative integer.

    Missing and None mean 0 (the API omits cache fields when caching is off).
    Negative numbers are clamped to 0 and noted. Anything that is not a number,
    a numeric string or an integral float is rejected: guessing would put a
    wrong number on the gauge.
    """
    value = raw.get(name)
    if value is None:
        return 0
    if isinstance(value, bool):
        raise UsageFieldError(
            f"usage field {name} = {value!r}: expected a token count, got a boolean"
        )
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text)
        except ValueError:
            raise UsageFieldError(
                f"usage field {name} = {value!r}: expected a token count, got text"
            ) from None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise UsageFieldError(f"usage field {name} = {value!r}: expected a whole token count")
        value = int(value)
    if not isinstance(value, int):
        raise UsageFieldError(
            f"usage field {name} = {value!r}: expected a token count, got {type(value).__name__}"
        )
    if value < 0:
        notes.append(f"usage field {name} = {value} clamped to 0")
        return 0
    return value


@dataclass(frozen=True, slots=True)
class CallUsage:
    """One API call's usage, as `message_start` + `message_delta` report it."""

    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def parse(cls, raw: Mapping[str, object] | None) -> tuple[CallUsage, tuple[str, ...]]:
        """Validate a usage mapping from the wire.

        Returns the usage and notes about values that were clamped.

        Raises:
            UsageFieldError: a field that is not a count (text, boolean, fraction).
        """
        if raw is None:
            return cls(), ()
        if not isinstance(raw, Mapping):
            raise UsageFieldError(f"usage = {raw!r}: expected a mapping of token counts")
        notes: list[str] = []
        counts = {name: _count(raw, name, notes) for name in USAGE_FIELDS}
        return cls(**counts), tuple(notes)

    @property
    def prompt_tokens(self) -> int:
        """Everything the model read for this call, cached or not."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def context_tokens(self) -> int:
        """The window this call left behind: its whole prompt plus what it wrote."""
        return self.prompt_tokens + self.output_tokens

    def with_output(self, output_tokens: int) -> CallUsage:
        """The same call once `message_delta` has given the final output count."""
        return CallUsage(
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
            max(0, output_tokens),
        )


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """How full one session's window is, and which source said so."""

    tokens: int
    window: int
    source: UsageSource
    call: CallUsage | None = None

    @property
    def pressure(self) -> float:
        """Fraction of the window in use; 0 when tracking is disabled; may pass 1.0."""
        if self.source is UsageSource.DISABLED or self.window <= 0:
            return 0.0
        return self.tokens / self.window

    @property
    def percent(self) -> float:
        return self.pressure * 100

    def zone(self, soft: float, hard: float) -> Zone:
        return zone_of(self.pressure, soft, hard)


class CumulativeUsage:
    """Seed 001's per-turn accumulator: input+output deltas summed over a session.

    Used only when per-call usage is missing. Cache reads are kept for telemetry
    and never count towards pressure, because per-turn sums repeat the cached
    prefix once per call.
    """

    __slots__ = ("cache_read_tokens", "input_tokens", "output_tokens", "tracking_state")

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read_tokens = 0
        self.tracking_state = TRACKING_ENABLED

    def add_turn(
        self, *, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0
    ) -> None:
        """Accumulate one turn's deltas; negative values count as 0; a no-op while disabled."""
        if not self.is_tracking_enabled():
            return
        self.input_tokens += max(0, input_tokens)
        self.output_tokens += max(0, output_tokens)
        self.cache_read_tokens += max(0, cache_read_tokens)

    def reset(self) -> None:
        """Zero the totals for a new context; tracking stays disabled if it was."""
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read_tokens = 0

    def disable_tracking(self) -> None:
        """Usage is unavailable: pressure reads 0 and turns are ignored until re-enabled."""
        self.tracking_state = TRACKING_DISABLED

    def enable_tracking(self) -> None:
        """Usage arrived again after being unavailable: count from zero."""
        if not self.is_tracking_enabled():
            self.tracking_state = TRACKING_ENABLED
            self.reset()

    def is_tracking_enabled(self) -> bool:
        return self.tracking_state != TRACKING_DISABLED

    @property
    def live_tokens(self) -> int:
        """Input + output, the only part that counts towards pressure."""
        return max(0, self.input_tokens) + max(0, self.output_tokens)

    def pressure_ratio(self, context_limit: int) -> float:
        """Input + output over the limit; 0 when disabled or the limit is not positive."""
        if not self.is_tracking_enabled() or context_limit <= 0:
            return 0.0
        return self.live_tokens / context_limit


def estimate_tokens(characters: int) -> int:
    """Seed 004's fallback: characters / 4, rounded up."""
    return -(-max(0, characters) // CHARS_PER_TOKEN)


class UsageTracker:
    """Chooses the best figure available for one session's context.

    Feed it per-call usage when the stream gives it, per-turn sums when only
    those exist, and the transcript's size; ask `current()` for the figure.
    """

    __slots__ = ("_cumulative", "_estimate_chars", "_have_turns", "_latest_call")

    def __init__(self) -> None:
        self._latest_call: CallUsage | None = None
        self._cumulative = CumulativeUsage()
        self._have_turns = False
        self._estimate_chars: int | None = None

    @property
    def cumulative(self) -> CumulativeUsage:
        return self._cumulative

    @property
    def latest_call(self) -> CallUsage | None:
        return self._latest_call

    def observe_call(self, call: CallUsage) -> None:
        """The latest main-thread API call's usage (replaces the previous one: never summed)."""
        self._latest_call = call

    def observe_turn(self, summed: CallUsage | None) -> None:
        """A turn ended with these summed figures, or with none (tracking is then disabled)."""
        if summed is None:
            self._cumulative.disable_tracking()
            return
        self._cumulative.enable_tracking()
        self._have_turns = True
        self._cumulative.add_turn(
            input_tokens=summed.input_tokens,
            output_tokens=summed.output_tokens,
            cache_read_tokens=summed.cache_read_input_tokens,
        )

    def observe_transcript_size(self, characters: int) -> None:
        self._estimate_chars = max(0, characters)

    def reset(self) -> None:
        """A fresh session starts: forget every figure of the old one."""
        self._latest_call = None
        self._cumulative.reset()
        self._have_turns = False
        self._estimate_chars = None

    def current(self, window: int) -> ContextUsage:
        if self._latest_call is not None:
            return ContextUsage(
                self._latest_call.context_tokens, window, UsageSource.PER_CALL, self._latest_call
            )
        if self._have_turns and self._cumulative.is_tracking_enabled():
            return ContextUsage(self._cumulative.live_tokens, window, UsageSource.CUMULATIVE)
        if self._estimate_chars is not None:
            return ContextUsage(estimate_tokens(self._estimate_chars), window, UsageSource.ESTIMATE)
        return ContextUsage(0, window, UsageSource.DISABLED)
