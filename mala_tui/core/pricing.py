"""What a session's API calls cost: list prices per model, and a meter fed call by call.

Every figure here is an *estimate from list prices*: Anthropic's published
per-million-token prices for the first-party API, as on
https://platform.claude.com/docs/en/about-claude/pricing ("Model pricing" and
"Long context pricing"), read November 2026. Batch discounts, negotiated
rates, cloud-provider prices, subscription plans and 1-hour cache writes are
not modelled (Claude Code writes the 5-minute cache). Users correct or add
models in the `[pricing]` table of the config file.

The meter is fed the same per-call usage the context gauge uses. The runtime
reports each main-thread API call twice: once at `message_start` (prompt
figures, output 0) and again when `message_delta` gives the final output
count. Those two reports carry the same prompt figures; two different calls
in a row never do (the second call's prompt holds the first one's output), so
a report whose input, cache-write and cache-read counts equal the previous
report's is the same call, updated, and is counted once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from mala_tui.core.usage import CallUsage

PER_MILLION: Final = 1_000_000
LONG_CONTEXT_THRESHOLD: Final = 200_000
"""Prompt tokens (input + cache write + cache read) past which the 1M-window premium applies."""

#: Characters that may follow a price key inside a model name: the key must end a
#: name part, so "claude-opus-4-1" prices "claude-opus-4-1-20250805" but not "claude-opus-4-10".
_NAME_BOUNDARY: Final = frozenset("-[@:.")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """One model's list prices in US dollars per million tokens."""

    input: float
    cache_write: float
    """5-minute cache writes (cache_creation_input_tokens)."""
    cache_read: float
    """Cache hits (cache_read_input_tokens)."""
    output: float
    long_context_threshold: int | None = None
    """Requests whose prompt is over this many tokens pay the premium below (None: never)."""
    long_context_input_factor: float = 1.0
    """Premium on every prompt price (input, cache write, cache read) of such a request."""
    long_context_output_factor: float = 1.0
    """Premium on the output price of such a request."""

    def __post_init__(self) -> None:
        for name in ("input", "cache_write", "cache_read", "output"):
            value = getattr(self, name)
            if not value >= 0:  # also rejects NaN
                raise ValueError(f"{name} price {value!r}: must be 0 or more dollars per million")
        if self.long_context_input_factor < 1 or self.long_context_output_factor < 1:
            raise ValueError("a long-context factor below 1 would be a discount, not a premium")

    def call_cost(self, call: CallUsage) -> float:
        """US dollars for one API call, with the long-context premium when it applies."""
        prompt_factor = output_factor = 1.0
        if (
            self.long_context_threshold is not None
            and call.prompt_tokens > self.long_context_threshold
        ):
            prompt_factor = self.long_context_input_factor
            output_factor = self.long_context_output_factor
        prompt = (
            call.input_tokens * self.input
            + call.cache_creation_input_tokens * self.cache_write
            + call.cache_read_input_tokens * self.cache_read
        )
        return (prompt * prompt_factor + call.output_tokens * self.output * output_factor) / (
            PER_MILLION
        )


def totals_cost(price: ModelPrice, usage: CallUsage) -> float:
    """US dollars for tokens known only as totals over calls (so no call's long-context
    premium can be judged: none is applied)."""
    return (
        usage.input_tokens * price.input
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
        + usage.output_tokens * price.output
    ) / PER_MILLION


def _standard(input_price: float, output_price: float, *, long_context: bool = False) -> ModelPrice:
    """The usual shape: cache writes at 1.25x input, cache hits at 0.1x input.

    With `long_context`, the 1M-window premium: past 200K prompt tokens every prompt
    price doubles ($6 instead of $3 for Sonnet) and output costs 1.5x ($22.50 for $15).
    """
    return ModelPrice(
        input=input_price,
        cache_write=input_price * 1.25,
        cache_read=input_price * 0.1,
        output=output_price,
        long_context_threshold=LONG_CONTEXT_THRESHOLD if long_context else None,
        long_context_input_factor=2.0 if long_context else 1.0,
        long_context_output_factor=1.5 if long_context else 1.0,
    )


DEFAULT_PRICES: Final[Mapping[str, ModelPrice]] = {
    # The 5.x models, as the model catalog of the Claude Code CLI bundled with
    # claude-agent-sdk prices them (Claude Code's default model is one of them: a run
    # without --model learns it from the first answer, and is priced by it).
    "claude-opus-5-5": ModelPrice(input=4.0, cache_write=5.0, cache_read=0.2, output=20.0),
    "claude-opus-5": _standard(5.0, 25.0),
    "claude-sonnet-5-5": ModelPrice(input=2.0, cache_write=2.5, cache_read=0.1, output=10.0),
    "claude-sonnet-5": _standard(2.0, 10.0),
    # Haiku 5.5: past 100K prompt tokens, every price is 5x.
    "claude-haiku-5-5": ModelPrice(
        input=0.1,
        cache_write=0.125,
        cache_read=0.01,
        output=0.5,
        long_context_threshold=100_000,
        long_context_input_factor=5.0,
        long_context_output_factor=5.0,
    ),
    # Opus 4.5 and later: $5 in, $6.25 cache write, $0.50 cache hit, $25 out.
    "claude-opus-4-8": _standard(5.0, 25.0),
    "claude-opus-4-7": _standard(5.0, 25.0),
    "claude-opus-4-6": _standard(5.0, 25.0),
    "claude-opus-4-5": _standard(5.0, 25.0),
    # Opus 4 and 4.1: $15 in, $18.75 cache write, $1.50 cache hit, $75 out.
    "claude-opus-4-1": _standard(15.0, 75.0),
    "claude-opus-4-0": _standard(15.0, 75.0),
    "claude-opus-4-20250514": _standard(15.0, 75.0),
    # Sonnet 4.x: $3 in, $3.75 cache write, $0.30 cache hit, $15 out; Sonnet 4 and 4.5
    # with the 1M window pay 2x on the prompt and 1.5x on the output past 200K.
    "claude-sonnet-4-6": _standard(3.0, 15.0),
    "claude-sonnet-4-5": _standard(3.0, 15.0, long_context=True),
    "claude-sonnet-4-0": _standard(3.0, 15.0, long_context=True),
    "claude-sonnet-4-20250514": _standard(3.0, 15.0, long_context=True),
    # Haiku 4.5: $1 in, $1.25 cache write, $0.10 cache hit, $5 out.
    "claude-haiku-4-5": _standard(1.0, 5.0),
    # Haiku 3.5: $0.80 in, $1 cache write, $0.08 cache hit, $4 out.
    "claude-3-5-haiku": _standard(0.8, 4.0),
}
"""List prices by model-name prefix (see the module docstring for the source)."""


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices by model-name prefix; the longest prefix that ends a name part wins."""

    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def lookup(self, model: str | None) -> ModelPrice | None:
        """The price of `model`, or None when no entry names it (shown as "no price")."""
        if not model:
            return None
        name = model.strip().lower()
        best: str | None = None
        for key in self.prices:
            if _names(key, name) and (best is None or len(key) > len(best)):
                best = key
        return None if best is None else self.prices[best]

    def with_overrides(
        self, overrides: Mapping[str, Mapping[str, float | int | None]]
    ) -> PriceTable:
        """A table with the user's entries: a known model's missing fields keep their default,
        a new model's cache prices default to 1.25x (write) and 0.1x (hit) its input price.

        Raises:
            ValueError: a new model without input and output prices, or a bad price.
        """
        prices = dict(self.prices)
        for key, fields in overrides.items():
            name = key.strip().lower()
            given = {k: v for k, v in fields.items() if v is not None}
            base = prices.get(name)
            if base is None:
                missing = [k for k in ("input", "output") if k not in given]
                if missing:
                    raise ValueError(
                        f"{name!r} has no default price, so it needs {' and '.join(missing)}"
                    )
                base = _standard(float(given["input"]), float(given["output"]))
            prices[name] = replace(base, **given)  # type: ignore[arg-type]
        return PriceTable(prices)


def _names(key: str, model: str) -> bool:
    key = key.lower()
    if not model.startswith(key):
        return False
    return len(model) == len(key) or model[len(key)] in _NAME_BOUNDARY


def cache_hit_rate(input_tokens: int, cache_write: int, cache_read: int) -> float | None:
    """Cache reads over every prompt token; None when nothing was read yet."""
    total = input_tokens + cache_write + cache_read
    return cache_read / total if total > 0 else None


@dataclass(frozen=True, slots=True)
class Spend:
    """What a session (or a run) has used so far, and what it cost at list prices."""

    calls: int = 0
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    """None when some call's model has no price: a sum without it would be wrong."""

    @property
    def cache_hit_rate(self) -> float | None:
        return cache_hit_rate(self.input_tokens, self.cache_write_tokens, self.cache_read_tokens)

    @property
    def priced(self) -> bool:
        return self.cost_usd is not None

    def __add__(self, other: Spend) -> Spend:
        # No call, no cost: a session that never called its unpriced model adds $0, it
        # does not leave a whole run without a price.
        cost = (
            None
            if (self.calls and self.cost_usd is None) or (other.calls and other.cost_usd is None)
            else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        )
        return Spend(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.output_tokens + other.output_tokens,
            cost,
        )


def total_spend(spends: Iterable[Spend]) -> Spend:
    """Several sessions' spend added up; unpriced if a call of any of them has no price."""
    result = Spend()
    for spend in spends:
        result = result + spend
    return result


class SpendMeter:
    """Adds up one session's calls as they are reported, each call once.

    Feed `observe` every per-call usage report in order (across restarts too:
    a fresh session is still money spent). A report with the previous one's
    prompt figures is that call again with its final output count, and
    replaces it instead of adding to it.
    """

    __slots__ = ("_closed", "_open", "price")

    def __init__(self, price: ModelPrice | None) -> None:
        self.price = price
        self._closed = Spend(cost_usd=0.0 if price is not None else None)
        self._open: CallUsage | None = None

    def observe(self, call: CallUsage) -> None:
        if call.prompt_tokens == 0 and call.output_tokens == 0:
            return  # no figures at all (an estimate or a refused call): nothing was billed
        if self._open is not None and _same_call(self._open, call):
            self._open = call.with_output(max(self._open.output_tokens, call.output_tokens))
            return
        if self._open is not None:
            self._closed = self._closed + self._one(self._open)
        self._open = call

    def reprice(self, price: ModelPrice | None) -> None:
        """Calls from now on are of a model priced `price` (the one the API answered as):
        what was spent so far keeps its own price (none, if it had none)."""
        if self._open is not None:
            self._closed = self._closed + self._one(self._open)
            self._open = None
        if self._closed.calls == 0:  # nothing spent yet: priced from the start
            self._closed = Spend(cost_usd=0.0 if price is not None else None)
        self.price = price

    @property
    def spend(self) -> Spend:
        if self._open is None:
            return self._closed
        return self._closed + self._one(self._open)

    def _one(self, call: CallUsage) -> Spend:
        cost = self.price.call_cost(call) if self.price is not None else None
        return Spend(
            1,
            call.input_tokens,
            call.cache_creation_input_tokens,
            call.cache_read_input_tokens,
            call.output_tokens,
            cost,
        )


def _same_call(before: CallUsage, after: CallUsage) -> bool:
    return (
        before.input_tokens == after.input_tokens
        and before.cache_creation_input_tokens == after.cache_creation_input_tokens
        and before.cache_read_input_tokens == after.cache_read_input_tokens
        and after.output_tokens >= before.output_tokens
    )


def format_cost(cost: float | None) -> str:
    """$0.0042, $0.42, $12.30, $1,234: or "no price" for a model without one."""
    if cost is None:
        return "no price"
    if cost == 0:
        return "$0.00"
    if cost < 0.01:
        return f"${cost:.4f}"
    if cost < 1_000:
        return f"${cost:.2f}"
    return f"${cost:,.0f}"
