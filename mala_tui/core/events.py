"""The events mala-tui records and shows: one vocabulary for the journal, the UI and `show`.

Every event is a frozen pydantic model with a `type` tag, a wall-clock `at`
(seconds since the epoch) and the `session` it belongs to ("" for the run).
A journal line is one event's JSON; reading a line back goes through
`parse_event`, which names what it could not understand instead of guessing.

Phases, triggers, usage sources, approval answers and end statuses are typed
with the core's enums: on disk they are their string values (a StrEnum
serialises as its value), so journals written before the fields were typed
read back unchanged, and in memory a misspelt value is a type error.

The events of the operator's console and of resumes (messages, permissions, sessions
added, resumes) are defined in core.console_events, those of sessions on a cluster (a
host placed, a host lost) in core.cluster_events; both are part of the one union here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.cluster_events import HostLost, HostPlaced, WorktreeSnapshot
from mala_tui.core.console_events import (
    AgentSessionNamed,
    HandedBack,
    MessageDelivered,
    MessageQueued,
    PermissionDecided,
    PermissionRequested,
    RunResumed,
    SessionAdded,
    TakenOver,
)
from mala_tui.core.event_base import EventBase
from mala_tui.core.landing_events import WorktreeDiscarded, WorktreeLanded, WorktreePushed
from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import Cause, ManageMode, Phase, Trigger
from mala_tui.core.retry import RetryDecision
from mala_tui.core.usage import CallUsage, ContextUsage, UsageSource
from mala_tui.core.window import WindowSource


class RunMode(StrEnum):
    """What started a run (`run_started`'s `mode`)."""

    RUN = "run"
    """`mala-tui run` (and its resumes)."""
    DEMO = "demo"
    """`mala-tui demo`: the loopback's scripted agents; it cannot be resumed."""
    FAULTS = "faults"
    """The fault bench (`python -m mala_tui.bench faults`)."""
    BENCH = "bench"
    """The other benchmarks."""
    SAMPLE = "sample"
    """The UI's sample run (mala_tui.dev), for screenshots and the UI's tests."""


class RunStarted(EventBase):
    type: Literal["run_started"] = "run_started"
    run_id: str
    sessions: tuple[str, ...]
    mode: RunMode


class RunEnded(EventBase):
    type: Literal["run_ended"] = "run_ended"
    run_id: str
    ok: bool
    reason: str = ""


class SessionStarted(EventBase):
    type: Literal["session_started"] = "session_started"
    task: str
    cwd: str
    model: str | None = None
    window: int
    soft_threshold: float
    hard_threshold: float
    max_restarts: int
    require_approval: bool
    window_source: WindowSource = WindowSource.DEFAULT
    """Where the window came from (see core.window.WindowSource)."""
    manage: ManageMode = ManageMode.FULL
    cache_ttl_seconds: float | None = None
    """The prompt cache's lifetime the session is judged by (context.cache_ttl_seconds)."""


class PhaseChanged(EventBase):
    type: Literal["phase_changed"] = "phase_changed"
    before: Phase
    after: Phase
    trigger: Trigger


class UsageRecorded(EventBase):
    """A figure of the session's window (core.usage.ContextUsage), with the API call that
    measured it laid out flat: `of` lays it out, `usage` reads it back."""

    type: Literal["usage"] = "usage"
    tokens: int
    window: int
    source: UsageSource
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    notes: tuple[str, ...] = ()
    window_source: WindowSource = WindowSource.DEFAULT
    """Where the window figure came from (see core.window.WindowSource)."""
    density: float = 1.0
    """Tokens per chars/4 token that calibrates this session's per-block estimates."""
    density_measured: bool = False
    """False while the density is the prior (too few calls to fit it)."""
    call_started: bool = False
    """The first report of a new API call: the request that read (and so kept warm) the
    prompt cache was sent then."""

    @classmethod
    def of(
        cls,
        usage: ContextUsage,
        *,
        at: float,
        session: str,
        notes: tuple[str, ...] = (),
        window_source: WindowSource = WindowSource.DEFAULT,
        density: float = 1.0,
        density_measured: bool = False,
        call_started: bool = False,
    ) -> UsageRecorded:
        """The event of a figure of the window (a call's counts are 0 when it has none)."""
        call = usage.call or CallUsage()
        return cls(
            at=at,
            session=session,
            tokens=usage.tokens,
            window=usage.window,
            source=usage.source,
            input_tokens=call.input_tokens,
            cache_creation_input_tokens=call.cache_creation_input_tokens,
            cache_read_input_tokens=call.cache_read_input_tokens,
            output_tokens=call.output_tokens,
            notes=notes,
            window_source=window_source,
            density=density,
            density_measured=density_measured,
            call_started=call_started,
        )

    @property
    def usage(self) -> ContextUsage:
        """The figure as the core carries it; its call is None when no counts were kept."""
        call = CallUsage(
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
            self.output_tokens,
        )
        return ContextUsage(
            self.tokens, self.window, self.source, call if call != CallUsage() else None
        )

    @property
    def pressure(self) -> float:
        return self.usage.pressure


class MessageRecorded(EventBase):
    """A message of the agent's conversation, shortened for the event log."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant"]
    kind: Literal["text", "tool_call", "tool_result"]
    tool: str = ""
    excerpt: str = ""
    size: int = 0
    is_error: bool = False


class MaskApplied(EventBase):
    type: Literal["mask_applied"] = "mask_applied"
    count: int
    tool_use_ids: tuple[str, ...]
    placeholders: tuple[str, ...]
    estimated_tokens: int
    tokens_before: int
    total_masked: int
    trigger: Cause = Cause.SOFT_THRESHOLD
    """Why: operator, soft_threshold or projection."""
    projected_tokens: int | None = None
    """The next request's projected size when the mask was decided at a tool result."""
    free: bool = False
    """The prompt cache had gone cold while the session waited: the next request writes
    the whole prompt anyway, so the mask's own rewrite costs nothing."""
    idle_seconds: float | None = None
    """With `free`: how long it had been since the session's last request."""


class MaskMeasured(EventBase):
    """What a mask really freed, from the next real usage, never from the estimate."""

    type: Literal["mask_measured"] = "mask_measured"
    tokens_before: int
    tokens_after: int
    reclaimed: int


class MaskSkipped(EventBase):
    type: Literal["mask_skipped"] = "mask_skipped"
    reason: str
    tokens: int


class WindDownSent(EventBase):
    type: Literal["wind_down"] = "wind_down"
    tokens: int
    """Measured, or projected when the trigger is `projection`."""
    window: int
    trigger: Cause = Cause.HARD_THRESHOLD


class CheckpointRequested(EventBase):
    type: Literal["checkpoint_requested"] = "checkpoint_requested"
    tokens: int


class CheckpointSaved(EventBase):
    type: Literal["checkpoint_saved"] = "checkpoint_saved"
    number: int
    """1 for the session's first checkpoint, 2 for the next..."""
    origin: CheckpointOrigin
    """Where the text came from: the agent's tags, a fence, its whole answer, the harness,
    a person's edit."""
    text: str
    path: str = ""


class ApprovalRequested(EventBase):
    type: Literal["approval_requested"] = "approval_requested"
    checkpoint_number: int
    reason: str


class ApprovalPolicySet(EventBase):
    """Requiring approval before restarts was switched on or off for the session."""

    type: Literal["approval_policy"] = "approval_policy"
    required: bool


class ApprovalDecided(EventBase):
    type: Literal["approval_decided"] = "approval_decided"
    decision: Decision
    decided_by: AnsweredBy
    """The operator, the approval's timeout, or the policy (`--approve deny`)."""


class Restarted(EventBase):
    type: Literal["restart"] = "restart"
    continuation: int
    reason: str
    tokens_before: int
    checkpoint_number: int
    approved_by: AnsweredBy
    trigger: Cause | None = None
    """Why it restarted; None in journals written before it was recorded (which hold
    "" there)."""

    @field_validator("trigger", mode="before")
    @classmethod
    def _not_recorded(cls, value: object) -> object:
        return None if value == "" else value


class IdleTimeoutSeen(EventBase):
    type: Literal["idle_timeout"] = "idle_timeout"
    idle_seconds: float
    retry: int
    decision: RetryDecision
    delay: float = 0.0
    reason: str = ""


class ApiErrorSeen(EventBase):
    type: Literal["api_error"] = "api_error"
    terminal_reason: str
    status: int | None = None
    retry: int = 0
    decision: RetryDecision | Literal[""] = ""
    """What was decided ("none": the turn was not retried); "" in journals written
    before it was recorded."""


class CompactionSeen(EventBase):
    type: Literal["compaction"] = "compaction"
    trigger: str
    blocked: bool
    pre_tokens: int | None = None
    post_tokens: int | None = None


class ProcessStarted(EventBase):
    type: Literal["process_started"] = "process_started"
    pid: int | None
    purpose: str
    resume: bool = False


class ProcessEnded(EventBase):
    type: Literal["process_ended"] = "process_ended"
    pid: int | None
    how: str
    seconds: float


class SessionEnded(EventBase):
    type: Literal["session_ended"] = "session_ended"
    status: EndStatus
    reason: str = ""
    restarts: int = 0
    masked_total: int = 0


class WorktreeCreated(EventBase):
    """The session works in its own git worktree, on its own branch."""

    type: Literal["worktree_created"] = "worktree_created"
    path: str
    branch: str
    base_commit: str
    repository: str
    base_branch: str = ""
    """The branch checked out where the run started, which landing merges into; "" for a
    detached HEAD (and in journals written before it was recorded)."""


class ChangedFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    added: int | None
    """Lines added; None for a binary file."""
    deleted: int | None


class WorktreeChanged(EventBase):
    """What the session changed in its worktree since the commit it started from."""

    type: Literal["worktree_changed"] = "worktree_changed"
    files: tuple[ChangedFile, ...]
    error: str = ""
    """Why the changes could not be read (the worktree was removed, say); files is then empty."""
    commits_ahead: int | None = None
    """Commits on the session's branch not in its base branch (None: not measured)."""
    uncommitted: bool | None = None
    """Whether the worktree holds edits not committed (None: not measured)."""


class ErrorRecorded(EventBase):
    type: Literal["error"] = "error"
    where: str
    message: str

    @property
    def mask_not_applied(self) -> bool:
        """A mask the manager decided on could not be applied to the stored transcript."""
        return self.where == "masking"


class WarningRecorded(EventBase):
    """Something the operator should know that is not an error: e.g. decisions that rest
    on an estimate because the agent reports no per-call usage."""

    type: Literal["warning"] = "warning"
    where: str
    message: str


class WindowLearned(EventBase):
    """The API refused a prompt smaller than the window believed: the window estimated
    from that refusal (core.window.RefusalBounds), which decisions use from now on."""

    type: Literal["window_learned"] = "window_learned"
    window: int
    accepted: int
    """The largest context the API accepted (measured)."""
    refused: int
    """The prompt it refused (estimated: the last measured call plus what joined since)."""
    believed: int
    believed_source: WindowSource


class ModelLearned(EventBase):
    """The API answered as this model: the session's model from now on, and its price.
    A session started without one (Claude Code's own default) learns it from its first
    answer, as does one whose answers name another (a dated name, a gateway's own)."""

    type: Literal["model_learned"] = "model_learned"
    model: str
    was: str | None = None
    """The model the session knew before: the one it was started with, or None."""


class CacheCooling(EventBase):
    """A question (an approval, a permission request) has kept its session waiting past
    half the prompt cache's lifetime: the cache goes cold unless it is answered."""

    type: Literal["cache_cooling"] = "cache_cooling"
    waiting_for: str
    """What the session waits for, e.g. "permission to use Bash (request #2)"."""
    cold_in: float
    """Seconds until the cache goes cold (its lifetime from the last request)."""
    ttl: float


class ManageModeSet(EventBase):
    type: Literal["manage_mode"] = "manage_mode"
    mode: ManageMode


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
    | WorktreeSnapshot,
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
    "AgentSessionNamed",
    "EventBase",
    "HandedBack",
    "HostLost",
    "HostPlaced",
    "MessageDelivered",
    "MessageQueued",
    "PermissionDecided",
    "PermissionRequested",
    "RunResumed",
    "SessionAdded",
    "TakenOver",
    "WorktreeDiscarded",
    "WorktreeLanded",
    "WorktreePushed",
    "WorktreeSnapshot",
]
