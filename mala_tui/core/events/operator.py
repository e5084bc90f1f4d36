"""What the operator does to a session: messages to its agent, and taking it over by
hand in the interactive Claude Code, then handing it back."""

from __future__ import annotations

from typing import Literal

from mala_tui.core.events.base import EventBase
from mala_tui.core.operator_messages import Delivery


class MessageQueued(EventBase):
    """The operator said something to the agent; it goes at the session's next clean point."""

    type: Literal["message_queued"] = "message_queued"
    number: int
    text: str


class MessageDelivered(EventBase):
    type: Literal["message_delivered"] = "message_delivered"
    numbers: tuple[int, ...]
    how: Delivery


class TakenOver(EventBase):
    """A person took the session over in the interactive Claude Code: its turn was stopped
    and its process ended, so that only the person's CLI writes its transcript."""

    type: Literal["taken_over"] = "taken_over"


class HandedBack(EventBase):
    """The person is done with the session in the interactive Claude Code: its transcript
    was read again, and it goes on supervised or ends."""

    type: Literal["handed_back"] = "handed_back"
    prompts: int
    """Prompts the person gave it by hand."""
    tokens: int | None = None
    """Its window after the person's latest call (None: the transcript gave no usage)."""
    went_on: bool = False
    """It goes on supervised (else it ended)."""
