"""What one session spent: its main thread's calls, costed, and Claude Code's own totals.

A part of core.view's `SessionState`: the calls mala-tui saw are metered as they are
reported (core.pricing); what Claude Code counted beyond them (a subagent's
compaction, say) is priced from its own cumulative totals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mala_tui.core import events as ev
from mala_tui.core.pricing import ModelPrice, PriceTable, Spend, SpendMeter, totals_cost
from mala_tui.core.session_records import CostPoint
from mala_tui.core.usage import CallUsage


@dataclass
class SessionSpend:
    """The session's spend as its events report it."""

    prices: PriceTable = field(default_factory=PriceTable, repr=False)
    """List prices the spend is costed at (the `[pricing]` settings)."""
    meter: SpendMeter = field(default_factory=lambda: SpendMeter(None), repr=False)
    """The main thread's calls."""
    costs: list[CostPoint] = field(default_factory=list)
    cli_costs: dict[str, float] = field(default_factory=dict)
    """Claude Code's own cumulative figure, by agent session (a restart starts another)."""
    cli_tokens: dict[str, CallUsage] = field(default_factory=dict)
    """Claude Code's own cumulative token counts, by agent session."""

    def started(self, model: str | None) -> None:
        """The session's first start: its calls are priced at `model`'s price."""
        self.meter = SpendMeter(self.prices.lookup(model))

    def model_learned(self, model: str) -> None:
        self.meter.reprice(self.prices.lookup(model))

    def cli_reported(self, event: ev.CliCostReported) -> None:
        self.cli_costs[event.session_id] = event.cost_usd
        if event.usage is not None:
            self.cli_tokens[event.session_id] = event.usage

    def cost_point(self, at: float, spend: Spend) -> None:
        self.costs.append(CostPoint(at, spend.cost_usd, spend.cache_hit_rate))

    @property
    def cli_cost_usd(self) -> float | None:
        """What Claude Code says the session cost (None: it has not said)."""
        return sum(self.cli_costs.values()) if self.cli_costs else None

    def seen(self, subagents: Iterable[Spend]) -> Spend:
        """The calls mala-tui saw: the main thread's and each subagent's."""
        total = self.meter.spend
        for spend in subagents:
            total = total + spend
        return total

    def unseen(self, seen: Spend, model: str | None) -> Spend:
        """Tokens Claude Code counted that no call mala-tui saw holds (a subagent's
        compaction, say: its summary request is in no transcript), priced at the
        session's model: Claude Code's totals less what was seen, never below 0."""
        if not self.cli_tokens:
            return Spend()
        totals = self.cli_tokens.values()
        extra = CallUsage(
            max(0, sum(usage.input_tokens for usage in totals) - seen.input_tokens),
            max(
                0,
                sum(usage.cache_creation_input_tokens for usage in totals)
                - seen.cache_write_tokens,
            ),
            max(0, sum(usage.cache_read_input_tokens for usage in totals) - seen.cache_read_tokens),
            max(0, sum(usage.output_tokens for usage in totals) - seen.output_tokens),
        )
        if extra.prompt_tokens == 0 and extra.output_tokens == 0:
            return Spend()
        price: ModelPrice | None = self.prices.lookup(model)
        return Spend(
            0,
            extra.input_tokens,
            extra.cache_creation_input_tokens,
            extra.cache_read_input_tokens,
            extra.output_tokens,
            totals_cost(price, extra) if price is not None else None,
        )
