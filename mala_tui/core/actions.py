"""What a ContextManager decides: Actions the runtime carries out, in the order given."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mala_tui.core.checkpoint import Checkpoint
from mala_tui.core.masking import MaskPlan
from mala_tui.core.prompts import PromptKind


@dataclass(frozen=True, slots=True)
class SendPrompt:
    """Send a prompt in the current session; interrupt the running turn first when asked."""

    kind: PromptKind
    text: str
    interrupt_first: bool = False


@dataclass(frozen=True, slots=True)
class Interrupt:
    """Stop the running turn (pause); nothing is sent after it."""


@dataclass(frozen=True, slots=True)
class StopTurn:
    """End the turn at this tool result, before the next model request (a clean point).

    The answer to a `ToolResultSeen`: the runtime tells the agent, from its
    post-tool hook, not to make the request the new results would go into.
    """

    reason: str


@dataclass(frozen=True, slots=True)
class ApplyMask:
    """Replace these results in the session's transcript and continue on it.

    With `interrupt_first`, the running turn is interrupted, the transcript
    rewritten, the session resumed, and `resume_prompt` sent to carry on.
    """

    plan: MaskPlan
    interrupt_first: bool
    resume_prompt: str | None
    fold: bool = False
    """Fold the masked steps into the digest too (core.fold): rarely, when the structure
    the masks left has grown enough to pay for rewriting the conversation from the task."""


@dataclass(frozen=True, slots=True)
class RequestApproval:
    checkpoint: Checkpoint
    checkpoint_number: int
    reason: str


@dataclass(frozen=True, slots=True)
class StartFreshSession:
    """End this session and start a new one (no resume) whose first prompt is `prompt`."""

    prompt: str
    checkpoint: Checkpoint
    continuation_number: int


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Close the agent's process, bounded: past `timeout` it is killed."""

    timeout: float


class RetryMode(StrEnum):
    RESUME = "resume"
    FRESH = "fresh"


@dataclass(frozen=True, slots=True)
class RetryTurn:
    """After `delay` seconds, a new process: resume `session_id`, or start fresh; send `prompt`."""

    mode: RetryMode
    delay: float
    prompt: str
    session_id: str | None


class EndStatus(StrEnum):
    DONE = "done"
    STOPPED = "stopped"
    DENIED = "denied"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class EndSession:
    status: EndStatus
    reason: str


Action = (
    SendPrompt
    | Interrupt
    | StopTurn
    | ApplyMask
    | RequestApproval
    | StartFreshSession
    | Disconnect
    | RetryTurn
    | EndSession
)
