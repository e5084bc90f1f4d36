"""The decision for a subagent's tool result near its window's limits, and its record."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.describe import summary
from mala_tui.core.run_view import RunState
from mala_tui.core.subagent_window import SubagentAct, SubagentLimits, judge

LIMITS = SubagentLimits(window=200_000, soft_threshold=0.85, hard_threshold=0.95)


def test_a_result_is_judged_with_the_window_it_lands_in() -> None:
    # 150,000 + 40,000/4 = 160,000: below 170,000, nothing to say.
    assert judge(LIMITS, 150_000, 40_000, wound_down=False).act is SubagentAct.CARRY_ON
    # 150,000 + 20,000 = 170,000: the soft threshold, told once to return its findings.
    verdict = judge(LIMITS, 150_000, 80_000, wound_down=False)
    assert (verdict.act, verdict.estimate) == (SubagentAct.WIND_DOWN, 170_000)
    assert judge(LIMITS, 150_000, 80_000, wound_down=True).act is SubagentAct.CARRY_ON
    # Past 190,000 it would overflow: withheld, told before or not.
    for wound in (False, True):
        withheld = judge(LIMITS, 150_000, 164_000, wound_down=wound)
        assert (withheld.act, withheld.result_tokens) == (SubagentAct.WITHHOLD, 41_000)
    # A single result too big for the window is withheld even with nothing known before it.
    assert judge(LIMITS, 0, 800_000, wound_down=False).act is SubagentAct.WITHHOLD


def test_wind_downs_and_withheld_results_are_counted_on_the_subagents_gauge() -> None:
    wound = ev.SubagentWoundDown(
        at=2.0,
        session="s1",
        agent_id="a",
        tool="Read",
        tokens=150_000,
        estimate=170_000,
        window=200_000,
    )
    kept = ev.SubagentResultWithheld(
        at=3.0,
        session="s1",
        agent_id="a",
        tool="Bash",
        tokens=172_000,
        result_tokens=41_000,
        window=200_000,
    )
    state = RunState()
    state.apply(ev.SubagentStarted(at=1.0, session="s1", agent_id="a"))
    for event in (wound, kept, kept):
        state.apply(ev.EVENT_ADAPTER.validate_json(event.model_dump_json()))
    (gauge,) = state.sessions["s1"].snapshot().subagents
    assert (gauge.wound_down, gauge.withheld) == (1, 2)
    assert (
        summary(wound)
        == "a: told to return its findings now with its Read result, ~170k of 200k in its window"
    )
    assert summary(kept) == (
        "a: Bash result of ~41k withheld, it would have overflowed its window (172k of 200k already)"
    )
