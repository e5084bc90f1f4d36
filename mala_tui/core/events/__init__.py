"""The events mala-tui records and shows: one vocabulary for the journal, the UI and `show`.

Every event is a frozen pydantic model with a `type` tag, a wall-clock `at`
(seconds since the epoch) and the `session` it belongs to ("" for the run).
A journal line is one event's JSON; reading a line back goes through
`parse_event`, which names what it could not understand instead of guessing.

Phases, triggers, usage sources, approval answers and end statuses are typed
with the core's enums: on disk they are their string values (a StrEnum
serialises as its value), so journals written before the fields were typed
read back unchanged, and in memory a misspelt value is a type error.

The events are grouped by meaning, each group a module of this package: a run's life
(`run`), a session's life (`session`), managing its context window (`context`), a
person's answer awaited (`questions`), what the operator does to a session
(`operator`), a worktree session's work (`worktrees`), its subagents' windows
(`subagents`) and sessions on a cluster (`cluster`), all on `base.EventBase`. The
one union, `Event`, is here: import every event from here
(`from mala_tui.core import events as ev`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from mala_tui.core.events.base import EventBase
from mala_tui.core.events.cluster import (
    HostLost,
    HostPlaced,
    WorktreeSnapshot,
)
from mala_tui.core.events.context import (
    CheckpointRequested,
    CheckpointSaved,
    CompactionSeen,
    MaskApplied,
    MaskMeasured,
    MaskSkipped,
    MessageKind,
    MessageRecorded,
    Restarted,
    TranscriptFolded,
    UsageRecorded,
    WindDownSent,
)
from mala_tui.core.events.operator import (
    HandedBack,
    MessageDelivered,
    MessageQueued,
    TakenOver,
)
from mala_tui.core.events.questions import (
    ApprovalDecided,
    ApprovalPolicySet,
    ApprovalRequested,
    CacheCooling,
    PermissionDecided,
    PermissionRequested,
)
from mala_tui.core.events.run import (
    RunEnded,
    RunMode,
    RunResumed,
    RunStarted,
    SessionAdded,
)
from mala_tui.core.events.session import (
    AgentSessionNamed,
    ApiErrorSeen,
    BackgroundListed,
    BackgroundStopped,
    BackgroundWaiting,
    CliCostReported,
    ErrorRecorded,
    IdleTimeoutSeen,
    ManageModeSet,
    ModelLearned,
    PhaseChanged,
    ProcessEnded,
    ProcessStarted,
    SessionEnded,
    SessionStarted,
    WarningRecorded,
    Where,
    WindowLearned,
)
from mala_tui.core.events.subagents import (
    SubagentCall,
    SubagentCompacted,
    SubagentEnd,
    SubagentEnded,
    SubagentResultWithheld,
    SubagentStarted,
    SubagentWoundDown,
)
from mala_tui.core.events.worktrees import (
    ChangedFile,
    WorktreeChanged,
    WorktreeCreated,
    WorktreeDiscarded,
    WorktreeLanded,
    WorktreePushed,
)

Event = Annotated[
    RunStarted
    | RunEnded
    | SessionStarted
    | PhaseChanged
    | UsageRecorded
    | MessageRecorded
    | MaskApplied
    | MaskMeasured
    | MaskSkipped
    | TranscriptFolded
    | WindDownSent
    | CheckpointRequested
    | CheckpointSaved
    | ApprovalRequested
    | ApprovalPolicySet
    | ApprovalDecided
    | Restarted
    | IdleTimeoutSeen
    | ApiErrorSeen
    | CompactionSeen
    | ProcessStarted
    | ProcessEnded
    | SessionEnded
    | WorktreeCreated
    | WorktreeChanged
    | WorktreeLanded
    | WorktreePushed
    | WorktreeDiscarded
    | ErrorRecorded
    | WarningRecorded
    | WindowLearned
    | ModelLearned
    | CacheCooling
    | ManageModeSet
    | MessageQueued
    | MessageDelivered
    | SessionAdded
    | PermissionRequested
    | PermissionDecided
    | AgentSessionNamed
    | TakenOver
    | HandedBack
    | RunResumed
    | HostPlaced
    | HostLost
    | WorktreeSnapshot
    | BackgroundListed
    | BackgroundWaiting
    | BackgroundStopped
    | SubagentStarted
    | SubagentCall
    | SubagentCompacted
    | SubagentEnded
    | SubagentWoundDown
    | SubagentResultWithheld
    | CliCostReported,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: frozenset[str] = frozenset(
    model.model_fields["type"].default for model in EventBase.__subclasses__()
)


class UnknownEventError(ValueError):
    """A line whose `type` this version does not know (written by a newer one, say)."""


class BadEventError(ValueError):
    """A line that is not a valid event; the message says which field and why."""


def parse_event(data: Any) -> Event:
    """Validate one decoded JSON object as an event.

    Raises:
        UnknownEventError: the `type` is not one we know.
        BadEventError: a known type with missing or wrong fields, or not an object.
    """
    if not isinstance(data, dict):
        raise BadEventError(f"expected a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    # A list or an object as the type is not hashable: test for a string first.
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        raise UnknownEventError(f"unknown event type {kind!r}")
    try:
        return EVENT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        # Past a union pydantic names the member it tried ("str-enum[RetryDecision]"):
        # the field's path is what the reader needs.
        path = [part for part in first["loc"][1:] if not (isinstance(part, str) and "[" in part)]
        where = ".".join(str(part) for part in path) or "(event)"
        raise BadEventError(f"{kind} event: field {where}: {first['msg']}") from None


def event_json(event: Event) -> str:
    """One journal line (no newline)."""
    return event.model_dump_json()


__all__ = [
    "EVENT_ADAPTER",
    "EVENT_TYPES",
    "AgentSessionNamed",
    "ApiErrorSeen",
    "ApprovalDecided",
    "ApprovalPolicySet",
    "ApprovalRequested",
    "BackgroundListed",
    "BackgroundStopped",
    "BackgroundWaiting",
    "BadEventError",
    "CacheCooling",
    "ChangedFile",
    "CheckpointRequested",
    "CheckpointSaved",
    "CliCostReported",
    "CompactionSeen",
    "ErrorRecorded",
    "Event",
    "EventBase",
    "HandedBack",
    "HostLost",
    "HostPlaced",
    "IdleTimeoutSeen",
    "ManageModeSet",
    "MaskApplied",
    "MaskMeasured",
    "MaskSkipped",
    "MessageDelivered",
    "MessageKind",
    "MessageQueued",
    "MessageRecorded",
    "ModelLearned",
    "PermissionDecided",
    "PermissionRequested",
    "PhaseChanged",
    "ProcessEnded",
    "ProcessStarted",
    "Restarted",
    "RunEnded",
    "RunMode",
    "RunResumed",
    "RunStarted",
    "SessionAdded",
    "SessionEnded",
    "SessionStarted",
    "SubagentCall",
    "SubagentCompacted",
    "SubagentEnd",
    "SubagentEnded",
    "SubagentResultWithheld",
    "SubagentStarted",
    "SubagentWoundDown",
    "TakenOver",
    "TranscriptFolded",
    "UnknownEventError",
    "UsageRecorded",
    "WarningRecorded",
    "Where",
    "WindDownSent",
    "WindowLearned",
    "WorktreeChanged",
    "WorktreeCreated",
    "WorktreeDiscarded",
    "WorktreeLanded",
    "WorktreePushed",
    "WorktreeSnapshot",
    "event_json",
    "parse_event",
]
