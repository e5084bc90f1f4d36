"""The ContextManager: one session's context window, as a small explicit state machine.

Why a state machine, and why this shape
---------------------------------------
A session under management is always doing exactly one thing: running, having
old results masked, being wound down, writing its checkpoint, waiting for a
person, or restarting. Each of those accepts only some facts: an approval means
nothing while running, a checkpoint nothing while masking. Writing that down as
a table (below) makes every allowed move visible in one place, makes an
unexpected one an error instead of a silent wrong turn, and lets the tests walk
the table row by row.

The manager performs nothing. The runtime tells it what happened (an
Observation, with the time) and gets back an Outcome: Actions to carry out, in
order, and Events to record. Because it does no I/O and keeps no clock, the
same code drives the real Claude Code backend, the scripted one in tests, and
replays. An observation the current phase does not accept raises
IllegalTransition and leaves the manager exactly as it was.

Phases and triggers
-------------------
RUNNING --soft-pressure--> MASKING --mask-applied/failed--> RUNNING
RUNNING/MASKING --hard-pressure--> WINDING_DOWN --wind-down-done--> CHECKPOINTING
CHECKPOINTING --checkpoint-*--> AWAITING_APPROVAL | RESTARTING | STOPPED (at max_restarts)
AWAITING_APPROVAL --approved--> RESTARTING --restarted--> RUNNING;  --denied--> STOPPED
An emergency (prompt too long, usage past the window) skips the agent's own
checkpoint: a harness-made one goes straight to the checkpoint-* triggers.
Idle timeouts do not change phase: they disconnect and retry, or fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from mala_tui.core import events as ev
from mala_tui.core.actions import (
    Action,
    ApplyMask,
    Disconnect,
    EndSession,
    EndStatus,
    Interrupt,
    RequestApproval,
    RetryMode,
    RetryTurn,
    SendPrompt,
    StartFreshSession,
)
from mala_tui.core.checkpoint import (
    Checkpoint,
    CheckpointError,
    CheckpointOrigin,
    carryover_text,
    checkpoint_for_prompt,
    extract_checkpoint,
    harness_checkpoint,
)
from mala_tui.core.masking import MaskPlan, maskable, placeholder, plan_masking
from mala_tui.core.observations import (
    AgentFailed,
    ApprovalGiven,
    ApprovalPolicyChanged,
    Command,
    CompactionObserved,
    Decision,
    IdleTimedOut,
    MaskConfirmed,
    MaskFailed,
    MessageObserved,
    Observation,
    OperatorCommand,
    RestartCompleted,
    SessionIdentified,
    SessionTimedOut,
    ToolResultSeen,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.phases import (
    RETRYABLE_RESULTS,
    STREAMING,
    TRANSITIONS,
    IllegalTransition,
    Phase,
    Trigger,
)
from mala_tui.core.prompts import PromptKind, PromptSet
from mala_tui.core.transcript import Message, TextBlock, ToolCall, ToolResult, Transcript
from mala_tui.core.usage import ContextUsage, UsageTracker, Zone

_EXCERPT: Final = 300


@dataclass(frozen=True, slots=True)
class Limits:
    """The settings a manager needs, copied from the config (the core does not read it)."""

    soft_threshold: float = 0.40
    hard_threshold: float = 0.80
    mask_target_threshold: float = 0.0
    """Masking goes on down to this fraction: one cache miss buys room for many steps."""
    context_limit: int = 200_000
    keep_recent_observations: int = 2
    mask_min_batch_tokens: int = 30_000
    carryover_turns: int = 5
    max_restarts: int = 5
    require_approval: bool = False
    max_idle_retries: int = 2
    idle_retry_backoff: tuple[float, ...] = (0.0, 5.0, 15.0)
    disconnect_timeout: float = 10.0
    checkpoint_prompt_chars: int = 40_000
    """Bound on the checkpoint's copy in the continuation prompt (the full text is saved)."""
    max_mask_failures: int = 2
    """Masking is given up for the session after this many failures in a row."""


@dataclass(frozen=True, slots=True)
class Outcome:
    actions: tuple[Action, ...] = ()
    events: tuple[ev.Event, ...] = ()


@dataclass
class _Turn:
    """What is known of the turn in flight."""

    prompt: str = ""
    streaming: bool = False
    tool_calls: int = 0
    interrupting: bool = False
    after_interrupt: str | None = None
    """The prompt the runtime sends once the interrupted turn has ended."""


@dataclass
class _Pending:
    mask: MaskPlan | None = None
    mask_interrupted: bool = False
    """The mask stopped a running turn: the session must be resumed after it."""
    mask_trigger: Trigger | None = None
    mask_floor: int | None = None
    """Where masking means to bring the window down to, in tokens."""
    measure_from: int | None = None
    skip_reason: str | None = None
    work_ends_at: int | None = None
    """Transcript length when the wind-down began: what follows is not work to carry over."""
    skip_revision: int | None = None
    """Transcript revision when masking last found nothing: unchanged, nothing to redo."""
    restart_reason: str = ""


@dataclass
class _Counters:
    continuation: int = 0
    checkpoints: int = 0
    masked_total: int = 0
    masked_session: int = 0
    idle_retries: int = 0
    mask_failures: int = 0
    compactions: int = 0


class ContextManager:
    """Decides, for one agent session, when to mask, wind down, checkpoint and restart."""

    def __init__(self, *, name: str, task: str, limits: Limits, prompts: PromptSet) -> None:
        self.name = name
        self.task = task
        self.limits = limits
        self.prompts = prompts
        self.require_approval = limits.require_approval
        self.phase = Phase.RUNNING
        self.window = limits.context_limit
        self.window_reported = False
        self.session_id: str | None = None
        self.checkpoint: Checkpoint | None = None
        self.end_status: EndStatus | None = None
        self.transcript = Transcript()
        self.tracker = UsageTracker()
        self.counters = _Counters()
        self._turn = _Turn()
        self._pending = _Pending()
        self._started = False

    # -- what the UI and runtime read ------------------------------------------------

    @property
    def usage(self) -> ContextUsage:
        return self.tracker.current(self.window)

    @property
    def zone(self) -> Zone:
        return self.usage.zone(self.limits.soft_threshold, self.limits.hard_threshold)

    @property
    def continuation_count(self) -> int:
        return self.counters.continuation

    @property
    def streaming(self) -> bool:
        return self._turn.streaming

    # -- entry points ----------------------------------------------------------------

    def start(self, at: float) -> Outcome:
        """The first prompt: the task itself."""
        if self._started:
            raise IllegalTransition(f"{self.name}: already started")
        self._started = True
        self._begin_turn(self.task)
        return Outcome((SendPrompt(PromptKind.TASK, self.task),))

    def observe(self, observation: Observation) -> Outcome:
        """Take one fact in, decide. Raises IllegalTransition, changing nothing, when refused."""
        if not self._started:
            raise IllegalTransition(f"{self.name}: observe() before start()")
        match observation:
            case UsageObserved():
                return self._on_usage(observation)
            case MessageObserved():
                return self._on_message(observation)
            case SessionIdentified():
                self.session_id = observation.session_id
                return Outcome()
            case TurnEnded():
                return self._on_turn_ended(observation)
            case ToolResultSeen():
                return Outcome()  # the projection at each tool result is decided in a later step
            case MaskConfirmed():
                return self._on_mask_confirmed(observation)
            case MaskFailed():
                return self._on_mask_failed(observation)
            case ApprovalGiven():
                return self._on_approval(observation)
            case RestartCompleted():
                return self._on_restarted(observation)
            case IdleTimedOut():
                return self._on_idle(observation)
            case SessionTimedOut():
                self._require_streaming_or_paused("session timeout")
                return self._end(
                    observation.at,
                    Trigger.FAIL,
                    EndStatus.FAILED,
                    f"session timeout: {observation.seconds:g} s passed, retries included",
                )
            case AgentFailed():
                self._check(Trigger.FAIL)
                return self._end(observation.at, Trigger.FAIL, EndStatus.FAILED, observation.reason)
            case CompactionObserved():
                self.counters.compactions += 1
                return Outcome(
                    events=(
                        ev.CompactionSeen(
                            at=observation.at,
                            session=self.name,
                            trigger=observation.trigger,
                            blocked=observation.blocked,
                            pre_tokens=observation.pre_tokens,
                            post_tokens=observation.post_tokens,
                        ),
                    )
                )
            case OperatorCommand():
                return self._on_command(observation)
            case ApprovalPolicyChanged():
                if observation.required == self.require_approval:
                    return Outcome()
                self.require_approval = observation.required
                return Outcome(
                    events=(
                        ev.ApprovalPolicySet(
                            at=observation.at, session=self.name, required=observation.required
                        ),
                    )
                )
        raise TypeError(f"not an observation: {observation!r}")

    # -- the table -------------------------------------------------------------------

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

    def _require_streaming_or_paused(self, what: str) -> None:
        if self.phase not in STREAMING and self.phase is not Phase.PAUSED:
            raise IllegalTransition(f"{self.name}: {what} while {self.phase.value}")

    # -- usage -----------------------------------------------------------------------

    def _on_usage(self, obs: UsageObserved) -> Outcome:
        self.tracker.observe_call(obs.call)
        usage = self.usage
        events: list[ev.Event] = [self._usage_event(obs.at, usage, obs.notes)]
        if self._pending.measure_from is not None:
            before = self._pending.measure_from
            self._pending.measure_from = None
            events.append(
                ev.MaskMeasured(
                    at=obs.at,
                    session=self.name,
                    tokens_before=before,
                    tokens_after=usage.tokens,
                    reclaimed=before - usage.tokens,
                )
            )
        actions: list[Action] = []
        if self.phase is Phase.RUNNING and not self._turn.interrupting:
            decided = self._pressure_decision(obs.at, usage)
            actions += decided.actions
            events += decided.events
        elif (
            self.phase is Phase.MASKING
            and usage.zone(self.limits.soft_threshold, self.limits.hard_threshold) is Zone.HARD
            and not self._turn.interrupting
        ):
            # The window jumped past hard before the mask landed: wind down instead.
            self._pending.mask = None
            decided = self._wind_down(obs.at, usage)
            actions += decided.actions
            events += decided.events
        return Outcome(tuple(actions), tuple(events))

    def _pressure_decision(self, at: float, usage: ContextUsage) -> Outcome:
        if usage.pressure >= 1.0:
            return self._emergency(
                at, f"usage {usage.tokens} tokens is past the {self.window} window"
            )
        zone = usage.zone(self.limits.soft_threshold, self.limits.hard_threshold)
        if zone is Zone.HARD:
            return self._wind_down(at, usage)
        if zone is Zone.SOFT:
            goal = usage.tokens - int(self.limits.mask_target_threshold * self.window)
            return self._mask(at, usage, goal, Trigger.SOFT_PRESSURE)
        self._pending.skip_reason = None
        return Outcome()

    def _usage_event(
        self, at: float, usage: ContextUsage, notes: tuple[str, ...] = ()
    ) -> ev.UsageRecorded:
        call = usage.call
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
        )

    # -- masking ---------------------------------------------------------------------

    def _mask(self, at: float, usage: ContextUsage, goal: int, trigger: Trigger) -> Outcome:
        if self.counters.mask_failures >= self.limits.max_mask_failures:
            return self._skip(at, usage, "masking failed twice in a row; not tried again")
        if (
            trigger is Trigger.SOFT_PRESSURE
            and self._pending.skip_revision == self.transcript.revision
        ):
            # Nothing was worth masking and no result has come since: planning again
            # would find the same (the batch minimum does not depend on the pressure).
            return Outcome()
        plan = self._plan_mask(goal, trigger)
        if not plan:
            return self._skip(at, usage, plan.skipped_reason or "nothing to mask")
        moved = self._move(at, trigger)
        self._pending.mask = plan
        self._pending.mask_trigger = trigger
        self._pending.mask_floor = usage.tokens - goal
        self._pending.skip_reason = None
        self._pending.skip_revision = None
        interrupt = self._turn.streaming
        self._turn.interrupting = interrupt
        self._turn.after_interrupt = None
        self._pending.mask_interrupted = interrupt
        resume = (
            self.prompts.render(PromptKind.MASK_RESUME, masked_count=len(plan.ids))
            if interrupt
            else None
        )
        return Outcome((ApplyMask(plan, interrupt, resume),), (moved,))

    def _plan_mask(self, goal: int, trigger: Trigger) -> MaskPlan:
        observations = self.transcript.observations()
        keep = self.limits.keep_recent_observations
        if trigger is Trigger.OPERATOR_MASK:
            chosen = {
                obs.call.id: placeholder(obs.call, obs.result)
                for obs in maskable(observations, keep)
                if obs.result is not None
            }
            return MaskPlan(chosen, 0) if chosen else MaskPlan(skipped_reason="nothing to mask")
        return plan_masking(
            observations,
            tokens_to_free=goal,
            keep_recent=keep,
            min_batch_tokens=self.limits.mask_min_batch_tokens,
        )

    def _replan_stopped_mask(self) -> Outcome:
        """The turn stopped for a mask: plan it again over every result the agent has now.

        The mask was decided as an API call began, before its results (and often the
        previous call's) reached the transcript; planned as decided, it would keep more
        recent results than `keep_recent` and rewrite them at the cache-miss price.
        """
        plan, trigger = self._pending.mask, self._pending.mask_trigger
        if plan is None or trigger is None:
            return Outcome()
        goal = self.usage.tokens - (self._pending.mask_floor or 0)
        fresh = self._plan_mask(max(goal, 0), trigger)
        if fresh and set(plan.ids) <= set(fresh.ids):
            self._pending.mask = fresh
            plan = fresh
        resume = self.prompts.render(PromptKind.MASK_RESUME, masked_count=len(plan.ids))
        return Outcome((ApplyMask(plan, False, resume),))

    def _skip(self, at: float, usage: ContextUsage, reason: str) -> Outcome:
        # Say it once per reason, not on every API call while the zone lasts.
        self._pending.skip_revision = self.transcript.revision
        if reason == self._pending.skip_reason:
            return Outcome()
        self._pending.skip_reason = reason
        return Outcome(
            events=(ev.MaskSkipped(at=at, session=self.name, reason=reason, tokens=usage.tokens),)
        )

    def _on_mask_confirmed(self, obs: MaskConfirmed) -> Outcome:
        plan = self._pending.mask
        if self.phase is not Phase.MASKING or plan is None:
            raise IllegalTransition(f"{self.name}: mask confirmed while {self.phase.value}")
        unknown = set(obs.tool_use_ids) - set(plan.ids)
        if unknown:
            raise IllegalTransition(
                f"{self.name}: confirmed results that were not planned: {sorted(unknown)}"
            )
        moved = self._move(obs.at, Trigger.MASK_APPLIED)
        applied = {tool_id: plan.placeholders[tool_id] for tool_id in obs.tool_use_ids}
        self.transcript.replace_results(applied)
        self.tracker.observe_transcript_size(self.transcript.characters)
        self.counters.masked_total += len(applied)
        self.counters.masked_session += len(applied)
        self.counters.mask_failures = 0
        tokens_before = self.usage.tokens
        self._pending.mask = None
        self._pending.measure_from = tokens_before
        if self._pending.mask_interrupted:
            # The runtime resumed the session on the masked transcript with ApplyMask's prompt.
            self._pending.mask_interrupted = False
            self._turn.interrupting = False
            self._begin_turn(
                self.prompts.render(PromptKind.MASK_RESUME, masked_count=len(plan.ids))
            )
        return Outcome(
            events=(
                moved,
                ev.MaskApplied(
                    at=obs.at,
                    session=self.name,
                    count=len(applied),
                    tool_use_ids=tuple(applied),
                    placeholders=tuple(applied.values()),
                    estimated_tokens=plan.estimated_tokens,
                    tokens_before=tokens_before,
                    total_masked=self.counters.masked_total,
                ),
            )
        )

    def _on_mask_failed(self, obs: MaskFailed) -> Outcome:
        moved = self._move(obs.at, Trigger.MASK_FAILED)
        self._pending.mask = None
        self.counters.mask_failures += 1
        resume: tuple[Action, ...] = ()
        if self._pending.mask_interrupted:
            # The turn was stopped for a mask that did not happen: let the agent carry on.
            self._pending.mask_interrupted = False
            self._turn.interrupting = False
            text = self.prompts.render(PromptKind.IDLE_RESUME, session_name=self.name)
            self._begin_turn(text)
            resume = (SendPrompt(PromptKind.IDLE_RESUME, text),)
        return Outcome(
            resume,
            events=(
                moved,
                ev.ErrorRecorded(at=obs.at, session=self.name, where="masking", message=obs.reason),
            ),
        )

    # -- wind-down, checkpoint, approval, restart -------------------------------------

    def _wind_down(self, at: float, usage: ContextUsage) -> Outcome:
        moved = self._move(at, Trigger.HARD_PRESSURE)
        self._pending.work_ends_at = len(self.transcript)
        interrupt = self._turn.streaming
        self._turn.interrupting = interrupt
        text = self.prompts.render(
            PromptKind.WIND_DOWN,
            percent=f"{usage.percent:.0f}",
            tokens_left=max(0, self.window - usage.tokens),
            tokens_used=usage.tokens,
            window=self.window,
        )
        self._pending.restart_reason = (
            f"hard threshold: {usage.tokens} of {self.window} tokens ({usage.percent:.0f}%)"
        )
        self._send_after_interrupt(text, interrupt)
        return Outcome(
            (SendPrompt(PromptKind.WIND_DOWN, text, interrupt_first=interrupt),),
            (
                moved,
                ev.WindDownSent(at=at, session=self.name, tokens=usage.tokens, window=self.window),
            ),
        )

    def _request_checkpoint(self, at: float, trigger: Trigger) -> Outcome:
        moved = self._move(at, trigger)
        if self._pending.work_ends_at is None:
            self._pending.work_ends_at = len(self.transcript)
        usage = self.usage
        interrupt = self._turn.streaming
        self._turn.interrupting = interrupt
        text = self.prompts.render(
            PromptKind.CHECKPOINT_REQUEST,
            percent=f"{usage.percent:.0f}",
            tokens_used=usage.tokens,
            window=self.window,
        )
        self._send_after_interrupt(text, interrupt)
        return Outcome(
            (SendPrompt(PromptKind.CHECKPOINT_REQUEST, text, interrupt_first=interrupt),),
            (moved, ev.CheckpointRequested(at=at, session=self.name, tokens=usage.tokens)),
        )

    def _emergency(self, at: float, reason: str) -> Outcome:
        """The agent can no longer write a checkpoint: build one from the transcript."""
        checkpoint = self._harness_checkpoint(reason)
        self._pending.restart_reason = f"emergency: {reason}"
        self._pending.mask = None
        streaming = self._turn.streaming
        outcome = self._checkpoint_ready(at, checkpoint)
        if streaming and not self.phase.terminal:
            # Usage past the window mid-turn: stop the turn before restarting.
            self._turn.interrupting = True
            return Outcome((Interrupt(), *outcome.actions), outcome.events)
        return outcome

    def _harness_checkpoint(self, reason: str) -> Checkpoint:
        # The goal is the task, not this session's first prompt (after a restart that
        # is the continuation prompt), and what earlier checkpoints listed stays listed.
        return harness_checkpoint(
            self.transcript,
            reason=reason,
            carryover_turns=self.limits.carryover_turns,
            goal=self.task,
            previous=self.checkpoint,
        )

    def _checkpoint_ready(self, at: float, checkpoint: Checkpoint) -> Outcome:
        if self.counters.continuation >= self.limits.max_restarts:
            trigger = Trigger.CHECKPOINT_AT_LIMIT
        elif self.require_approval:
            trigger = Trigger.CHECKPOINT_FOR_APPROVAL
        else:
            trigger = Trigger.CHECKPOINT_ACCEPTED
        self._check(trigger)
        self.checkpoint = checkpoint
        self.counters.checkpoints += 1
        saved = self._checkpoint_event(at, checkpoint)
        if trigger is Trigger.CHECKPOINT_AT_LIMIT:
            ended = self._end(
                at,
                trigger,
                EndStatus.STOPPED,
                f"max restarts ({self.limits.max_restarts}) reached; checkpoint kept",
            )
            return Outcome(ended.actions, (saved, *ended.events))
        moved = self._move(at, trigger)
        if trigger is Trigger.CHECKPOINT_FOR_APPROVAL:
            reason = self._pending.restart_reason or "restart"
            return Outcome(
                (RequestApproval(checkpoint, self.counters.checkpoints, reason),),
                (
                    saved,
                    moved,
                    ev.ApprovalRequested(
                        at=at,
                        session=self.name,
                        checkpoint_number=self.counters.checkpoints,
                        reason=reason,
                    ),
                ),
            )
        restart = self._restart(at, approved_by="auto")
        return Outcome(restart.actions, (saved, moved, *restart.events))

    def _checkpoint_event(self, at: float, checkpoint: Checkpoint) -> ev.CheckpointSaved:
        return ev.CheckpointSaved(
            at=at,
            session=self.name,
            number=self.counters.checkpoints,
            origin=checkpoint.origin.value,
            text=checkpoint.text,
        )

    def _restart(self, at: float, *, approved_by: str) -> Outcome:
        assert self.checkpoint is not None
        number = self.counters.continuation + 1
        carried = (
            "(included in the checkpoint above)"
            if self.checkpoint.harness_made
            else carryover_text(
                self.transcript.carryover(
                    self.limits.carryover_turns, before=self._pending.work_ends_at
                )
            )
        )
        prompt = self.prompts.render(
            PromptKind.CONTINUATION,
            checkpoint=checkpoint_for_prompt(self.checkpoint, self.limits.checkpoint_prompt_chars),
            carryover=carried,
            continuation_number=number,
        )
        self._turn = _Turn(prompt=prompt)
        return Outcome(
            (StartFreshSession(prompt, self.checkpoint, number),),
            (
                ev.Restarted(
                    at=at,
                    session=self.name,
                    continuation=number,
                    reason=self._pending.restart_reason or "restart",
                    tokens_before=self.usage.tokens,
                    checkpoint_number=self.counters.checkpoints,
                    approved_by=approved_by,
                ),
            ),
        )

    def _on_approval(self, obs: ApprovalGiven) -> Outcome:
        if not isinstance(obs.decision, Decision):
            raise IllegalTransition(f"{self.name}: unknown decision {obs.decision!r}")
        trigger = Trigger.DENIED if obs.decision is Decision.DENY else Trigger.APPROVED
        self._check(trigger)
        edited: Checkpoint | None = None
        if obs.decision is Decision.EDIT:
            text = (obs.edited_text or "").strip()
            if not text:
                raise IllegalTransition(f"{self.name}: the edited checkpoint is empty")
            edited = Checkpoint(text, CheckpointOrigin.EDITED)
        decided = ev.ApprovalDecided(
            at=obs.at,
            session=self.name,
            decision=obs.decision,
            decided_by=obs.decided_by,
        )
        if trigger is Trigger.DENIED:
            ended = self._end(
                obs.at, trigger, EndStatus.DENIED, f"restart denied by {obs.decided_by}"
            )
            return Outcome(ended.actions, (decided, *ended.events))
        events: list[ev.Event] = [decided]
        if edited is not None:
            self.checkpoint = edited
            self.counters.checkpoints += 1
            events.append(self._checkpoint_event(obs.at, edited))
        events.append(self._move(obs.at, trigger))
        restart = self._restart(obs.at, approved_by=obs.decided_by)
        return Outcome(restart.actions, (*events, *restart.events))

    def _on_restarted(self, obs: RestartCompleted) -> Outcome:
        moved = self._move(obs.at, Trigger.RESTARTED)
        self.counters.continuation += 1
        self.counters.masked_session = 0
        self.counters.idle_retries = 0
        self.counters.mask_failures = 0
        self.tracker.reset()
        self.session_id = obs.session_id
        self._pending = _Pending()
        prompt = self._turn.prompt
        self.transcript = Transcript()
        self._begin_turn(prompt)
        return Outcome(events=(moved,))

    # -- turns -----------------------------------------------------------------------

    def _send_after_interrupt(self, text: str, interrupt: bool) -> None:
        if interrupt:
            self._turn.after_interrupt = text
        else:
            self._begin_turn(text)

    def _begin_turn(self, prompt: str) -> None:
        self._turn = _Turn(prompt=prompt, streaming=True)
        self.transcript.append(Message.user_text(prompt))
        self.tracker.observe_transcript_size(self.transcript.characters)

    def _on_message(self, obs: MessageObserved) -> Outcome:
        self.transcript.append(obs.message)
        self.tracker.observe_transcript_size(self.transcript.characters)
        events: list[ev.Event] = []
        for block in obs.message.blocks:
            if isinstance(block, ToolCall):
                self._turn.tool_calls += 1
                events.append(
                    ev.MessageRecorded(
                        at=obs.at,
                        session=self.name,
                        role=obs.message.role.value,
                        kind="tool_call",
                        tool=block.name,
                        excerpt=_excerpt(_describe_input(block)),
                    )
                )
            elif isinstance(block, ToolResult):
                events.append(
                    ev.MessageRecorded(
                        at=obs.at,
                        session=self.name,
                        role=obs.message.role.value,
                        kind="tool_result",
                        excerpt=_excerpt(block.content),
                        size=len(block.content),
                        is_error=block.is_error,
                    )
                )
            elif isinstance(block, TextBlock) and block.text.strip():
                events.append(
                    ev.MessageRecorded(
                        at=obs.at,
                        session=self.name,
                        role=obs.message.role.value,
                        kind="text",
                        excerpt=_excerpt(block.text),
                        size=len(block.text),
                    )
                )
        return Outcome(events=tuple(events))

    def _on_turn_ended(self, obs: TurnEnded) -> Outcome:
        if not self._turn.interrupting and self.phase not in STREAMING:
            raise IllegalTransition(f"{self.name}: a turn ended while {self.phase.value}")
        if obs.context_window:
            self.window = obs.context_window
            self.window_reported = True
        if obs.session_id:
            self.session_id = obs.session_id
        self.tracker.observe_turn(obs.summed_usage)
        self._turn.streaming = False
        finished = not obs.is_error and obs.terminal_reason in (None, "completed")
        if self._turn.interrupting:
            return self._after_interrupt(obs, finished)
        if obs.prompt_too_long:
            return self._emergency(obs.at, "the prompt is too long for the window")
        if obs.is_error:
            return self._on_turn_error(obs)
        self.counters.idle_retries = 0
        if self.phase is Phase.RUNNING:
            return self._end(
                obs.at, Trigger.TASK_DONE, EndStatus.DONE, "the agent finished its task"
            )
        if self.phase is Phase.WINDING_DOWN:
            return self._request_checkpoint(obs.at, Trigger.WIND_DOWN_DONE)
        if self.phase is Phase.CHECKPOINTING:
            try:
                checkpoint = extract_checkpoint(obs.result_text)
            except CheckpointError as exc:
                checkpoint = self._harness_checkpoint(str(exc))
            return self._checkpoint_ready(obs.at, checkpoint)
        raise IllegalTransition(f"{self.name}: a turn ended while {self.phase.value}")

    def _after_interrupt(self, obs: TurnEnded, finished: bool) -> Outcome:
        """The turn we stopped is over. Empty outcome: the action that stopped it goes on.

        A mask comes back planned anew, over the results the agent saw before it stopped.
        """
        self._turn.interrupting = False
        if finished and self.phase in (Phase.RUNNING, Phase.MASKING):
            # The agent finished its task before the interrupt landed: nothing left to manage.
            self._pending.mask = None
            return self._end(
                obs.at, Trigger.TASK_DONE, EndStatus.DONE, "the agent finished its task"
            )
        if obs.prompt_too_long and self.phase in STREAMING and self.phase is not Phase.RESTARTING:
            return self._emergency(obs.at, "the prompt is too long for the window")
        if self.phase is Phase.MASKING:
            return self._replan_stopped_mask()
        follow_up = self._turn.after_interrupt
        if follow_up is not None:
            self._begin_turn(follow_up)
        return Outcome()

    def _on_turn_error(self, obs: TurnEnded) -> Outcome:
        reason = obs.terminal_reason or obs.subtype
        if reason not in RETRYABLE_RESULTS:
            return self._end(
                obs.at,
                Trigger.FAIL,
                EndStatus.FAILED,
                f"the turn ended with {reason}: {_excerpt(obs.result_text)}",
            )
        decided = self._retry(obs.at, f"{reason} (status {obs.api_error_status})")
        event = ev.ApiErrorSeen(
            at=obs.at,
            session=self.name,
            terminal_reason=reason,
            status=obs.api_error_status,
            retry=self.counters.idle_retries,
            decision=_decision_name(decided.actions),
        )
        return Outcome(decided.actions, (event, *decided.events))

    def _retry(self, at: float, cause: str) -> Outcome:
        """Seed 002's recovery: disconnect always; then resume, start fresh, or fail."""
        disconnect = Disconnect(self.limits.disconnect_timeout)
        if self.counters.idle_retries >= self.limits.max_idle_retries:
            return self._fail_after(
                at, disconnect, f"{cause}: max retries ({self.limits.max_idle_retries}) exceeded"
            )
        retry = self.counters.idle_retries + 1
        backoff = self.limits.idle_retry_backoff
        delay = backoff[min(retry - 1, len(backoff) - 1)]
        if self.session_id is not None:
            prompt = self.prompts.render(PromptKind.IDLE_RESUME, session_name=self.name)
            action = RetryTurn(RetryMode.RESUME, delay, prompt, self.session_id)
        elif self._turn.tool_calls == 0:
            # Nothing happened that a fresh start could repeat: same prompt, new session.
            prompt = self._turn.prompt
            action = RetryTurn(RetryMode.FRESH, delay, prompt, None)
            self.transcript = Transcript()
        else:
            return self._fail_after(
                at,
                disconnect,
                f"{cause}: cannot retry: {self._turn.tool_calls} tool calls occurred "
                "without session context",
            )
        self.counters.idle_retries = retry
        self._begin_turn(prompt)
        return Outcome((disconnect, action))

    def _fail_after(self, at: float, disconnect: Disconnect, reason: str) -> Outcome:
        ended = self._end(at, Trigger.FAIL, EndStatus.FAILED, reason)
        return Outcome((disconnect, *ended.actions), ended.events)

    def _on_idle(self, obs: IdleTimedOut) -> Outcome:
        if self.phase not in STREAMING:
            raise IllegalTransition(f"{self.name}: idle timeout while {self.phase.value}")
        decided = self._retry(obs.at, f"idle for {obs.idle_seconds:.3g} s")
        retry = next((a for a in decided.actions if isinstance(a, RetryTurn)), None)
        ended = next((a for a in decided.actions if isinstance(a, EndSession)), None)
        event = ev.IdleTimedOut(
            at=obs.at,
            session=self.name,
            idle_seconds=obs.idle_seconds,
            retry=self.counters.idle_retries,
            decision=_decision_name(decided.actions),
            delay=retry.delay if retry else 0.0,
            reason=ended.reason if ended else "",
        )
        return Outcome(decided.actions, (event, *decided.events))

    # -- the operator ----------------------------------------------------------------

    def _on_command(self, obs: OperatorCommand) -> Outcome:
        at = obs.at
        match obs.command:
            case Command.STOP:
                self._check(Trigger.STOP)
                return self._end(at, Trigger.STOP, EndStatus.STOPPED, "stopped by the operator")
            case Command.PAUSE:
                moved = self._move(at, Trigger.PAUSE)
                interrupt = self._turn.streaming
                self._turn.interrupting = interrupt
                return Outcome((Interrupt(),) if interrupt else (), (moved,))
            case Command.RESUME:
                moved = self._move(at, Trigger.RESUME)
                text = self.prompts.render(PromptKind.OPERATOR_RESUME, session_name=self.name)
                self._begin_turn(text)
                return Outcome((SendPrompt(PromptKind.OPERATOR_RESUME, text),), (moved,))
            case Command.MASK_NOW:
                self._check(Trigger.OPERATOR_MASK)
                return self._mask(at, self.usage, 0, Trigger.OPERATOR_MASK)
            case Command.RESTART_NOW:
                if self.phase in (Phase.STOPPED, Phase.FAILED):
                    return self._restart_by_hand(at)
                self._check(Trigger.OPERATOR_CHECKPOINT)
                self._pending.restart_reason = "asked by the operator"
                return self._request_checkpoint(at, Trigger.OPERATOR_CHECKPOINT)
        raise IllegalTransition(f"{self.name}: unknown command {obs.command!r}")

    def _restart_by_hand(self, at: float) -> Outcome:
        self._check(Trigger.RESTART_BY_HAND)
        events: list[ev.Event] = []
        if self.checkpoint is None:
            self.checkpoint = self._harness_checkpoint(
                "restarted by hand after the session ended without a checkpoint"
            )
            self.counters.checkpoints += 1
            events.append(self._checkpoint_event(at, self.checkpoint))
        self._pending.restart_reason = "restarted by the operator"
        self.end_status = None
        events.append(self._move(at, Trigger.RESTART_BY_HAND))
        restart = self._restart(at, approved_by="operator")
        return Outcome(restart.actions, (*events, *restart.events))

    # -- endings ---------------------------------------------------------------------

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


def _decision_name(actions: tuple[Action, ...]) -> str:
    for action in actions:
        if isinstance(action, RetryTurn):
            return action.mode.value
        if isinstance(action, EndSession):
            return "fail_fast" if "cannot retry" in action.reason else "give_up"
    return "none"


def _describe_input(call: ToolCall) -> str:
    parts = [f"{key}={value!s}" for key, value in call.input.items()]
    return ", ".join(parts)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 1] + "…"
