"""A session whose turn ended while its subagents work: the card says what it waits for."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.background import BackgroundKind, BackgroundTask
from mala_tui.core.run_view import RunState
from mala_tui.ui.widgets.session_card import state_text

SUBAGENTS = (
    BackgroundTask(id="a", kind=BackgroundKind.SUBAGENT, description="logs 1-4"),
    BackgroundTask(id="b", kind=BackgroundKind.SUBAGENT, description="logs 5-8"),
)


def test_the_card_says_the_session_waits_for_its_subagents_until_it_ends() -> None:
    state = RunState()
    state.apply(ev.SessionAdded(at=1.0, session="a", task="t", cwd="/w"))
    assert "waiting for" not in state_text(state.sessions["a"].snapshot())
    state.apply(ev.BackgroundWaiting(at=2.0, session="a", tasks=SUBAGENTS))
    assert state_text(state.sessions["a"].snapshot()).endswith("\u00b7 waiting for 2 subagents")
    state.apply(ev.SessionEnded(at=3.0, session="a", status=EndStatus.DONE, reason="done"))
    assert "waiting for" not in state_text(state.sessions["a"].snapshot())
