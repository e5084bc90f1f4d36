"""What the runtime tells a ContextManager: frozen facts, each with the time it happened.

The manager never asks; it is told. Each observation carries `at` (seconds, the
runtime's clock) so the manager needs no clock of its own and tests can run
hours of session in microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mala_tui.core.background import BackgroundTask
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import ManageMode
from mala_tui.core.transcript import Message
from mala_tui.core.usage import CallUsage


@dataclass(frozen=True, slots=True)
class UsageObserved:
    """One main-thread API call's usage (message_start, then again with message_delta's output)."""

    at: float
    call: CallUsage
    notes: tuple[str, ...] = ()
    starts_call: bool = False
    """This is a new API call's first report (message_start), not the final one of a call
    already seen: what tells the manager that the agent made another request."""


@dataclass(frozen=True, slots=True)
class MessageObserved:
    """A message of the main conversation as the SDK delivered it."""

    at: float
    message: Message


@dataclass(frozen=True, slots=True)
class SessionIdentified:
    """The CLI named its session (init message or result): what a resume needs."""

    at: float
    session_id: str


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn's ResultMessage."""

    at: float
    subtype: str
    is_error: bool
    terminal_reason: str | None = None
    result_text: str = ""
    summed_usage: CallUsage | None = None
    """The turn's usage summed over its API calls; None when the result had none."""
    context_window: int | None = None
    """model_usage[model]["contextWindow"] when the CLI reported it."""
    session_id: str | None = None
    api_error_status: int | None = None
    api_error_kind: str | None = None
    """What Claude Code made of a failed call (`authentication_failed`, `invalid_request`,
    `server_error`...), from the message it wrote in the agent's place."""
    api_calls: int | None = None
    """The API calls the turn made (its `num_turns`); None when not said. A turn of the
    CLI's own that made none opens while reports reach it at once: one more follows."""

    @property
    def prompt_too_long(self) -> bool:
        """The window is exhausted: the API refused the prompt, or the CLI refused to send
        it (`blocking_limit`, Claude Code's own local limit with compaction off)."""
        return self.terminal_reason in ("prompt_too_long", "blocking_limit") or (
            self.is_error and "prompt is too long" in self.result_text.lower()
        )

    @property
    def refused_by_api(self) -> bool:
        """The API itself refused the prompt (not Claude Code's own local limit): the
        model's window, whatever the session believed, is smaller than that prompt."""
        return self.terminal_reason == "prompt_too_long"


@dataclass(frozen=True, slots=True)
class ApiRetrying:
    """Claude Code is retrying a failed API call after a backoff (its `api_retry` message):
    the agent is alive, but its model endpoint is not answering as it should."""

    at: float
    status: int | None
    """The HTTP status; None when there was no answer at all (a closed port)."""
    error: str = ""
    """Claude Code's kind of error (`authentication_failed`, `server_error`, `unknown`...)."""
    attempt: int | None = None
    of: int | None = None
    """How many attempts the CLI makes in all, when it says."""

    @property
    def line(self) -> str:
        """The event log's line for it."""
        status = f" with {self.status}" if self.status is not None else ""
        kind = f" ({self.error})" if self.error else ""
        of = f" (attempt {self.attempt} of {self.of})" if self.attempt and self.of else ""
        return f"API call failed{status}{kind}; the CLI retries{of}"


@dataclass(frozen=True, slots=True)
class ToolResultSeen:
    """A tool finished and its result is about to join the conversation.

    Seen from the agent's post-tool hook, before the model request that would
    carry it: the one point where a result too large for the room left can
    still be kept from the model. The manager answers with `StopTurn` or nothing.
    """

    at: float
    tool_use_id: str
    tool: str
    characters: int
    """Size of the result as the hook saw it (its serialised form: an upper bound)."""


@dataclass(frozen=True, slots=True)
class MaskConfirmed:
    """The runtime rewrote the transcript and the agent continues on the masked one."""

    at: float
    tool_use_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MaskFailed:
    at: float
    reason: str


class Decision(StrEnum):
    """An answer to a restart approval request."""

    APPROVE = "approve"
    DENY = "deny"
    EDIT = "edit"
    """Approve the edited checkpoint text instead of the agent's own."""


@dataclass(frozen=True, slots=True)
class ApprovalGiven:
    """A person (or a policy, or a timeout) answered an approval request."""

    at: float
    decision: Decision
    edited_text: str | None = None
    decided_by: AnsweredBy = AnsweredBy.OPERATOR


@dataclass(frozen=True, slots=True)
class RestartCompleted:
    """The fresh session is running on the continuation prompt."""

    at: float
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class IdleTimedOut:
    """No message from the agent for the idle timeout."""

    at: float
    idle_seconds: float


@dataclass(frozen=True, slots=True)
class SessionTimedOut:
    at: float
    seconds: float


@dataclass(frozen=True, slots=True)
class AgentFailed:
    """Something the agent cannot come back from (the CLI would not start, crashed, ...)."""

    at: float
    reason: str


@dataclass(frozen=True, slots=True)
class CompactionObserved:
    """The CLI tried to compact on its own; our PreCompact hook blocks it and says so."""

    at: float
    trigger: str
    blocked: bool
    pre_tokens: int | None = None
    post_tokens: int | None = None


class Command(StrEnum):
    STOP = "stop"
    PAUSE = "pause"
    RESUME = "resume"
    MASK_NOW = "mask_now"
    RESTART_NOW = "restart_now"
    """Checkpoint and restart now; on a stopped or failed session, restart from its checkpoint."""
    CANCEL = "cancel"
    """Take the session out of the run: wind down, write its checkpoint, then stop."""
    TAKE_OVER = "take_over"
    """A person takes the session over in the interactive Claude Code: its turn stops and
    its process ends, and it waits, paused, to be handed back (`SessionHandedBack`)."""


@dataclass(frozen=True, slots=True)
class OperatorCommand:
    at: float
    command: Command
    reason: str = ""
    """Why, when it was not the operator's own doing (a signal, a full disk): journaled."""


@dataclass(frozen=True, slots=True)
class ApprovalPolicyChanged:
    at: float
    required: bool


@dataclass(frozen=True, slots=True)
class BudgetReached:
    """The session (or the run) came near a budget limit, or reached it (core.budget).

    Near: wind down, write the checkpoint, stop. Over: stop now, the checkpoint kept.
    """

    at: float
    over: bool
    reason: str


@dataclass(frozen=True, slots=True)
class ManageModeChanged:
    """The operator switched how much of this session's window mala-tui manages."""

    at: float
    mode: ManageMode


@dataclass(frozen=True, slots=True)
class MessageForAgent:
    """Something the operator says to the agent (core.operator_messages)."""

    at: float
    text: str


@dataclass(frozen=True, slots=True)
class SessionHandedBack:
    """The person is done with a session taken over by hand: the conversation as its
    transcript now holds it (the person's turns included), the usage of the latest API
    call in it, and whether the session goes on supervised or ends."""

    at: float
    history: tuple[Message, ...]
    call: CallUsage | None
    go_on: bool
    prompts: int = 0
    """Prompts the person gave it by hand."""


@dataclass(frozen=True, slots=True)
class BackgroundChanged:
    """What the agent runs in the background now (core.background), as the CLI lists it,
    and how many reports it holds for the main thread's next turn."""

    at: float
    tasks: tuple[BackgroundTask, ...]
    reports: int = 0


Observation = (
    UsageObserved
    | ApiRetrying
    | MessageObserved
    | SessionIdentified
    | TurnEnded
    | ToolResultSeen
    | MaskConfirmed
    | MaskFailed
    | ApprovalGiven
    | RestartCompleted
    | IdleTimedOut
    | SessionTimedOut
    | AgentFailed
    | CompactionObserved
    | OperatorCommand
    | ApprovalPolicyChanged
    | ManageModeChanged
    | BudgetReached
    | MessageForAgent
    | SessionHandedBack
    | BackgroundChanged
)
