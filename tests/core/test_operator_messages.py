"""What the operator says to an agent: queued, delivered at a clean point, never lost.

And the cancel command: a checkpoint first, then the session stops.
"""

from __future__ import annotations

import json
import pickle

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import ApplyMask, SendPrompt, StopTurn
from mala_tui.core.describe import summary
from mala_tui.core.manager import Outcome
from mala_tui.core.observations import (
    Command,
    MaskConfirmed,
    MessageForAgent,
    MessageObserved,
    OperatorCommand,
    ToolResultSeen,
)
from mala_tui.core.operator_messages import (
    MAX_MESSAGE_CHARS,
    Delivery,
    MessageError,
    MessageQueue,
    messages_block,
)
from mala_tui.core.phases import IllegalTransition, Phase
from mala_tui.core.prompts import PromptKind
from mala_tui.core.run_view import RunState
from tests.core.phase_now import phase_now
from tests.core.test_restart_paths import CHECKPOINT, ended, fresh_prompt, usage, worked
from tests.support.factories import call, result

# -- the queue --------------------------------------------------------------------------


def test_the_queue_numbers_messages_and_hands_them_out_once() -> None:
    queue = MessageQueue()
    assert not queue
    first = queue.add(1.0, "  Use the new API.  ")
    second = queue.add(2.0, "And run the tests.")
    assert (first.number, first.text) == (1, "Use the new API.")
    assert second.number == 2
    assert queue.take() == (first, second)
    assert not queue and queue.take() == ()
    assert queue.add(3.0, "Thanks.").number == 3  # numbers go on


@pytest.mark.parametrize("text", ["", "   \n\t", "x" * (MAX_MESSAGE_CHARS + 1)])
def test_an_empty_or_huge_message_is_refused_and_nothing_is_queued(text: str) -> None:
    queue = MessageQueue()
    with pytest.raises(MessageError):
        queue.add(1.0, text)
    assert not queue
    assert queue.add(2.0, "ok").number == 1


def test_one_message_is_sent_as_it_is_several_numbered() -> None:
    queue = MessageQueue()
    queue.add(1.0, "Only this.")
    assert messages_block(queue.take()) == "Only this."
    queue.add(2.0, "First.")
    queue.add(3.0, "Second.")
    assert messages_block(queue.take()) == "Message 1:\nFirst.\n\nMessage 2:\nSecond."


# -- delivery ---------------------------------------------------------------------------


def events_of(outcome: Outcome, kind: type[ev.Event]) -> list[ev.Event]:
    return [event for event in outcome.events if isinstance(event, kind)]


def prompt_of(outcome: Outcome) -> SendPrompt:
    prompts = [a for a in outcome.actions if isinstance(a, SendPrompt)]
    assert len(prompts) == 1, outcome
    return prompts[0]


def test_a_message_stops_the_turn_after_its_tools_and_goes_next() -> None:
    m = worked()
    said = m.observe(MessageForAgent(3.0, "Use the new parser API, not the old one."))
    assert [type(a) for a in said.actions] == [StopTurn]
    (queued,) = events_of(said, ev.MessageQueued)
    assert isinstance(queued, ev.MessageQueued) and queued.number == 1
    # The post-tool hook asks: the stop is already on its way, nothing more is decided.
    m.observe(MessageObserved(3.1, call("t200", "Read", file_path="/ws/src/api.py")))
    assert m.observe(ToolResultSeen(3.2, "t200", "Read", 100)).actions == ()
    m.observe(MessageObserved(3.3, result("t200", "def parse(): ...")))
    clean = m.observe(ended(reason="hook_stopped"))
    sent = prompt_of(clean)
    assert sent.kind is PromptKind.OPERATOR_MESSAGE
    assert "Use the new parser API, not the old one." in sent.text
    assert "person supervising you" in sent.text
    (delivered,) = events_of(clean, ev.MessageDelivered)
    assert isinstance(delivered, ev.MessageDelivered)
    assert delivered.numbers == (1,) and delivered.how is Delivery.CLEAN_POINT
    assert m.phase is Phase.RUNNING and m.streaming and m.stopping is None
    # Sent by mala-tui: never carried into a fresh session as the agent's work.
    assert m.transcript.messages[-1].from_harness
    assert not m.messages


def test_a_message_to_an_agent_that_finishes_first_keeps_the_session_going() -> None:
    m = worked()
    m.observe(MessageForAgent(3.0, "Also update the changelog."))
    answered = m.observe(ended("All done."))  # the stop never landed: no tool ran
    assert m.phase is Phase.RUNNING
    sent = prompt_of(answered)
    assert "Also update the changelog." in sent.text
    (delivered,) = events_of(answered, ev.MessageDelivered)
    assert isinstance(delivered, ev.MessageDelivered) and delivered.how is Delivery.IDLE
    finished = m.observe(ended("Changelog updated."))
    assert phase_now(m) is Phase.DONE, finished


def test_a_message_to_a_paused_session_is_what_it_goes_on_with() -> None:
    m = worked()
    m.observe(OperatorCommand(3.0, Command.PAUSE))
    m.observe(ended(reason="aborted_streaming", error=True))
    assert m.phase is Phase.PAUSED and not m.streaming
    outcome = m.observe(MessageForAgent(3.5, "Try the other branch."))
    assert phase_now(m) is Phase.RUNNING
    assert "Try the other branch." in prompt_of(outcome).text


def test_a_message_waits_for_a_mask_at_the_clean_point_and_goes_after_it() -> None:
    m = worked(mask_target_threshold=0.3)
    m.observe(MessageForAgent(3.0, "Check the README too."))
    m.observe(usage(60_000))  # soft, but the stop for the message is already asked for
    stopped = m.observe(ended(reason="hook_stopped"))
    (mask,) = [a for a in stopped.actions if isinstance(a, ApplyMask)]
    assert m.messages, "the mask's resume prompt does not carry the message"
    confirmed = m.observe(MaskConfirmed(3.5, mask.plan.ids))
    # Back at work on the masked transcript: stop again at the next clean point.
    assert any(isinstance(a, StopTurn) for a in confirmed.actions)
    clean = m.observe(ended(reason="hook_stopped"))
    assert "Check the README too." in prompt_of(clean).text
    assert not m.messages


def test_a_message_during_a_wind_down_goes_into_the_fresh_session() -> None:
    m = worked()
    m.observe(usage(85_000))  # hard: the wind-down goes next
    m.observe(MessageForAgent(3.0, "After the restart, start with the lexer."))
    m.observe(ended(reason="aborted_streaming", error=True))
    m.observe(ended("Saved notes."))
    restarted = m.observe(ended(CHECKPOINT))
    prompt = fresh_prompt(restarted)
    assert "CONTINUING FROM A PREVIOUS SESSION" in prompt
    assert prompt.rstrip().endswith("carry on with your task.")
    assert "After the restart, start with the lexer." in prompt
    assert "CONTEXT WINDOW NEARLY FULL" not in prompt
    (delivered,) = events_of(restarted, ev.MessageDelivered)
    assert isinstance(delivered, ev.MessageDelivered) and delivered.how is Delivery.RESTART


@pytest.mark.parametrize("text", ["Hello?", ""])
def test_a_message_to_an_ended_session_or_an_empty_one_changes_nothing(text: str) -> None:
    m = worked()
    if text:
        m.observe(OperatorCommand(3.0, Command.STOP))
    before = pickle.dumps(m)
    with pytest.raises(IllegalTransition):
        m.observe(MessageForAgent(4.0, text))
    assert pickle.dumps(m) == before


# -- cancel -----------------------------------------------------------------------------


def test_cancel_winds_down_writes_the_checkpoint_and_stops_without_restarting() -> None:
    m = worked()
    wound = m.observe(OperatorCommand(3.0, Command.CANCEL))
    assert m.phase is Phase.WINDING_DOWN
    (wind_down,) = events_of(wound, ev.WindDownSent)
    assert isinstance(wind_down, ev.WindDownSent) and wind_down.trigger == "operator"
    m.observe(ended(reason="aborted_streaming", error=True))
    m.observe(ended("Saved notes."))
    final = m.observe(ended(CHECKPOINT))
    assert phase_now(m) is Phase.STOPPED
    (saved,) = events_of(final, ev.CheckpointSaved)
    assert isinstance(saved, ev.CheckpointSaved) and "t001" in saved.text
    (end,) = events_of(final, ev.SessionEnded)
    assert isinstance(end, ev.SessionEnded)
    assert end.reason == "cancelled by the operator; checkpoint kept"
    assert not events_of(final, ev.Restarted)


def test_cancel_while_paused_asks_for_the_checkpoint_first() -> None:
    m = worked()
    m.observe(OperatorCommand(3.0, Command.PAUSE))
    m.observe(ended(reason="aborted_streaming", error=True))
    asked = m.observe(OperatorCommand(3.5, Command.CANCEL))
    assert m.phase is Phase.CHECKPOINTING
    assert prompt_of(asked).kind is PromptKind.CHECKPOINT_REQUEST
    m.observe(ended(CHECKPOINT))
    assert phase_now(m) is Phase.STOPPED and m.checkpoint is not None


def test_cancel_while_an_approval_waits_stops_with_that_checkpoint() -> None:
    m = worked(require_approval=True)
    m.observe(usage(85_000))
    m.observe(ended(reason="aborted_streaming", error=True))
    m.observe(ended("Saved."))
    m.observe(ended(CHECKPOINT))
    assert m.phase is Phase.AWAITING_APPROVAL
    outcome = m.observe(OperatorCommand(4.0, Command.CANCEL))
    assert phase_now(m) is Phase.STOPPED
    (end,) = events_of(outcome, ev.SessionEnded)
    assert isinstance(end, ev.SessionEnded) and end.reason.endswith("checkpoint kept")


# -- the view and the log ---------------------------------------------------------------


def test_the_view_counts_waiting_messages_and_the_log_says_what_happened() -> None:
    m = worked()
    state = RunState()
    events: list[ev.Event] = []
    for outcome in (
        m.observe(MessageForAgent(3.0, "First.")),
        m.observe(MessageForAgent(3.1, "Second.")),
    ):
        events.extend(outcome.events)
    for event in events:
        state.apply(event)
    assert state.sessions["s"].snapshot().messages_waiting == 2
    delivered = m.observe(ended(reason="hook_stopped"))
    for event in delivered.events:
        state.apply(event)
    assert state.sessions["s"].snapshot().messages_waiting == 0
    lines = [summary(event) for event in (*events, *delivered.events)]
    assert "message #1 from the operator: First." in lines
    assert "message #1, #2 sent to the agent (clean point)" in lines


def test_the_events_read_back_from_the_journal() -> None:
    for event in (
        ev.MessageQueued(at=1.0, session="s", number=1, text="Hi"),
        ev.MessageDelivered(at=2.0, session="s", numbers=(1,), how=Delivery.RESTART),
    ):
        assert ev.parse_event(json.loads(event.model_dump_json())) == event
