"""What the operator says to an agent: a queue per session, emptied at the next clean point.

A message is never pushed into a turn mid-step: the turn is stopped after its
running tools (nothing thrown away), and the message goes as the next prompt. A
message that comes while the session is busy elsewhere (masking, winding down,
waiting for an approval, paused) waits here, and goes with the next prompt that
sends the agent back to work: the resume after a pause, the fresh session's
continuation prompt after a restart. Numbers count the session's messages from 1,
across restarts, so the journal can say which went when.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

#: Longer than any instruction a person types; a paste this long belongs in a file.
MAX_MESSAGE_CHARS: Final = 20_000


class MessageError(ValueError):
    """A message that cannot be sent; the text says why."""


class Delivery(StrEnum):
    """How a waiting message reached the agent, as the journal records it."""

    CLEAN_POINT = "clean_point"
    """The turn was stopped after its running tools; the message was the next prompt."""
    IDLE = "idle"
    """The agent was idle (paused, or its turn had just ended): sent at once."""
    RESUME = "resume"
    """With the resume after a pause or a stop at a tool result."""
    RESTART = "restart"
    """With the fresh session's continuation prompt."""
    FORK = "fork"
    """As the first prompt of a session forked from another's conversation: the new
    instruction it was forked with."""


@dataclass(frozen=True, slots=True)
class QueuedMessage:
    number: int
    text: str
    at: float


def checked_text(text: str) -> str:
    """The message as it will be sent: trimmed, not empty, not huge.

    Raises:
        MessageError: nothing to send, or more than MAX_MESSAGE_CHARS characters.
    """
    cleaned = text.strip()
    if not cleaned:
        raise MessageError("the message is empty")
    if len(cleaned) > MAX_MESSAGE_CHARS:
        raise MessageError(
            f"the message is {len(cleaned):,} characters; at most {MAX_MESSAGE_CHARS:,} are sent"
        )
    return cleaned


class MessageQueue:
    """One session's messages that have not reached its agent yet, in the order given."""

    def __init__(self) -> None:
        self._waiting: list[QueuedMessage] = []
        self._count = 0

    def add(self, at: float, text: str) -> QueuedMessage:
        """Raises MessageError (see `checked_text`), queueing nothing."""
        message = QueuedMessage(self._count + 1, checked_text(text), at)
        self._count += 1
        self._waiting.append(message)
        return message

    @property
    def waiting(self) -> tuple[QueuedMessage, ...]:
        return tuple(self._waiting)

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def restore(self, waiting: Sequence[QueuedMessage], count: int) -> None:
        """A resumed run's queue: what had not reached the agent, its numbers going on."""
        self._waiting = list(waiting)
        self._count = max([count, *(message.number for message in waiting)])

    def take(self) -> tuple[QueuedMessage, ...]:
        """Every waiting message, oldest first; the queue is empty afterwards."""
        taken, self._waiting = tuple(self._waiting), []
        return taken


def messages_block(messages: Sequence[QueuedMessage]) -> str:
    """The messages as the prompt's `{messages}`: one as it is, several numbered."""
    if len(messages) == 1:
        return messages[0].text
    return "\n\n".join(
        f"Message {index}:\n{message.text}" for index, message in enumerate(messages, start=1)
    )
