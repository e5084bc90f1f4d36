"""A session taken over by hand in the interactive Claude Code, then handed back."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import Disconnect, EndSession, EndStatus, Interrupt, SendPrompt
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import (
    Command,
    MessageForAgent,
    OperatorCommand,
    SessionHandedBack,
)
from mala_tui.core.phases import IllegalTransition, Phase
from mala_tui.core.prompts import PromptKind
from mala_tui.core.transcript import Message
from mala_tui.core.usage import CallUsage
from tests.core.test_restart_paths import ended, worked, wound_down
from tests.support.factories import call, result, say

BY_HAND = CallUsage(input_tokens=1_000, cache_read_input_tokens=40_000, output_tokens=500)


def taken_over() -> ContextManager:
    m = worked()
    outcome = m.observe(OperatorCommand(3.0, Command.TAKE_OVER))
    # The turn stops as a pause stops it, then the process goes.
    assert [type(a) for a in outcome.actions] == [Interrupt, Disconnect]
    moved, taken = outcome.events
    assert isinstance(moved, ev.PhaseChanged) and moved.after is Phase.PAUSED
    assert isinstance(taken, ev.TakenOver)
    assert m.observe(ended(reason="aborted_streaming", error=True)).actions == ()
    return m


def by_hand(m: ContextManager) -> tuple[Message, ...]:
    """What the person did in the interactive CLI: a prompt, a tool, an answer."""
    return (
        *m.transcript.messages,
        Message.harness_prompt("Also run the linter."),
        call("h1", "Bash", command="ruff check"),
        result("h1", "All checks passed!"),
        say("The linter is happy."),
    )


def test_while_open_by_hand_nothing_is_sent_and_the_hand_back_goes_on() -> None:
    m = taken_over()
    # A message waits for the hand-back; nothing that would send a prompt is taken.
    assert m.observe(MessageForAgent(3.1, "Then update the changelog.")).actions == ()
    for command in (Command.RESUME, Command.MASK_NOW, Command.RESTART_NOW, Command.CANCEL):
        with pytest.raises(IllegalTransition, match="is open by hand in Claude Code"):
            m.observe(OperatorCommand(3.2, command))
    history = by_hand(m)
    outcome = m.observe(SessionHandedBack(4.0, history, BY_HAND, go_on=True, prompts=1))
    usage, back, moved, delivered = outcome.events
    assert isinstance(usage, ev.UsageRecorded) and usage.tokens == BY_HAND.context_tokens
    assert usage.notes == ("by hand",)
    assert isinstance(back, ev.HandedBack)
    assert (back.prompts, back.tokens, back.went_on) == (1, BY_HAND.context_tokens, True)
    assert isinstance(moved, ev.PhaseChanged) and moved.after is Phase.RUNNING
    assert isinstance(delivered, ev.MessageDelivered)
    (prompt,) = outcome.actions
    assert isinstance(prompt, SendPrompt) and prompt.kind is PromptKind.OPERATOR_MESSAGE
    assert "Then update the changelog." in prompt.text
    # The manager decides from the conversation the person left, and its window.
    assert m.transcript.messages[: len(history)] == history
    assert m.usage.tokens == BY_HAND.context_tokens
    assert m.phase is Phase.RUNNING


def test_a_session_ended_by_hand_stops() -> None:
    m = taken_over()
    outcome = m.observe(SessionHandedBack(4.0, by_hand(m), None, go_on=False, prompts=1))
    (end,) = outcome.actions
    assert isinstance(end, EndSession) and end.status is EndStatus.STOPPED
    assert end.reason == "ended by hand"
    back = next(e for e in outcome.events if isinstance(e, ev.HandedBack))
    assert (back.prompts, back.tokens, back.went_on) == (1, None, False)


def test_taken_over_only_while_running_or_paused_and_handed_back_only_then() -> None:
    m = wound_down()
    with pytest.raises(
        IllegalTransition,
        match="checkpointing: it can be taken over by hand while it is running or paused",
    ):
        m.observe(OperatorCommand(3.0, Command.TAKE_OVER))
    fresh = worked()
    with pytest.raises(IllegalTransition, match="was not taken over by hand"):
        fresh.observe(SessionHandedBack(4.0, (), None, go_on=True))
    twice = taken_over()
    with pytest.raises(IllegalTransition, match="open by hand in Claude Code"):
        twice.observe(OperatorCommand(3.5, Command.TAKE_OVER))
