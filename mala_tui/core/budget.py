"""Budgets: how much a session (or a whole run) may spend, and where it stands.

Three limits, each optional: cost in US dollars (estimated from list prices, see
core.pricing), model turns (main-thread API calls), and wall-clock minutes.
Near a limit (90% by default) the session should wind down and write its
checkpoint while it still can; at the limit it stops, the checkpoint kept.
Nothing here acts: `check` says which of ok / near / over and why, and the
manager decides what that means for the session.

A cost limit on a model without a price cannot be judged; `check` says so in
its notes rather than treating unknown spend as zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from mala_tui.core.text import plural

NEAR_FRACTION: Final = 0.9
"""Share of a limit at which the session winds down."""


class BudgetState(StrEnum):
    OK = "ok"
    NEAR = "near"
    """At or past `near_fraction` of a limit: wind down and checkpoint now."""
    OVER = "over"
    """At or past a limit: stop, keeping the checkpoint."""


@dataclass(frozen=True, slots=True)
class BudgetLimits:
    """A session's (or a run's) limits; None means no limit of that kind."""

    max_cost_usd: float | None = None
    max_turns: int | None = None
    max_minutes: float | None = None
    near_fraction: float = NEAR_FRACTION

    def __post_init__(self) -> None:
        for name in ("max_cost_usd", "max_turns", "max_minutes"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"{name} = {value!r}: a limit must be a number above 0")
        if not 0 < self.near_fraction <= 1:
            raise ValueError(f"near_fraction = {self.near_fraction!r}: must be in (0, 1]")

    @property
    def any(self) -> bool:
        return any(
            limit is not None for limit in (self.max_cost_usd, self.max_turns, self.max_minutes)
        )

    def raised(
        self,
        *,
        max_cost_usd: float | None = None,
        max_turns: int | None = None,
        max_minutes: float | None = None,
    ) -> BudgetLimits:
        """These limits with the given ones replaced (the operator raising a limit)."""
        return BudgetLimits(
            max_cost_usd if max_cost_usd is not None else self.max_cost_usd,
            max_turns if max_turns is not None else self.max_turns,
            max_minutes if max_minutes is not None else self.max_minutes,
            self.near_fraction,
        )


@dataclass(frozen=True, slots=True)
class Spent:
    """What has been used so far."""

    cost_usd: float | None = 0.0
    """None when the model has no price: a cost limit cannot be judged."""
    turns: int = 0
    minutes: float = 0.0


@dataclass(frozen=True, slots=True)
class Reading:
    """One limit's standing."""

    limit: str
    """max_cost_usd, max_turns or max_minutes."""
    used: float
    allowed: float
    state: BudgetState

    @property
    def fraction(self) -> float:
        return self.used / self.allowed

    def describe(self) -> str:
        """E.g. "cost $4.61 of $5.00 (92%)", "turns 50 of 50 (100%)"."""
        return f"{_LABELS[self.limit](self.used, self.allowed)} ({self.fraction:.0%})"


_LABELS = {
    "max_cost_usd": lambda used, allowed: f"cost ${used:.2f} of ${allowed:.2f}",
    "max_turns": lambda used, allowed: f"turns {used:.0f} of {allowed:.0f}",
    "max_minutes": lambda used, allowed: f"time {used:.1f} of {plural(allowed, 'minute')}",
}


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    state: BudgetState
    readings: tuple[Reading, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """The limits in the worst state, e.g. "budget: cost $5.02 of $5.00 (100%)"."""
        worst = [r for r in self.readings if r.state is self.state]
        if self.state is BudgetState.OK or not worst:
            return ""
        return "budget: " + "; ".join(r.describe() for r in worst)


def check(spent: Spent, limits: BudgetLimits) -> BudgetCheck:
    """Where `spent` stands against `limits`: the worst of the limits set decides."""
    readings: list[Reading] = []
    notes: list[str] = []
    pairs: list[tuple[str, float | None, float | None]] = [
        ("max_cost_usd", spent.cost_usd, limits.max_cost_usd),
        ("max_turns", float(spent.turns), None if limits.max_turns is None else limits.max_turns),
        ("max_minutes", spent.minutes, limits.max_minutes),
    ]
    for name, used, allowed in pairs:
        if allowed is None:
            continue
        if used is None or not math.isfinite(used):
            notes.append(f"{name} not enforced: the model has no price, so its cost is unknown")
            continue
        readings.append(Reading(name, used, allowed, _state(used, allowed, limits.near_fraction)))
    order = list(BudgetState)
    state = max((r.state for r in readings), key=order.index, default=BudgetState.OK)
    return BudgetCheck(state, tuple(readings), tuple(notes))


def _state(used: float, allowed: float, near: float) -> BudgetState:
    if used >= allowed:
        return BudgetState.OVER
    if used >= allowed * near:
        return BudgetState.NEAR
    return BudgetState.OK


def run_spent(sessions: list[Spent], minutes: float) -> Spent:
    """A run's spend: every session's cost and turns added up, time since the run began.

    The cost is unknown (None) if any session's is.
    """
    costs = [s.cost_usd for s in sessions]
    cost = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    return Spent(cost, sum(s.turns for s in sessions), minutes)
