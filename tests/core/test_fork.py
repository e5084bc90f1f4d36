"""A session forked from another's conversation: where its manager starts."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import SendPrompt
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import SessionIdentified
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.phases import IllegalTransition
from mala_tui.core.prompts import PromptKind
from mala_tui.prompt_files import load_prompts
from tests.core.test_restart_paths import worked
from tests.support.factories import default_limits

INSTRUCTION = "Try the other parser instead: keep the old one as it is."


def forked(parent: ContextManager) -> ContextManager:
    fork = ContextManager(
        name="s-fork1", task=INSTRUCTION, limits=parent.limits, prompts=load_prompts()
    )
    assert parent.session_id is not None
    fork.fork_from(parent.session_id, parent.transcript.messages, 1.7)
    return fork


def test_a_fork_starts_in_the_parents_conversation_told_the_new_instruction() -> None:
    parent = worked()
    fork = forked(parent)
    outcome = fork.start(5.0)
    (prompt,) = outcome.actions
    assert isinstance(prompt, SendPrompt)
    assert prompt.kind is PromptKind.OPERATOR_MESSAGE
    assert INSTRUCTION in prompt.text
    assert prompt.text.startswith("A message from the person supervising you")
    # Resumed by the parent's id (the agent forks it); the window holds what it held.
    assert fork.session_id == "sess-1"
    history = parent.transcript.messages
    assert fork.transcript.messages[: len(history)] == history
    assert fork.transcript.messages[-1].text == prompt.text
    assert fork.density.ratio == pytest.approx(1.7)
    # The instruction is journaled as the person's message, delivered as the fork's start.
    queued, delivered = outcome.events
    assert isinstance(queued, ev.MessageQueued) and queued.text == INSTRUCTION
    assert isinstance(delivered, ev.MessageDelivered)
    assert delivered.numbers == (queued.number,) and delivered.how is Delivery.FORK
    # Its own id comes with its first turn; the parent is untouched.
    fork.observe(SessionIdentified(5.1, "sess-fork"))
    assert fork.session_id == "sess-fork" and parent.session_id == "sess-1"


def test_a_fork_is_decided_before_the_start() -> None:
    fresh = ContextManager(name="f", task="x", limits=default_limits(), prompts=load_prompts())
    fresh.start(0.0)
    with pytest.raises(IllegalTransition, match="already started"):
        fresh.fork_from("sess-1")


def test_an_empty_instruction_is_refused_at_the_start() -> None:
    fork = ContextManager(name="f", task="  ", limits=default_limits(), prompts=load_prompts())
    fork.fork_from("sess-1")
    with pytest.raises(IllegalTransition, match="f: the message is empty"):
        fork.start(0.0)
