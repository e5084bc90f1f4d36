"""A session on a cluster's host: the card says where it runs, and that its host was lost."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.run_view import RunState
from mala_tui.ui.widgets.session_card import counters_text, state_text


def test_the_card_names_the_host_and_says_when_one_was_lost() -> None:
    state = RunState()
    state.apply(ev.SessionAdded(at=1.0, session="a", task="t", cwd="/w"))
    state.apply(ev.HostPlaced(at=1.0, session="a", node="n1", address="10.0.0.7"))
    card = state.sessions["a"].snapshot()
    assert counters_text(card).endswith("\u00b7 on 10.0.0.7")
    assert "host lost" not in state_text(card)
    lost = ev.HostLost(
        at=2.0, session="a", node="n1", address="10.0.0.7", reason="its node died", restart=True
    )
    state.apply(lost)
    card = state.sessions["a"].snapshot()
    assert state_text(card).endswith("\u00b7 host lost: its node died")
    assert "on 10.0.0.7" not in counters_text(card), "no host while it has none"
    state.apply(ev.HostPlaced(at=3.0, session="a", node="n2", address="10.0.0.8", attempt=2))
    state.apply(lost.model_copy(update={"at": 4.0, "node": "n2", "address": "10.0.0.8"}))
    assert state_text(state.sessions["a"].snapshot()).endswith("\u00b7 host lost 2x: its node died")
