"""Managing a session's context window: each call's usage and message, masks, the
wind-down, checkpoints, restarts, and the CLI's own compaction."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.events.base import EventBase
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import Cause
from mala_tui.core.transcript import Role
from mala_tui.core.usage import CallUsage, ContextUsage, UsageSource
from mala_tui.core.window import WindowSource


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


MessageKind = Literal["text", "tool_call", "tool_result"]
"""What a recorded message is: something said, a tool called, or a tool's result."""


class MessageRecorded(EventBase):
    """A message of the agent's conversation, shortened for the event log."""

    type: Literal["message"] = "message"
    role: Role
    kind: MessageKind
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


class TranscriptFolded(EventBase):
    """A mask's fold (core.fold): the masked steps' calls and placeholders, and earlier
    masks' resume notes, left the transcript for one digest line per step."""

    type: Literal["transcript_folded"] = "transcript_folded"
    steps: int
    """Steps folded by this fold."""
    notes: int = 0
    """Earlier masks' resume notes folded with them."""
    digest_lines: int = 0
    """Lines of the digest after the fold (every step folded so far)."""
    tokens_before: int = 0
    """The conversation's estimated size (chars/4) after the mask, before the fold."""
    tokens_after: int = 0
    """...and after it, digest included."""
    digest_tokens: int = 0


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


class CompactionSeen(EventBase):
    type: Literal["compaction"] = "compaction"
    trigger: str
    blocked: bool
    pre_tokens: int | None = None
    post_tokens: int | None = None
