"""When a run's sessions are told they are near or over a budget: at each call while they are."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.budget import BudgetLimits
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import CallUsage
from mala_tui.runtime.run.budget_watch import BudgetNotice, BudgetWatch
from tests.support.usage_events import started, usage


def run_of(*names: str) -> RunState:
    run = RunState()
    run.apply(ev.RunStarted(at=0.0, run_id="r", sessions=names, mode=ev.RunMode.RUN))
    for name in names:
        run.apply(started(name, "claude-sonnet-4-5"))
    return run


def call(watch: BudgetWatch, run: RunState, name: str, at: float, n: int) -> list[BudgetNotice]:
    event = usage(name, at, CallUsage(n, 0, 0, 100))  # a new prompt each time: a new call
    run.apply(event)
    return watch.observe(event, run)


def test_near_then_over_said_at_each_call() -> None:
    watch = BudgetWatch(session_limits=BudgetLimits(max_turns=10))
    run = run_of("a")
    said = [notice for n in range(1, 12) for notice in call(watch, run, "a", float(n), n)]
    assert said == [
        BudgetNotice("a", False, "budget: turns 9 of 10 (90%)"),
        BudgetNotice("a", True, "budget: turns 10 of 10 (100%)"),
        BudgetNotice("a", True, "budget: turns 11 of 10 (110%)"),
    ]
    run.apply(ev.SessionEnded(at=12.0, session="a", status=EndStatus.STOPPED))
    assert call(watch, run, "a", 13.0, 13) == []  # an ended session is not told


def test_minutes_count_from_the_sessions_start() -> None:
    watch = BudgetWatch(session_limits=BudgetLimits(max_minutes=10))
    run = run_of("a")
    assert call(watch, run, "a", 60.0, 1) == []
    (near,) = call(watch, run, "a", 9.5 * 60, 2)
    assert not near.over and "time 9.5 of 10 minutes" in near.reason


def test_cost_limit_on_an_unpriced_model_is_never_said() -> None:
    watch = BudgetWatch(session_limits=BudgetLimits(max_cost_usd=0.01))
    run = RunState()
    run.apply(ev.RunStarted(at=0.0, run_id="r", sessions=("a",), mode=ev.RunMode.RUN))
    run.apply(started("a", "someone-elses-model"))
    assert [call(watch, run, "a", float(n), n) for n in range(1, 50)] == [[]] * 49


def test_the_run_budget_tells_every_running_session() -> None:
    watch = BudgetWatch(run_limits=BudgetLimits(max_turns=4))
    run = run_of("a", "b", "c")
    run.apply(ev.SessionEnded(at=0.5, session="c", status=EndStatus.DONE))
    assert call(watch, run, "a", 1.0, 1) == []
    assert call(watch, run, "b", 2.0, 2) == []
    assert call(watch, run, "a", 3.0, 3) == []
    said = call(watch, run, "b", 4.0, 4)
    assert [(n.session, n.over) for n in said] == [("a", True), ("b", True)]
    assert said[0].reason == "run budget: turns 4 of 4 (100%)"


def test_a_sessions_own_limit_and_the_runs_the_worse_is_said() -> None:
    watch = BudgetWatch(
        session_limits=BudgetLimits(max_turns=2), run_limits=BudgetLimits(max_turns=10)
    )
    run = run_of("a", "b")
    call(watch, run, "a", 1.0, 1)
    (own,) = call(watch, run, "a", 2.0, 2)
    assert own == BudgetNotice("a", True, "budget: turns 2 of 2 (100%)")
    for n in range(3, 10):
        call(watch, run, "b", float(n), n)
    said = {n.session: n for n in call(watch, run, "b", 10.0, 10)}
    assert said["a"].reason == "run budget: turns 10 of 10 (100%)"
    assert said["b"].reason == "budget: turns 8 of 2 (400%)"


def test_raising_a_limit_lets_the_session_be_judged_again() -> None:
    watch = BudgetWatch(session_limits=BudgetLimits(max_turns=2))
    run = run_of("a")
    call(watch, run, "a", 1.0, 1)
    assert [n.over for n in call(watch, run, "a", 2.0, 2)] == [True]
    watch.set_limits("a", watch.limits_for("a").raised(max_turns=10))
    assert call(watch, run, "a", 3.0, 3) == []
    assert watch.limits_for("a").max_turns == 10
    assert watch.limits_for("b").max_turns == 2  # others keep the run's per-session limit


def test_no_limits_means_nothing_is_watched() -> None:
    watch = BudgetWatch()
    run = run_of("a")
    assert not watch.active
    assert call(watch, run, "a", 1.0, 1) == []
    assert watch.observe(ev.SessionEnded(at=1.0, session="a", status=EndStatus.DONE), run) == []


def test_a_subagents_calls_count_against_its_sessions_budget() -> None:
    watch = BudgetWatch(session_limits=BudgetLimits(max_turns=3))
    run = run_of("a")
    call(watch, run, "a", 1.0, 1)
    said = []
    for n in range(2, 4):
        event = ev.SubagentCall(
            at=float(n), session="a", agent_id="sub", input_tokens=n, output_tokens=10
        )
        run.apply(event)
        said += watch.observe(event, run)
    assert said[-1] == BudgetNotice("a", True, "budget: turns 3 of 3 (100%)")
