"""The supervisor holds the run to its budgets, and shows what fills each window."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mala_tui.config import BudgetSettings, ContextSettings, IdleSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.budget import BudgetLimits
from mala_tui.core.observations import SessionIdentified, UsageObserved
from mala_tui.core.operator_actions import SetBudget
from mala_tui.core.usage import CallUsage
from mala_tui.runtime.backends.base import StreamItem
from mala_tui.runtime.backends.scripted import HANG, ScriptedClient
from tests.support.backends import PerSession
from tests.support.polling import eventually
from tests.support.supervisors import build_supervisor


def calls(session_id: str, first: int, count: int) -> ScriptedClient:
    """A session making `count` API calls (each a bigger prompt), then hanging."""
    items: list[StreamItem] = [SessionIdentified(0, session_id)]
    items += [
        UsageObserved(0, CallUsage(input_tokens=first + n, cache_read_input_tokens=1_000))
        for n in range(count)
    ]
    return ScriptedClient([[*items, HANG]])


def budget_settings(budget: BudgetSettings) -> Settings:
    return Settings(
        context=ContextSettings(context_limit=100_000),
        idle=IdleSettings(idle_timeout_seconds=30),
        budget=budget,
    )


async def test_the_run_budget_stops_every_session_with_a_checkpoint(tmp_path: Path) -> None:
    backend = PerSession({"a": [calls("sa", 10, 3)], "b": [calls("sb", 500, 3)]})
    sup = build_supervisor(
        backend,
        ["a", "b"],
        cwd=tmp_path,
        journal=tmp_path,
        settings=budget_settings(BudgetSettings(run_max_turns=4)),
    )
    result = await asyncio.wait_for(sup.run(), 10)
    assert result.statuses == {"a": EndStatus.STOPPED, "b": EndStatus.STOPPED}
    for name in ("a", "b"):
        state = sup.state.sessions[name]
        assert state.checkpoints and state.checkpoints[0].origin == "harness"
        assert state.end_reason.startswith("run budget: turns ")
        assert state.end_reason.endswith("; checkpoint kept")


async def test_a_raised_limit_is_judged_from_the_next_call(tmp_path: Path) -> None:
    backend = PerSession({"a": [calls("sa", 10, 3)]})
    sup = build_supervisor(
        backend,
        ["a"],
        cwd=tmp_path,
        journal=tmp_path,
        settings=budget_settings(BudgetSettings(max_turns=2)),
    )
    assert sup.budget_limits("a") == (BudgetLimits(max_turns=2), BudgetLimits())
    sup.act(SetBudget(session="a", limits=BudgetLimits(max_turns=50)))
    run = asyncio.create_task(sup.run())
    await eventually(
        lambda: "a" in sup.state.sessions and sup.state.sessions["a"].spend.calls == 3,
        what="the session's three calls",
    )
    assert sup.state.sessions["a"].status is None  # 3 of 50: still running
    check = sup.budget_check("a")
    assert [r.describe() for r in check.readings] == ["turns 3 of 50 (6%)"]
    contents = sup.window_contents("a")
    assert contents is not None and contents.root == str(tmp_path)
    assert sup.window_contents("nobody") is None
    sup.stop_all()
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.STOPPED}
    ended = [e for e in sup.state.sessions["a"].log if isinstance(e, ev.SessionEnded)]
    assert ended[0].reason == "stopped by the operator"
