"""A session's subagents in the view: each window, its peak, and every call in the bill."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.background import BackgroundKind, BackgroundTask
from mala_tui.core.describe import summary
from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import CallUsage
from tests.support.usage_events import started, usage


def call(at: float, agent: str, prompt: int, output: int = 50) -> ev.SubagentCall:
    return ev.SubagentCall(
        at=at,
        session="s1",
        agent_id=agent,
        cache_read_input_tokens=prompt,
        output_tokens=output,
        model="claude-sonnet-4-5",
        tool_uses=1,
    )


def test_each_subagent_has_its_window_peak_and_spend_and_the_session_bills_them_all() -> None:
    state = RunState()
    state.apply(started("s1", "claude-sonnet-4-5"))
    state.apply(usage("s1", 1.0, CallUsage(input_tokens=10, output_tokens=5)))
    state.apply(ev.SubagentStarted(at=2.0, session="s1", agent_id="a", description="logs", depth=1))
    state.apply(call(3.0, "a", 150_000))
    state.apply(call(4.0, "a", 40_000))
    state.apply(ev.SubagentCompacted(at=4.5, session="s1", agent_id="a", post_tokens=9_000))
    session = state.sessions["s1"]
    (gauge,) = session.snapshot().subagents
    assert (gauge.tokens, gauge.peak, gauge.calls, gauge.compactions) == (9_000, 150_050, 2, 1)
    assert gauge.live and gauge.label == "logs"
    assert session.spend.calls == 3 and session.main_spend.calls == 1
    main, sub = session.main_spend, session.subagents["a"].spend
    assert main.cost_usd is not None and sub.cost_usd is not None
    assert session.spend.cost_usd == main.cost_usd + sub.cost_usd
    assert state.spend.calls == 3, "the run's bill too"


def test_a_subagent_ended_or_taken_with_the_process_is_no_longer_live() -> None:
    state = RunState()
    state.apply(ev.SessionAdded(at=1.0, session="s1", task="t", cwd="/w"))
    for agent in ("a", "b"):
        state.apply(ev.SubagentStarted(at=2.0, session="s1", agent_id=agent))
    done = ev.SubagentEnded(at=3.0, session="s1", agent_id="a", how=SubagentEnd.COMPLETED)
    state.apply(done)
    task = BackgroundTask(id="b", kind=BackgroundKind.SUBAGENT, description="")
    state.apply(ev.BackgroundStopped(at=4.0, session="s1", tasks=(task,), reason="stopped"))
    ends = {g.agent_id: g.how for g in state.sessions["s1"].snapshot().subagents}
    assert ends == {"a": SubagentEnd.COMPLETED, "b": SubagentEnd.KILLED}
    assert summary(done) == "a completed"


def test_claude_codes_own_figure_is_the_latest_of_each_agent_session_added_up() -> None:
    state = RunState()
    state.apply(started("s1", "claude-sonnet-4-5"))
    for at, session_id, cost in ((1.0, "x", 0.10), (2.0, "x", 0.25), (3.0, "y", 0.05)):
        state.apply(ev.CliCostReported(at=at, session="s1", session_id=session_id, cost_usd=cost))
    assert state.sessions["s1"].cli_cost_usd == 0.30
    assert state.cli_cost_usd == 0.30


def test_tokens_only_claude_codes_totals_hold_are_billed_and_said_apart() -> None:
    state = RunState()
    state.apply(started("s1", "claude-sonnet-4-5"))
    state.apply(usage("s1", 1.0, CallUsage(input_tokens=10, output_tokens=5)))
    state.apply(call(2.0, "a", 1_000))
    session = state.sessions["s1"]
    assert session.unseen_spend.cost_usd == 0.0  # Claude Code has said nothing yet
    totals = ev.CliCostReported(
        at=3.0,
        session="s1",
        session_id="x",
        cost_usd=0.1,
        input_tokens=10,
        cache_creation_input_tokens=0,
        cache_read_input_tokens=1_000 + 186_000,  # and a compaction no call shows
        output_tokens=5 + 50 + 3_000,
    )
    state.apply(totals)
    unseen = session.unseen_spend
    assert (unseen.calls, unseen.cache_read_tokens, unseen.output_tokens) == (0, 186_000, 3_000)
    assert unseen.cost_usd is not None and unseen.cost_usd > 0
    assert session.spend.cache_read_tokens == 187_000
    assert session.spend.calls == 2, "a total is no call"
