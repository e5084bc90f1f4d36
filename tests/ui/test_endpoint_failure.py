"""A session the model endpoint failed: its card says what Claude Code said."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.run_view import RunState
from mala_tui.ui.widgets.session_card import state_text
from tests.core.test_api_errors import api_error, manager


def test_the_cards_state_line_says_what_claude_code_said() -> None:
    m = manager()
    outcome = m.observe(
        api_error(1.0, "Not logged in · Please run /login", None, "authentication_failed")
    )
    started = ev.SessionStarted(
        at=0.0,
        session="s1",
        task="Fix the bug.",
        cwd="/w",
        window=200_000,
        soft_threshold=0.3,
        hard_threshold=0.8,
        max_restarts=3,
        require_approval=False,
    )
    state = RunState().apply_all([started, *outcome.events]).sessions["s1"].snapshot()
    assert state_text(state) == (
        "\u25cf failed \u00b7 authentication failed: Not logged in · Please run /login"
    )
