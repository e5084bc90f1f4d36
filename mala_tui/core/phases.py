"""The phase table: which observation may move a session from which phase to which.

Why a table
-----------
A session under management is always doing exactly one thing: running, having
old results masked, being wound down, writing its checkpoint, waiting for a
person, or restarting. Each of those accepts only some facts: an approval means
nothing while running, a checkpoint nothing while masking. Writing that down as
a table makes every allowed move visible in one place, makes an unexpected one
an error instead of a silent wrong turn, and lets the tests walk it row by row.
The enums here are the project's one vocabulary for phases and triggers: the
runtime, the journal reader and the UI use them, never their string values.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final


class Phase(StrEnum):
    RUNNING = "running"
    MASKING = "masking"
    WINDING_DOWN = "winding_down"
    CHECKPOINTING = "checkpointing"
    AWAITING_APPROVAL = "awaiting_approval"
    RESTARTING = "restarting"
    PAUSED = "paused"
    DONE = "done"
    STOPPED = "stopped"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


class Trigger(StrEnum):
    SOFT_PRESSURE = "soft_pressure"
    PROJECTION = "projection"
    """The next request, projected at a tool result, would pass a threshold."""
    OPERATOR_MASK = "operator_mask"
    MASK_APPLIED = "mask_applied"
    MASK_FAILED = "mask_failed"
    HARD_PRESSURE = "hard_pressure"
    OPERATOR_CHECKPOINT = "operator_checkpoint"
    WIND_DOWN_DONE = "wind_down_done"
    CHECKPOINT_FOR_APPROVAL = "checkpoint_for_approval"
    CHECKPOINT_ACCEPTED = "checkpoint_accepted"
    CHECKPOINT_AT_LIMIT = "checkpoint_at_limit"
    APPROVED = "approved"
    DENIED = "denied"
    RESTARTED = "restarted"
    RESTART_BY_HAND = "restart_by_hand"
    TASK_DONE = "task_done"
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"
    FAIL = "fail"


TERMINAL: Final = frozenset({Phase.DONE, Phase.STOPPED, Phase.FAILED})

_CHECKPOINT_TRIGGERS: Final = {
    Trigger.CHECKPOINT_FOR_APPROVAL: Phase.AWAITING_APPROVAL,
    Trigger.CHECKPOINT_ACCEPTED: Phase.RESTARTING,
    Trigger.CHECKPOINT_AT_LIMIT: Phase.STOPPED,
}
_ENDINGS: Final = {Trigger.STOP: Phase.STOPPED, Trigger.FAIL: Phase.FAILED}

#: The whole state machine: phase -> trigger -> next phase. Anything else is illegal.
TRANSITIONS: Final[Mapping[Phase, Mapping[Trigger, Phase]]] = {
    Phase.RUNNING: {
        Trigger.SOFT_PRESSURE: Phase.MASKING,
        Trigger.PROJECTION: Phase.MASKING,
        Trigger.OPERATOR_MASK: Phase.MASKING,
        Trigger.HARD_PRESSURE: Phase.WINDING_DOWN,
        Trigger.OPERATOR_CHECKPOINT: Phase.CHECKPOINTING,
        Trigger.TASK_DONE: Phase.DONE,
        Trigger.PAUSE: Phase.PAUSED,
        **_CHECKPOINT_TRIGGERS,  # emergency: a harness-made checkpoint
        **_ENDINGS,
    },
    Phase.MASKING: {
        Trigger.MASK_APPLIED: Phase.RUNNING,
        Trigger.MASK_FAILED: Phase.RUNNING,
        Trigger.HARD_PRESSURE: Phase.WINDING_DOWN,
        Trigger.TASK_DONE: Phase.DONE,
        **_CHECKPOINT_TRIGGERS,
        **_ENDINGS,
    },
    Phase.WINDING_DOWN: {
        Trigger.WIND_DOWN_DONE: Phase.CHECKPOINTING,
        **_CHECKPOINT_TRIGGERS,
        **_ENDINGS,
    },
    Phase.CHECKPOINTING: {**_CHECKPOINT_TRIGGERS, **_ENDINGS},
    Phase.AWAITING_APPROVAL: {
        Trigger.APPROVED: Phase.RESTARTING,
        Trigger.DENIED: Phase.STOPPED,
        Trigger.STOP: Phase.STOPPED,
    },
    Phase.RESTARTING: {Trigger.RESTARTED: Phase.RUNNING, **_ENDINGS},
    Phase.PAUSED: {
        Trigger.RESUME: Phase.RUNNING,
        Trigger.STOP: Phase.STOPPED,
        Trigger.OPERATOR_CHECKPOINT: Phase.CHECKPOINTING,
    },
    Phase.DONE: {},
    Phase.STOPPED: {Trigger.RESTART_BY_HAND: Phase.RESTARTING},
    Phase.FAILED: {Trigger.RESTART_BY_HAND: Phase.RESTARTING},
}

#: Phases in which the agent may be streaming, so idle and session timeouts apply.
STREAMING: Final = frozenset(
    {Phase.RUNNING, Phase.MASKING, Phase.WINDING_DOWN, Phase.CHECKPOINTING, Phase.RESTARTING}
)


class IllegalTransition(Exception):
    """An observation the current phase does not accept; nothing was changed."""


class Cause(StrEnum):
    """Why a mask, a wind-down or a restart happened, as the journal records it."""

    OPERATOR = "operator"
    SOFT_THRESHOLD = "soft_threshold"
    HARD_THRESHOLD = "hard_threshold"
    PROJECTION = "projection"
    """Decided at a tool result, before the request that would have passed a threshold."""
    EMERGENCY = "emergency"
    """The window was already gone: a harness-made checkpoint."""
    BUDGET = "budget"
    """Near or at a cost, turn or time limit (core.budget): checkpoint, then stop."""
    NODE_LOST = "node_lost"
    """The session's host was lost with its node (`--engine ray`): a fresh session on
    another host, from its latest checkpoint or one built from what the driver received."""
    RESUME = "resume"
    """`mala-tui resume` picked an interrupted run up: a fresh session from the checkpoint."""


class ManageMode(StrEnum):
    """How much of a session's window mala-tui manages."""

    FULL = "full"
    """Mask, wind down, checkpoint and restart."""
    MASK = "mask"
    """Mask only; never restart (a full window ends the session)."""
    OFF = "off"
    """Watch only: gauges and the journal, no action on the session."""
