"""The runner's inbox: everything a session hears, in the order it heard it.

Four kinds of thing arrive: the agent's stream items (tagged with the client
they came from, so a stale process cannot confuse a new one), the operator's
commands, messages and mode changes (and budgets reached), approval answers (from the
run's desk), and word that a permission request began or ended waiting (the idle
timeout is off meanwhile). One queue keeps them in order; the runner is the only reader.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mala_tui.core.observations import (
    ApiRetrying,
    BudgetReached,
    CompactionObserved,
    Decision,
    HandedBack,
    ManageModeChanged,
    MessageForAgent,
    MessageObserved,
    Observation,
    OperatorCommand,
    SessionIdentified,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.permissions import AnsweredBy
from mala_tui.runtime.backends.base import (
    ApiRetryItem,
    CompactionItem,
    MessageItem,
    ModelItem,
    ProblemItem,
    ResultItem,
    SessionIdItem,
    StreamItem,
    UsageItem,
)


@dataclass(frozen=True)
class FromAgent:
    """One item of an agent's stream, from the client of this generation."""

    generation: int
    item: StreamItem | None
    """None: the stream ended (the process went away)."""
    error: str = ""
    """Why the stream ended, when it broke rather than closed."""


@dataclass(frozen=True)
class Answer:
    """A person's (or a timeout's, or a policy's) answer to the approval of a checkpoint."""

    checkpoint_number: int
    decision: Decision
    edited_text: str | None
    decided_by: AnsweredBy


@dataclass(frozen=True)
class PermissionWait:
    """A permission request began or ended: the idle timeout is off while one waits."""


OperatorInput = (
    OperatorCommand
    | ManageModeChanged
    | BudgetReached
    | MessageForAgent
    | HandedBack
    | Answer
    | PermissionWait
)
"""What does not come from the agent: held back while a turn is being stopped."""

InboxItem = FromAgent | OperatorInput
Inbox = asyncio.Queue[InboxItem]


def observation_of(item: StreamItem, at: float) -> Observation | ProblemItem | ModelItem:
    """The observation a stream item stands for; a problem is recorded, not observed, and
    the model an answer names is the feed's to journal (the manager does not decide on it)."""
    match item:
        case UsageItem():
            return UsageObserved(at, item.call, item.notes, starts_call=not item.final)
        case MessageItem():
            return MessageObserved(at, item.message)
        case SessionIdItem():
            return SessionIdentified(at, item.session_id)
        case CompactionItem():
            return CompactionObserved(
                at, item.trigger, item.blocked, item.pre_tokens, item.post_tokens
            )
        case ResultItem():
            return TurnEnded(
                at,
                subtype=item.subtype,
                is_error=item.is_error,
                terminal_reason=item.terminal_reason,
                result_text=item.result_text,
                summed_usage=item.summed_usage,
                context_window=item.context_window,
                session_id=item.session_id,
                api_error_status=item.api_error_status,
                api_error_kind=item.api_error_kind,
            )
        case ApiRetryItem():
            return ApiRetrying(at, item.status, item.error, item.attempt)
        case ProblemItem() | ModelItem():
            return item


def interrupted(at: float) -> TurnEnded:
    """The end of a turn that was cut off without a result of its own (the process went)."""
    return TurnEnded(
        at, subtype="error_during_execution", is_error=True, terminal_reason="aborted_streaming"
    )
