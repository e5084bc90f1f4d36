"""The parts of the manager's state: the turn in flight, what waits to happen, the counts.

Each is a field of `ManagerState` (core.manager_state). A field that more than one
of the manager's parts changes is changed here, through a named transition (a
stop begun, the pending mask taken, a skip said once), so that a reader finds
every way it changes in one place; tests/core/test_state_owners.py holds the core
to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from mala_tui.core.masking import MaskPlan
from mala_tui.core.phases import Cause, Trigger
from mala_tui.core.transcript import Message

_DIGITS: Final = re.compile(r"[\d,.]+")


def news_key(reason: str) -> str:
    """A reason with its figures taken out: "only ~21,545 tokens maskable" and "only
    ~21,551" are the same news, said once."""
    return _DIGITS.sub("#", reason)


class StopFor(StrEnum):
    """Why the turn in flight is being stopped: the one sub-state of a streaming turn."""

    PROMPT = "prompt"
    """Interrupted so that a prompt (wind-down, checkpoint request) goes next."""
    MASK = "mask"
    """Stopped at its next clean point for the pending mask."""
    PAUSE = "pause"
    EMERGENCY = "emergency"
    """Stopped because the window is gone; a restart follows."""
    PROJECTION = "projection"
    """The post-tool hook was told to stop: decide at that clean point."""
    MESSAGE = "message"
    """Stopped at its next clean point so that the operator's message goes next."""


@dataclass
class TurnState:
    """What is known of the turn in flight."""

    prompt: str = ""
    streaming: bool = False
    tool_calls: int = 0
    stopping: StopFor | None = None
    then: str | None = None
    """The prompt sent once the stopped turn has ended (StopFor.PROMPT)."""
    seen_results: dict[str, int] = field(default_factory=dict)
    """Results the post-tool hook reported (id -> characters) before they reach the transcript."""

    def begin_stop(self, reason: StopFor) -> None:
        """The turn in flight is being stopped, for `reason`."""
        self.stopping = reason

    def stop_before(self, then: str | None, reason: StopFor = StopFor.PROMPT) -> None:
        """The turn in flight is being stopped so that `then` goes next (None: what the
        stop is for sends its own prompt)."""
        self.stopping, self.then = reason, then

    def stop_over(self) -> None:
        """The stop has landed, or turned out not to be needed."""
        self.stopping = None

    def ended(self) -> None:
        """The turn is over: nothing streams until the next prompt."""
        self.streaming = False


@dataclass(frozen=True)
class PendingMask:
    """A mask decided and not yet applied (a value: planned anew, it is replaced)."""

    plan: MaskPlan
    trigger: Trigger
    cause: Cause
    floor: int
    """Where masking means to bring the window down to, in tokens."""
    resume: bool
    """The turn was stopped for it: the session is resumed on the masked transcript."""
    then_wind_down: bool = False
    """Masked so that the wind-down request fits: wind down once it is applied."""
    projected: int | None = None
    """The next request's projected size, when decided at a tool result."""
    idle_seconds: float | None = None
    """Set when the prompt cache had gone cold (seconds since the last request): the mask
    is free, as the next request writes the whole prompt anyway."""
    fold: bool = False
    """The mask folds the masked steps too (core.mask_rewrites)."""


@dataclass
class Pending:
    """What waits to happen: a mask to land, a mask to measure, a restart's reason."""

    mask: PendingMask | None = None
    measure_from: int | None = None
    skip_reason: str | None = None
    skip_revision: int | None = None
    """Transcript revision when masking last found nothing: unchanged, nothing to redo."""
    work_ends_at: int | None = None
    """Transcript length when the wind-down began: what follows is not work to carry over."""
    restart_reason: str = ""
    restart_cause: Cause | None = None

    # -- the mask ------------------------------------------------------------------------

    def drop_mask(self) -> None:
        """The decided mask will not happen (a wind-down, an emergency, the task done)."""
        self.mask = None

    def take_mask(self) -> PendingMask | None:
        """The decided mask, no longer pending (it landed, or it failed)."""
        taken, self.mask = self.mask, None
        return taken

    def take_measure_from(self) -> int | None:
        """The window before the latest mask, once, for the first request after it."""
        taken, self.measure_from = self.measure_from, None
        return taken

    # -- news said once ------------------------------------------------------------------

    def say_once(self, reason: str) -> bool:
        """Whether `reason` is news: not the kind of reason said last (see `news_key`)."""
        kind = news_key(reason)
        if kind == self.skip_reason:
            return False
        self.skip_reason = kind
        return True

    def nothing_maskable(self, revision: int) -> None:
        """Masking found nothing worth doing on the transcript at `revision`."""
        self.skip_revision = revision

    def pressure_eased(self) -> None:
        """Back under the soft threshold: a reason to skip is news again."""
        self.skip_reason = None

    def mask_decided(self, mask: PendingMask) -> None:
        """A mask is decided: what was skipped before is not news any more."""
        self.mask = mask
        self.skip_reason = None
        self.skip_revision = None

    # -- the restart ---------------------------------------------------------------------

    def restart_for(self, reason: str, cause: Cause) -> None:
        """Why the session restarts (or asks to), as its restart event says."""
        self.restart_reason, self.restart_cause = reason, cause


@dataclass
class Counters:
    continuation: int = 0
    checkpoints: int = 0
    masked_total: int = 0
    masked_session: int = 0
    idle_retries: int = 0
    mask_failures: int = 0
    compactions: int = 0
    refetched: int = 0
    """Tool calls that fetched again what a mask had taken away."""

    def fresh_session(self) -> None:
        """A restart: the next continuation, its per-session counts from zero."""
        self.continuation += 1
        self.masked_session = self.idle_retries = self.mask_failures = 0


@dataclass(frozen=True, slots=True)
class Fork:
    """Another session's conversation a new session starts from (the SDK's `fork_session`):
    its agent session, what it held, and how its text measured in tokens."""

    session_id: str
    history: tuple[Message, ...]
    density: float | None = None
