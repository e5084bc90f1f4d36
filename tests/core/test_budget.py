"""Budget arithmetic: ok, near (wind down) or over (stop), and why, for each kind of limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mala_tui.core.budget import (
    BudgetLimits,
    BudgetState,
    Spent,
    check,
    run_spent,
)

OK, NEAR, OVER = BudgetState.OK, BudgetState.NEAR, BudgetState.OVER
LIMITS = BudgetLimits(max_cost_usd=5.0, max_turns=50, max_minutes=30.0)


@pytest.mark.parametrize(
    ("spent", "state", "reason"),
    [
        (Spent(0.0, 0, 0.0), OK, ""),
        (Spent(4.49, 44, 26.9), OK, ""),
        (Spent(4.5, 0, 0.0), NEAR, "budget: cost $4.50 of $5.00 (90%)"),
        (Spent(0.0, 45, 0.0), NEAR, "budget: turns 45 of 50 (90%)"),
        (Spent(0.0, 0, 27.0), NEAR, "budget: time 27.0 of 30 minutes (90%)"),
        (Spent(5.0, 0, 0.0), OVER, "budget: cost $5.00 of $5.00 (100%)"),
        (Spent(1.0, 50, 0.0), OVER, "budget: turns 50 of 50 (100%)"),
        (Spent(1.0, 0, 31.0), OVER, "budget: time 31.0 of 30 minutes (103%)"),
        # The worst limit decides; the reason names every limit in that state.
        (Spent(4.6, 50, 0.0), OVER, "budget: turns 50 of 50 (100%)"),
        (Spent(4.6, 46, 0.0), NEAR, "budget: cost $4.60 of $5.00 (92%); turns 46 of 50 (92%)"),
    ],
)
def test_each_limit_alone_and_together(spent: Spent, state: BudgetState, reason: str) -> None:
    result = check(spent, LIMITS)
    assert (result.state, result.reason) == (state, reason)


def test_no_limits_is_always_ok() -> None:
    result = check(Spent(1e9, 10**9, 1e9), BudgetLimits())
    assert result.state is OK and result.readings == () and not BudgetLimits().any


def test_unknown_cost_is_not_judged_but_said() -> None:
    result = check(Spent(None, 10, 1.0), LIMITS)
    assert result.state is OK
    assert result.notes == (
        "max_cost_usd not enforced: the model has no price, so its cost is unknown",
    )
    assert check(Spent(None, 50, 1.0), LIMITS).state is OVER  # the other limits still hold


def test_near_fraction_is_configurable() -> None:
    limits = BudgetLimits(max_turns=10, near_fraction=0.5)
    assert check(Spent(turns=5), limits).state is NEAR
    assert check(Spent(turns=4), limits).state is OK


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_cost_usd": 0},
        {"max_cost_usd": -1.0},
        {"max_turns": 0},
        {"max_minutes": float("nan")},
        {"near_fraction": 0.0},
        {"near_fraction": 1.5},
    ],
)
def test_bad_limits_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="="):
        BudgetLimits(**kwargs)  # type: ignore[arg-type]


def test_raising_one_limit_keeps_the_others() -> None:
    raised = LIMITS.raised(max_cost_usd=8.0)
    assert raised == BudgetLimits(8.0, 50, 30.0)
    assert check(Spent(5.0, 0, 0.0), raised).state is OK


def test_run_spent_adds_sessions_and_takes_the_runs_time() -> None:
    spent = run_spent([Spent(1.0, 3, 9.0), Spent(2.5, 4, 2.0)], minutes=10.0)
    assert spent == Spent(3.5, 7, 10.0)
    assert run_spent([Spent(1.0, 3, 0.0), Spent(None, 1, 0.0)], 1.0).cost_usd is None


@given(
    used=st.floats(0, 1e4, allow_nan=False),
    allowed=st.floats(0.01, 1e4, allow_nan=False),
    near=st.floats(0.05, 1.0),
)
def test_state_only_rises_as_spend_rises(used: float, allowed: float, near: float) -> None:
    limits = BudgetLimits(max_cost_usd=allowed, near_fraction=near)
    order = list(BudgetState)
    before = check(Spent(used), limits).state
    after = check(Spent(used * 1.5 + 0.01), limits).state
    assert order.index(after) >= order.index(before)
    assert (before is OVER) == (used >= allowed)
