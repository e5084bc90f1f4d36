"""The events of the operator's console and of resumes: messages, permission requests,
sessions added to a live run, the agent's session ids, and a run picked up again.

Part of the one event union in core.events (import them from there).
"""

from __future__ import annotations

from typing import Literal

from mala_tui.core.event_base import EventBase
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer


class MessageQueued(EventBase):
    """The operator said something to the agent; it goes at the session's next clean point."""

    type: Literal["message_queued"] = "message_queued"
    number: int
    text: str


class SessionAdded(EventBase):
    """A session added to a run while it runs (its task, as the operator gave it)."""

    type: Literal["session_added"] = "session_added"
    task: str
    cwd: str
    profile: str = ""
    """The run's named profile it runs with ("" for the run's own settings)."""
    forked_from: str = ""
    """The session whose conversation it was forked from ("" for a new task)."""
    fork_of: str = ""
    """The agent session it forked (that session's id then, not this one's)."""


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


class MessageDelivered(EventBase):
    type: Literal["message_delivered"] = "message_delivered"
    numbers: tuple[int, ...]
    how: Delivery


class PermissionRequested(EventBase):
    """The agent asked to use a tool outside its allowed tools."""

    type: Literal["permission_requested"] = "permission_requested"
    request_id: str
    tool: str
    summary: str
    """The input in one line (the whole of it is in `input_text`)."""
    input_text: str = ""
    input_cut: bool = False
    """The input was too long to keep whole (core.permissions.INPUT_CHARS): allow is not
    offered, since nobody could see all of what they would allow."""
    waiting: bool = True
    """It waits for the operator (False: a policy or a session rule answers it at once)."""


class PermissionDecided(EventBase):
    type: Literal["permission_decided"] = "permission_decided"
    request_id: str
    tool: str
    answer: PermissionAnswer
    decided_by: AnsweredBy
    reason: str = ""
    """Why; for a deny, what the agent is told."""


class AgentSessionNamed(EventBase):
    """The agent named its session (Claude Code's session id): what a resume picks up."""

    type: Literal["agent_session"] = "agent_session"
    session_id: str


class RunResumed(EventBase):
    """`mala-tui resume` picked the run up again, in the same journal."""

    type: Literal["run_resumed"] = "run_resumed"
    run_id: str
    gap_seconds: float
    """From the journal's last event before the resume to the resume."""
    resumed: dict[str, str]
    """Each session that continues, and how: session_id, checkpoint or task."""
    pid: int | None = None
    """The mala-tui process that writes the journal from here on."""
