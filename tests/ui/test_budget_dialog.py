"""Budgets in the app: the standing beside the cost, and b to raise a limit."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from mala_tui.core import events as ev
from mala_tui.core.budget import BudgetCheck, BudgetLimits
from mala_tui.core.operator_actions import OperatorAction, SetBudget
from mala_tui.core.usage import CallUsage
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.runtime.run.budget_watch import BudgetWatch
from mala_tui.ui.screens.budget import BudgetLimitError, BudgetScreen, parse_limits
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.widgets.cost_panel import CostPanel
from tests.support.usage_events import reported_twice, started

from .helpers import make_app, open_session, screen_text


class LiveWithBudget(FakeLiveSource):
    """A live run with budgets, watched as the real supervisor watches them."""

    def __init__(self, events: list[ev.Event]) -> None:
        self.watch = BudgetWatch(session_limits=BudgetLimits(max_turns=10, max_cost_usd=5.0))
        super().__init__(events)

    def budget_limits(self, session: str) -> tuple[BudgetLimits, BudgetLimits]:
        return self.watch.limits_for(session), self.watch.run_limits

    def budget_check(self, session: str) -> BudgetCheck:
        return self.watch.session_check(self.state.sessions[session], 100.0)

    def act(self, action: OperatorAction) -> None:
        if not isinstance(action, SetBudget):
            super().act(action)
            return
        self.calls.append(("budget", action.session or "*", repr(action.limits)))
        self.watch.set_limits(action.session, action.limits)


def events() -> list[ev.Event]:
    found: list[ev.Event] = [
        ev.RunStarted(at=0.0, run_id="r", sessions=("a",), mode=ev.RunMode.RUN),
        started("a", "claude-sonnet-4-5"),
    ]
    for n in range(1, 5):
        found += reported_twice("a", float(n), CallUsage(n, 1_000, 0, 50))
    return found


async def test_the_cost_panel_shows_where_the_budget_stands() -> None:
    app = make_app(LiveWithBudget(events()))
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "a")
        await pilot.pause()
        shown = app.screen.query_one(CostPanel).render().plain
        assert "budget 4/10 turns 40%" in shown
        assert "budget $0.02/$5 0%" in shown


async def test_b_raises_the_sessions_limit_and_sets_the_runs() -> None:
    source = LiveWithBudget(events())
    app = make_app(source)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "a", "b")
        await pilot.pause()
        assert isinstance(app.screen, BudgetScreen)
        turns = app.screen.query_one("#session-max_turns", Input)
        assert turns.value == "10"
        turns.value = "40"
        app.screen.query_one("#run-max_minutes", Input).value = "90"
        turns.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        assert source.watch.limits_for("a") == BudgetLimits(5.0, 40, None)
        assert source.watch.run_limits == BudgetLimits(None, None, 90.0)
        assert "budget 4/40 turns 10%" in app.screen.query_one(CostPanel).render().plain


async def test_a_bad_limit_is_named_and_nothing_changes() -> None:
    source = LiveWithBudget(events())
    app = make_app(source)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "a", "b")
        await pilot.pause()
        field = app.screen.query_one("#session-max_turns", Input)
        field.value = "lots"
        field.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BudgetScreen)
        assert "model turns: 'lots' is not a whole number" in screen_text(app)
        await pilot.press("escape")
        assert isinstance(app.screen, DetailScreen)
        assert not [call for call in source.calls if call[0] == "budget"]


async def test_a_finished_run_has_no_budget_key() -> None:
    from mala_tui.core.run_view import RunState

    app = make_app(RunState().apply_all(events()))
    async with app.run_test(size=(140, 44)) as pilot:
        await open_session(pilot, "a", "b")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        assert " b Budget" not in screen_text(app)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_turns": "0"}, "model turns: '0' must be above 0"),
        ({"max_cost_usd": "-1"}, "cost, US dollars (estimate): '-1' must be above 0"),
        ({"max_minutes": "an hour"}, "minutes: 'an hour' is not a number"),
    ],
)
def test_parse_limits_names_the_bad_field(values: dict[str, str], message: str) -> None:
    with pytest.raises(BudgetLimitError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_limits(values, 0.9)


def test_blank_fields_mean_no_limit() -> None:
    assert parse_limits({"max_turns": " 12 "}, 0.8) == BudgetLimits(None, 12, None, 0.8)
