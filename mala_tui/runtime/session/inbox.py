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
    BudgetReached,
    Decision,
    ManageModeChanged,
    MessageForAgent,
    OperatorCommand,
    SessionHandedBack,
    TurnEnded,
)
from mala_tui.core.permissions import AnsweredBy
from mala_tui.runtime.backends.base import StreamItem


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
class Acknowledged:
    """An operator's command whose asker waits to hear whether the manager took it: its
    `answer` is "" once taken, or why it was refused (a take-over while the session moved
    on to a restart, say)."""

    command: OperatorCommand
    answer: asyncio.Future[str]


@dataclass(frozen=True)
class PermissionWait:
    """A permission request began or ended: the idle timeout is off while one waits."""


OperatorInput = (
    OperatorCommand
    | Acknowledged
    | ManageModeChanged
    | BudgetReached
    | MessageForAgent
    | SessionHandedBack
    | Answer
    | PermissionWait
)
"""What does not come from the agent: held back while a turn is being stopped."""

InboxItem = FromAgent | OperatorInput
Inbox = asyncio.Queue[InboxItem]


def interrupted(at: float) -> TurnEnded:
    """The end of a turn that was cut off without a result of its own (the process went)."""
    return TurnEnded(
        at, subtype="error_during_execution", is_error=True, terminal_reason="aborted_streaming"
    )
