"""A person's answer awaited: restart approvals and their policy, permission requests
for a tool, and the cache cooling while a question waits."""

from __future__ import annotations

from typing import Literal

from mala_tui.core.events.base import EventBase
from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer


class ApprovalPolicySet(EventBase):
    """Requiring approval before restarts was switched on or off for the session."""

    type: Literal["approval_policy"] = "approval_policy"
    required: bool


class ApprovalRequested(EventBase):
    type: Literal["approval_requested"] = "approval_requested"
    checkpoint_number: int
    reason: str


class ApprovalDecided(EventBase):
    type: Literal["approval_decided"] = "approval_decided"
    decision: Decision
    decided_by: AnsweredBy
    """The operator, the approval's timeout, or the policy (`--approve deny`)."""


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


class CacheCooling(EventBase):
    """A question (an approval, a permission request) has kept its session waiting past
    half the prompt cache's lifetime: the cache goes cold unless it is answered."""

    type: Literal["cache_cooling"] = "cache_cooling"
    waiting_for: str
    """What the session waits for, e.g. "permission to use Bash (request #2)"."""
    cold_in: float
    """Seconds until the cache goes cold (its lifetime from the last request)."""
    ttl: float
