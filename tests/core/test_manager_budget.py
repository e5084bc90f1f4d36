"""The manager on a budget: near a limit, wind down and stop at the checkpoint; at it, stop."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndSession, EndStatus, SendPrompt, StartFreshSession
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.observations import BudgetReached, Command, OperatorCommand
from mala_tui.core.phases import ManageMode, Phase
from mala_tui.core.prompts import PromptKind
from tests.core.phase_now import phase_now
from tests.core.test_manager import (
    CHECKPOINT_ANSWER,
    INTERRUPTED,
    REACH,
    done,
    feed_reads,
    manager,
    usage,
)

NEAR = BudgetReached(3.0, over=False, reason="budget: turns 9 of 10 (90%)")
OVER = BudgetReached(3.0, over=True, reason="budget: turns 10 of 10 (100%)")


def test_near_winds_down_checkpoints_and_stops_instead_of_restarting() -> None:
    m = manager()
    feed_reads(m, count=3, size=400)
    m.observe(usage(20_000))
    wind = m.observe(NEAR)
    (send,) = wind.actions
    assert isinstance(send, SendPrompt) and send.kind is PromptKind.WIND_DOWN
    assert [e.trigger for e in wind.events if isinstance(e, ev.WindDownSent)] == ["budget"]
    assert m.phase is Phase.WINDING_DOWN
    assert m.observe(NEAR).actions == ()  # said again at the next call: nothing new to do
    m.observe(INTERRUPTED)
    asked = m.observe(done("Saved notes."))
    assert isinstance(asked.actions[0], SendPrompt)
    assert asked.actions[0].kind is PromptKind.CHECKPOINT_REQUEST
    ended = m.observe(done(CHECKPOINT_ANSWER))
    (end,) = ended.actions
    assert isinstance(end, EndSession) and end.status is EndStatus.STOPPED
    assert not any(isinstance(a, StartFreshSession) for a in ended.actions)
    saved = [e for e in ended.events if isinstance(e, ev.CheckpointSaved)]
    assert saved and saved[0].origin == "tagged"  # the agent's own checkpoint, kept
    (session_end,) = [e for e in ended.events if isinstance(e, ev.SessionEnded)]
    assert session_end.reason == "budget: turns 9 of 10 (90%); checkpoint kept"
    assert phase_now(m) is Phase.STOPPED and m.checkpoint is not None


def test_over_while_running_stops_now_with_a_checkpoint_from_the_transcript() -> None:
    m = manager()
    feed_reads(m, count=3, size=400)
    m.observe(usage(20_000))
    ended = m.observe(OVER)
    assert [type(a) for a in ended.actions] == [EndSession]  # ending closes the agent
    assert m.phase is Phase.STOPPED
    assert m.checkpoint is not None and m.checkpoint.origin is CheckpointOrigin.HARNESS
    (session_end,) = [e for e in ended.events if isinstance(e, ev.SessionEnded)]
    assert session_end.reason == "budget: turns 10 of 10 (100%); checkpoint kept"


def test_over_while_the_checkpoint_is_on_its_way_waits_for_it() -> None:
    m = REACH[Phase.WINDING_DOWN]()  # wound down by the hard threshold
    assert m.observe(OVER).actions == ()
    m.observe(done("Saved notes."))
    ended = m.observe(done(CHECKPOINT_ANSWER))
    assert m.phase is Phase.STOPPED  # not restarted: the budget is spent
    assert m.checkpoint is not None and m.checkpoint.origin is CheckpointOrigin.TAGGED
    assert any(isinstance(a, EndSession) for a in ended.actions)


@pytest.mark.parametrize(
    "phase",
    [Phase.PAUSED, Phase.AWAITING_APPROVAL, Phase.RESTARTING, Phase.DONE, Phase.STOPPED],
)
def test_sessions_not_spending_ignore_the_budget(phase: Phase) -> None:
    m = REACH[phase]()
    before = (m.phase, m.checkpoint)
    assert m.observe(OVER).actions == ()
    assert (m.phase, m.checkpoint) == before


def test_restarted_by_hand_the_session_is_judged_anew() -> None:
    m = manager()
    feed_reads(m, count=3, size=400)
    m.observe(usage(20_000))
    m.observe(OVER)
    assert m.phase is Phase.STOPPED
    restart = m.observe(OperatorCommand(4.0, Command.RESTART_NOW))
    assert any(isinstance(a, StartFreshSession) for a in restart.actions)
    assert m._state.budget_stop is None


def test_without_checkpoints_over_stops_and_near_is_left_to_the_limit() -> None:
    m = manager(manage=ManageMode.MASK)  # as a profile or the config's `context.manage` sets it
    m.observe(usage(20_000))
    assert m.observe(NEAR).actions == ()
    ended = m.observe(OVER)
    (end,) = ended.actions
    assert isinstance(end, EndSession) and end.status is EndStatus.STOPPED
    assert m.phase is Phase.STOPPED
