"""What a manager knows of its session, and the few moves every part of it makes.

The manager is split by concern (masking decisions, the restart flow, turns and
dispatch); they share this state and these helpers. Every handler follows one
rule: check that the move is legal before changing anything, so an observation
refused with IllegalTransition leaves the manager exactly as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from mala_tui.core import events as ev
from mala_tui.core.actions import Action, EndSession, EndStatus
from mala_tui.core.calibration import Calibration, Density
from mala_tui.core.checkpoint import Checkpoint
from mala_tui.core.limits import Limits
from mala_tui.core.mask_economics import GrowthRate
from mala_tui.core.masking import MaskPlan
from mala_tui.core.operator_messages import Delivery, MessageQueue, messages_block
from mala_tui.core.phases import TRANSITIONS, Cause, IllegalTransition, Phase, Trigger
from mala_tui.core.prompts import PromptKind, PromptSet
from mala_tui.core.transcript import Message, Transcript
from mala_tui.core.usage import (
    CallUsage,
    ContextUsage,
    UsageSource,
    UsageTracker,
    Zone,
    estimate_tokens,
)
from mala_tui.core.window import RefusalBounds, WindowSource, learn_from_refusal

#: The batch minimum is at most this share of the window: a fixed count fit for a
#: 200,000 window would forbid every mask in a small one.
MIN_BATCH_SHARE: Final = 0.15
_DIGITS: Final = re.compile(r"[\d,.]+")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one observation decided: actions to carry out in order, events to record."""

    actions: tuple[Action, ...] = ()
    events: tuple[ev.Event, ...] = ()


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


@dataclass
class PendingMask:
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


@dataclass
class Pending:
    mask: PendingMask | None = None
    measure_from: int | None = None
    skip_reason: str | None = None
    skip_revision: int | None = None
    """Transcript revision when masking last found nothing: unchanged, nothing to redo."""
    work_ends_at: int | None = None
    """Transcript length when the wind-down began: what follows is not work to carry over."""
    restart_reason: str = ""
    restart_cause: Cause | None = None


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


class SessionState:
    """The state every part of the manager reads, and the moves they share."""

    def _init_state(self, name: str, task: str, limits: Limits, prompts: PromptSet) -> None:
        self.name = name
        self.task = task
        self.limits = limits
        self.prompts = prompts
        self.require_approval = limits.require_approval
        self.manage = limits.manage
        self.phase = Phase.RUNNING
        self.window = limits.context_limit
        self.window_source = limits.window_source
        self._told_window = (limits.context_limit, limits.window_source)
        """The window as the session was started with it or the CLI reported it."""
        self.refusal: RefusalBounds | None = None
        """What the API's refusals said of a window smaller than the one told."""
        self._largest_accepted = 0
        """The largest context the API took in this session's life, restarts included."""
        self._restart_floor: int | None = None
        """The first request of the fresh session after the latest restart: where one
        more restart would start again."""
        self._awaiting_floor = False
        self.session_id: str | None = None
        self.checkpoint: Checkpoint | None = None
        self.end_status: EndStatus | None = None
        self.transcript = Transcript()
        self.tracker = UsageTracker()
        self.calibration = Calibration()
        self.growth = GrowthRate()
        self.counters = Counters()
        self.messages = MessageQueue()
        """What the operator said that has not reached the agent yet."""
        self._turn = TurnState()
        self._pending = Pending()
        self._chars_at_call: int | None = None
        """Transcript characters when the latest per-call usage arrived."""
        self._masked_keys: set[tuple[str, str]] = set()
        """What masked results had fetched (see masking.call_key)."""
        self._needed: set[tuple[str, str]] = set()
        """Fetched again after a mask: the agent needs it; its latest fetch stays unmasked."""

    # -- figures -------------------------------------------------------------------------

    @property
    def usage(self) -> ContextUsage:
        return self.tracker.current(self.window)

    @property
    def density(self) -> Density:
        """Tokens per chars/4 token, measured on this session's calls (see core.calibration)."""
        return self.calibration.density

    def calibrated(self, characters: int) -> int:
        """Characters of conversation as the API's tokens, by this session's density."""
        return self.density.scale(estimate_tokens(characters))

    def projected_tokens(self) -> int:
        """The next request's size: the latest measured window, plus what joined the
        conversation since (calibrated), plus results the hook reported that have not
        arrived yet. Without per-call usage: the estimate of it all."""
        pending = sum(
            chars
            for tool_id, chars in self._turn.seen_results.items()
            if not self.transcript.has_result(tool_id)
        )
        usage = self.usage
        if usage.source is UsageSource.PER_CALL and self._chars_at_call is not None:
            # Signed: a mask since the call shrank the conversation.
            grown = estimate_tokens(self.transcript.characters) - estimate_tokens(
                self._chars_at_call
            )
            now = max(0, usage.tokens + round(grown * self.density.ratio))
        else:
            now = usage.tokens
        return now + self.calibrated(pending)

    def _usage_event(
        self, at: float, usage: ContextUsage, notes: tuple[str, ...] = ()
    ) -> ev.UsageRecorded:
        call = usage.call
        density = self.density
        return ev.UsageRecorded(
            at=at,
            session=self.name,
            tokens=usage.tokens,
            window=usage.window,
            source=usage.source.value,
            input_tokens=call.input_tokens if call else 0,
            cache_creation_input_tokens=call.cache_creation_input_tokens if call else 0,
            cache_read_input_tokens=call.cache_read_input_tokens if call else 0,
            output_tokens=call.output_tokens if call else 0,
            notes=notes,
            window_source=self.window_source.value,
            density=round(density.ratio, 4),
            density_measured=density.measured,
        )

    def zone_of(self, tokens: int) -> Zone:
        """The zone decisions act on (see `_restart_makes_room` for when that is not
        the gauge's)."""
        zone = ContextUsage(tokens, self.window, UsageSource.PER_CALL).zone(
            self.limits.soft_threshold, self.limits.hard_threshold
        )
        return self._decision_zone(zone, tokens)

    def _decision_zone(self, zone: Zone, tokens: int) -> Zone:
        # Past the whole window nothing can be sent: that stays hard whatever happens.
        if zone is Zone.HARD and tokens < self.window and not self._restart_makes_room():
            return Zone.SOFT
        return zone

    def _restart_makes_room(self) -> bool:
        """A fresh session after a restart starts at its system prompt and checkpoint.
        When the latest one started past the hard threshold, winding down for another
        restart frees nothing: the session masks what it can instead, and only a
        refused window restarts it."""
        floor = self._restart_floor
        return floor is None or floor < self._hard_tokens()

    def _hard_tokens(self) -> int:
        return int(self.limits.hard_threshold * self.window)

    def _min_batch_tokens(self) -> int:
        if not self._restart_makes_room():
            return 0  # masking is all that can make room: every token of it counts
        return min(self.limits.mask_min_batch_tokens, int(MIN_BATCH_SHARE * self.window))

    # -- what the API accepts and refuses ------------------------------------------------

    def _set_told_window(self, tokens: int, source: WindowSource) -> None:
        """A window figure from the session's start or the CLI's report: what the CLI
        believes, which a refusal of the API's may have shown to be too large."""
        self._told_window = (tokens, source)
        self._settle_window()

    def _settle_window(self) -> None:
        told, source = self._told_window
        if self.refusal is not None and self.refusal.window < told:
            self.window, self.window_source = self.refusal.window, WindowSource.REFUSAL
        else:
            self.window, self.window_source = told, source

    def _note_accepted(self, at: float, call: CallUsage) -> tuple[ev.Event, ...]:
        """A call the API took: it bounds the window from below, and the first of a fresh
        session says where a restart starts."""
        self._largest_accepted = max(self._largest_accepted, call.context_tokens)
        if self.refusal is not None:
            self.refusal = self.refusal.accepting(call.context_tokens)  # None: dropped
            self._settle_window()
        if not self._awaiting_floor:
            return ()
        self._awaiting_floor = False
        if any(message.tool_results for message in self.transcript.messages):
            return ()  # not its first request: the session has worked since
        self._restart_floor = call.prompt_tokens
        if self._restart_makes_room():
            return ()
        message = (
            f"this fresh session starts at {call.prompt_tokens:,} tokens, past the hard "
            f"threshold ({self._hard_tokens():,} of {self.window:,}): another restart "
            "would start there too, so it is not wound down at the threshold; it masks "
            "what it can, and restarts only if the API refuses the window"
        )
        return (ev.WarningRecorded(at=at, session=self.name, where="window", message=message),)

    def _learn_from_refusal(self, at: float, refused: int) -> tuple[ev.Event, ...]:
        """The API refused a prompt of about `refused` tokens (projected before the
        turn's end changed anything): when the session's own thresholds let that
        prompt through, the window is smaller than believed (core.window)."""
        told, source = self._told_window
        learned = learn_from_refusal(
            self.refusal,
            accepted=self._largest_accepted,
            refused=refused,
            news_below=int(self.limits.hard_threshold * told),
        )
        if learned == self.refusal:
            return ()
        self.refusal = learned
        self._settle_window()
        if learned is None:
            return ()
        return (
            ev.WindowLearned(
                at=at,
                session=self.name,
                window=self.window,
                accepted=learned.accepted,
                refused=learned.refused,
                believed=told,
                believed_source=source,
            ),
        )

    # -- the table -----------------------------------------------------------------------

    def _check(self, trigger: Trigger) -> Phase:
        target = TRANSITIONS[self.phase].get(trigger)
        if target is None:
            raise IllegalTransition(
                f"{self.name}: {trigger.value} is not allowed while {self.phase.value}"
            )
        return target

    def _move(self, at: float, trigger: Trigger) -> ev.PhaseChanged:
        target = self._check(trigger)
        before, self.phase = self.phase, target
        return ev.PhaseChanged(
            at=at, session=self.name, before=before.value, after=target.value, trigger=trigger.value
        )

    # -- turns ---------------------------------------------------------------------------

    def _begin_turn(self, prompt: str) -> None:
        self._turn = TurnState(prompt=prompt, streaming=True)
        self.transcript.append(Message.harness_prompt(prompt))
        self.tracker.observe_transcript_size(self.transcript.characters)

    def _messages_prompt(self, at: float, how: Delivery) -> tuple[str, tuple[ev.Event, ...]]:
        """The waiting messages as a prompt, taken off the queue; ("", ()) when none wait."""
        if not self.messages:
            return "", ()
        taken = self.messages.take()
        text = self.prompts.render(
            PromptKind.OPERATOR_MESSAGE, messages=messages_block(taken), session_name=self.name
        )
        numbers = tuple(message.number for message in taken)
        return text, (ev.MessageDelivered(at=at, session=self.name, numbers=numbers, how=how),)

    def _back_to_work(
        self, at: float, kind: PromptKind, how: Delivery, **fields: object
    ) -> tuple[PromptKind, str, tuple[ev.Event, ...]]:
        """The prompt that sends the agent back to its task (its turn begun): the waiting
        messages when there are any, since they say to carry on too, else `kind`'s."""
        text, delivered = self._messages_prompt(at, how)
        if text:
            kind = PromptKind.OPERATOR_MESSAGE
        else:
            text = self.prompts.render(kind, **fields)
        self._begin_turn(text)
        return kind, text, delivered

    def _send_after_stop(self, text: str, stop: bool) -> None:
        if stop:
            self._turn.stopping = StopFor.PROMPT
            self._turn.then = text
        else:
            self._begin_turn(text)

    # -- endings -------------------------------------------------------------------------

    def _end(self, at: float, trigger: Trigger, status: EndStatus, reason: str) -> Outcome:
        moved = self._move(at, trigger)
        self.end_status = status
        self._turn.streaming = False
        return Outcome(
            (EndSession(status, reason),),
            (
                moved,
                ev.SessionEnded(
                    at=at,
                    session=self.name,
                    status=status.value,
                    reason=reason,
                    restarts=self.counters.continuation,
                    masked_total=self.counters.masked_total,
                ),
            ),
        )


def news_key(reason: str) -> str:
    """A reason with its figures taken out: "only ~21,545 tokens maskable" and "only
    ~21,551" are the same news, said once."""
    return _DIGITS.sub("#", reason)
