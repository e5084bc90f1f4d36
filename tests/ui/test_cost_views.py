"""Cost estimates on the cards and in the detail view, beside the context chart."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.pricing import DEFAULT_PRICES
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import CallUsage
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.widgets.cost_panel import CostData, CostPanel, cost_columns
from tests.support.usage_events import reported_twice, started

from .helpers import make_app, open_session, screen_text

CALLS = [CallUsage(5, 30_000, 0, 800), CallUsage(5, 2_000, 30_000, 600)]
CALLS += [CallUsage(5, 1_000, 32_000 + 1_000 * n, 400) for n in range(6)]


def spend_run() -> RunState:
    events: list[ev.Event] = [
        ev.RunStarted(at=0.0, run_id="r", sessions=("priced", "unpriced"), mode=ev.RunMode.RUN)
    ]
    for name, model in (("priced", "claude-sonnet-4-5"), ("unpriced", "my-own-model")):
        events.append(started(name, model))
        for step, call in enumerate(CALLS):
            events += reported_twice(name, 10.0 * (step + 1), call)
    return RunState().apply_all(events)


def expected_cost() -> float:
    price = DEFAULT_PRICES["claude-sonnet-4-5"]
    return sum(price.call_cost(call) for call in CALLS)


async def test_cards_show_the_estimate_and_the_cache_hit_rate() -> None:
    state = spend_run()
    spend = state.sessions["priced"].spend
    assert spend.cost_usd == pytest.approx(expected_cost())
    app = make_app(state)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        priced, unpriced = screen.card("priced"), screen.card("unpriced")
        assert priced is not None and unpriced is not None
        rate = f"{(spend.cache_hit_rate or 0) * 100:.0f}% cached"
        assert str(priced.border_subtitle) == f"${expected_cost():.2f} est \u00b7 {rate}"
        assert str(unpriced.border_subtitle) == f"no price \u00b7 {rate}"
        text = screen_text(app)
        assert f"${expected_cost():.2f} est" in text
        # The run's total is in the summary bar: one session has no price, so neither has it.
        assert f"run no price \u00b7 {rate}" in text


async def test_detail_shows_cost_over_time_beside_the_context_chart() -> None:
    app = make_app(spend_run())
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "priced")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        panel = app.screen.query_one(CostPanel)
        shown = panel.render().plain
        assert "Cost (estimate, list prices)" in shown
        assert f"${expected_cost():.2f}" in shown
        rate = app.controller.state.sessions["priced"].spend.cache_hit_rate or 0
        assert f"cache hits {rate * 100:.0f}% \u00b7 {len(CALLS)} calls" in shown
        plot = shown.splitlines()[5:]
        assert plot and "\u2588" in plot[-1]
        chart = app.screen.query_one("#chart")
        assert panel.region.x >= chart.region.right  # beside the chart, not under it


async def test_detail_of_an_unpriced_model_says_so() -> None:
    app = make_app(spend_run())
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "unpriced")
        await pilot.pause()
        shown = app.screen.query_one(CostPanel).render().plain
        assert "no price for my-own-model" in shown
        assert "$" not in shown


def test_cost_columns_rise_with_the_spend_and_never_fall() -> None:
    data = CostData(
        spend=spend_run().sessions["priced"].spend,
        model="m",
        points=((0.0, 1.0), (5.0, 2.0), (10.0, 4.0)),
        start=0.0,
        end=10.0,
    )
    rows = cost_columns(data, width=10, rows=4)
    assert len(rows) == 4 and all(len(row) == 10 for row in rows)
    heights = [
        sum(" \u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588".index(r[c]) for r in rows)
        for c in range(10)
    ]
    assert heights == sorted(heights) and heights[-1] == 32
    assert cost_columns(CostData(data.spend, "m", ()), 10, 4) == []
