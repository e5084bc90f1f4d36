"""The ContextManager: one session's context window, as a small explicit state machine.

The manager performs nothing. The runtime tells it what happened (an
Observation, with the time) and gets back an Outcome: Actions to carry out, in
order, and Events to record. Because it does no I/O and keeps no clock, the
same code drives the real Claude Code backend, the scripted one in tests, and
replays. An observation the current phase does not accept raises
IllegalTransition and leaves the manager exactly as it was: every handler checks
before it changes anything.

Where each part lives
---------------------
- core/phases.py: the phase table (which trigger moves which phase where);
- core/manager_state.py: what the manager knows, and the moves every part shares;
- core/masking_decisions.py: when to mask and how much, in measured tokens,
  including the projection at each tool result;
- core/restart_flow.py: wind-down, checkpoint, approval, restart, emergency;
- core/retry.py and core/recovery.py: the recovery rules after a hang or an API error,
  and the manager's side of them;
- here: dispatch, usage, and the turn lifecycle (messages, a turn's end, stops).
"""

from __future__ import annotations

from collections.abc import Sequence

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus, SendPrompt
from mala_tui.core.calibration import Density
from mala_tui.core.checkpoint import Checkpoint, CheckpointError, extract_checkpoint
from mala_tui.core.limits import Limits
from mala_tui.core.manager_state import Counters, ManagerState, Outcome, StopFor
from mala_tui.core.mask_economics import GrowthRate
from mala_tui.core.masking import call_key
from mala_tui.core.masking_decisions import MaskingDecisions
from mala_tui.core.message_events import compaction_event, message_events
from mala_tui.core.observations import (
    AgentFailed,
    ApprovalGiven,
    ApprovalPolicyChanged,
    BudgetReached,
    CompactionObserved,
    IdleTimedOut,
    ManageModeChanged,
    MaskConfirmed,
    MaskFailed,
    MessageForAgent,
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
from mala_tui.core.operator_flow import OperatorFlow
from mala_tui.core.operator_messages import Delivery, MessageQueue
from mala_tui.core.phases import STREAMING, Cause, IllegalTransition, ManageMode, Phase, Trigger
from mala_tui.core.prompts import PromptKind, PromptSet
from mala_tui.core.recovery import Recovery
from mala_tui.core.restart_flow import RestartFlow
from mala_tui.core.resume_plan import SessionResume
from mala_tui.core.transcript import Message, Role, Transcript
from mala_tui.core.usage import ContextUsage, Zone, estimate_tokens
from mala_tui.core.window import RefusalBounds, WindowSource

__all__ = ["ContextManager", "Limits", "Outcome"]

#: A turn's end that is the agent's own: its task is finished.
_FINISHED = (None, "completed")
#: How a turn ends when the post-tool hook stopped it.
HOOK_STOPPED = "hook_stopped"


class ContextManager:
    """Decides, for one agent session, when to mask, wind down, checkpoint and restart."""

    def __init__(self, *, name: str, task: str, limits: Limits, prompts: PromptSet) -> None:
        self._state = ManagerState(name=name, task=task, limits=limits, prompts=prompts)
        self._restart_flow = RestartFlow(self._state)
        self._masking = MaskingDecisions(self._state, self._restart_flow)
        self._recovery = Recovery(self._state)
        self._operator = OperatorFlow(self._state, self._masking, self._restart_flow)

    # -- what the UI and runtime read ------------------------------------------------

    @property
    def name(self) -> str:
        return self._state.name

    @property
    def limits(self) -> Limits:
        return self._state.limits

    @property
    def phase(self) -> Phase:
        return self._state.phase

    @property
    def manage(self) -> ManageMode:
        return self._state.manage

    @manage.setter
    def manage(self, mode: ManageMode) -> None:
        self._state.manage = mode

    @property
    def require_approval(self) -> bool:
        return self._state.require_approval

    @property
    def session_id(self) -> str | None:
        return self._state.session_id

    @property
    def checkpoint(self) -> Checkpoint | None:
        return self._state.checkpoint

    @property
    def end_status(self) -> EndStatus | None:
        return self._state.end_status

    @property
    def transcript(self) -> Transcript:
        return self._state.transcript

    @property
    def messages(self) -> MessageQueue:
        return self._state.messages

    @property
    def counters(self) -> Counters:
        return self._state.counters

    @property
    def growth(self) -> GrowthRate:
        return self._state.growth

    @property
    def density(self) -> Density:
        return self._state.density

    @property
    def usage(self) -> ContextUsage:
        return self._state.usage

    def projected_tokens(self) -> int:
        """The next request's size, as decisions at a tool result see it."""
        return self._state.projected_tokens()

    @property
    def window(self) -> int:
        return self._state.window

    @property
    def window_source(self) -> WindowSource:
        return self._state.window_source

    @property
    def refusal(self) -> RefusalBounds | None:
        return self._state.refusal

    @property
    def window_reported(self) -> bool:
        return self._state.window_source is WindowSource.CLI

    @property
    def zone(self) -> Zone:
        return self._state.usage.zone(
            self._state.limits.soft_threshold, self._state.limits.hard_threshold
        )

    @property
    def continuation_count(self) -> int:
        return self._state.counters.continuation

    @property
    def streaming(self) -> bool:
        return self._state.turn.streaming

    @property
    def stopping(self) -> StopFor | None:
        """Why the turn in flight is being stopped, if it is."""
        return self._state.turn.stopping

    # -- entry points ----------------------------------------------------------------

    def resume_from(
        self, plan: SessionResume, gap_seconds: float, history: Sequence[Message] = ()
    ) -> None:
        """Have `start` continue where an interrupted run left this session (see resume_plan).

        `history`: the agent session's conversation so far, when it is resumed by its id
        (what masking decides on; the agent's window holds it all).
        """
        if self._state.started:
            raise IllegalTransition(f"{self._state.name}: already started")
        self._state.resume = (plan, gap_seconds, tuple(history))
        if plan.carried.manage is not None:  # set now: the session's first event says it
            self._state.manage = plan.carried.manage

    def start(self, at: float) -> Outcome:
        """The first prompt: the task itself, or where a resumed run left the session."""
        if self._state.started:
            raise IllegalTransition(f"{self._state.name}: already started")
        self._state.started = True
        if self._state.resume is not None:
            return self._restart_flow.resumed_start(at, *self._state.resume)
        self._state.begin_turn(self._state.task)
        return Outcome((SendPrompt(PromptKind.TASK, self._state.task),))

    def observe(self, observation: Observation) -> Outcome:
        """Take one fact in, decide. Raises IllegalTransition, changing nothing, when refused."""
        if not self._state.started:
            raise IllegalTransition(f"{self._state.name}: observe() before start()")
        return self._operator.stop_for_messages(self._dispatch(observation))

    def _dispatch(self, observation: Observation) -> Outcome:
        match observation:
            case UsageObserved():
                return self._on_usage(observation)
            case MessageObserved():
                return self._on_message(observation)
            case ToolResultSeen():
                return self._masking.on_tool_result_seen(observation)
            case SessionIdentified():
                self._state.session_id = observation.session_id
                return Outcome()
            case TurnEnded():
                return self._on_turn_ended(observation)
            case MaskConfirmed():
                return self._masking.on_mask_confirmed(observation)
            case MaskFailed():
                return self._masking.on_mask_failed(observation)
            case ApprovalGiven():
                return self._restart_flow.on_approval(observation)
            case RestartCompleted():
                return self._restart_flow.on_restarted(observation)
            case IdleTimedOut():
                return self._recovery.on_idle(observation)
            case SessionTimedOut():
                if self._state.phase not in STREAMING and self._state.phase is not Phase.PAUSED:
                    raise IllegalTransition(
                        f"{self._state.name}: session timeout while {self._state.phase}"
                    )
                return self._state.end(
                    observation.at,
                    Trigger.FAIL,
                    EndStatus.FAILED,
                    f"session timeout: {observation.seconds:g} s passed, retries included",
                )
            case AgentFailed():
                self._state.check(Trigger.FAIL)
                return self._state.end(
                    observation.at, Trigger.FAIL, EndStatus.FAILED, observation.reason
                )
            case CompactionObserved():
                self._state.counters.compactions += 1
                if not observation.blocked:
                    # The CLI rewrote the conversation itself: the pairs fitted so far
                    # describe a transcript it no longer sends.
                    self._state.calibration.restart()
                return Outcome(events=(compaction_event(self._state.name, observation),))
            case OperatorCommand():
                return self._operator.on_command(observation)
            case MessageForAgent():
                return self._operator.on_message_for_agent(observation)
            case ApprovalPolicyChanged():
                return self._operator.on_approval_policy(observation)
            case BudgetReached():
                return self._operator.on_budget(observation)
            case ManageModeChanged():
                return self._operator.on_manage_mode(observation)
        raise TypeError(f"not an observation: {observation!r}")

    def _deliver_now(self, at: float) -> Outcome:
        """The agent's turn is over and messages wait: they are its next prompt."""
        kind, text, delivered = self._state.back_to_work(
            at, PromptKind.OPERATOR_RESUME, Delivery.IDLE, session_name=self._state.name
        )
        return Outcome((SendPrompt(kind, text),), delivered)

    # -- usage -----------------------------------------------------------------------

    def _on_usage(self, obs: UsageObserved) -> Outcome:
        self._state.tracker.observe_call(obs.call)
        noted = self._state.note_accepted(obs.at, obs.call)
        self._state.calibration.observe(
            estimate_tokens(self._state.transcript.characters), obs.call.context_tokens
        )
        self._state.chars_at_call = self._state.transcript.characters
        if obs.starts_call:
            self._state.growth.observe(obs.call.context_tokens)
        if self._state.turn.stopping is StopFor.PROJECTION and obs.starts_call:
            self._state.turn.stopping = None  # a new request: the CLI did not stop at the hook
        usage = self._state.usage
        events: list[ev.Event] = [self._usage_event(obs.at, usage, obs.notes), *noted]
        if self._state.pending.measure_from is not None:
            before = self._state.pending.measure_from
            self._state.pending.measure_from = None
            events.append(
                ev.MaskMeasured(
                    at=obs.at,
                    session=self._state.name,
                    tokens_before=before,
                    tokens_after=usage.tokens,
                    reclaimed=before - usage.tokens,
                )
            )
        decided = self._decide_on(obs.at, usage)
        return Outcome(decided.actions, (*events, *decided.events))

    def _usage_event(
        self, at: float, usage: ContextUsage, notes: tuple[str, ...] = ()
    ) -> ev.UsageRecorded:
        call = usage.call
        density = self._state.density
        return ev.UsageRecorded(
            at=at,
            session=self._state.name,
            tokens=usage.tokens,
            window=usage.window,
            source=usage.source.value,
            input_tokens=call.input_tokens if call else 0,
            cache_creation_input_tokens=call.cache_creation_input_tokens if call else 0,
            cache_read_input_tokens=call.cache_read_input_tokens if call else 0,
            output_tokens=call.output_tokens if call else 0,
            notes=notes,
            window_source=self._state.window_source.value,
            density=round(density.ratio, 4),
            density_measured=density.measured,
        )

    def _decide_on(self, at: float, usage: ContextUsage) -> Outcome:
        """Act on a figure of the window, measured or (labelled) estimated."""
        if self._state.manage is ManageMode.OFF or self._state.turn.stopping is not None:
            return Outcome()
        if self._state.phase is Phase.RUNNING:
            return self._pressure_decision(at, usage)
        if self._state.phase is Phase.MASKING and self._zone_now(usage) is Zone.HARD:
            # The window jumped past hard before the mask landed: wind down instead.
            if self._state.manage is ManageMode.FULL:
                self._state.pending.mask = None
            return self._restart_flow.wind_down(at, usage.tokens, Cause.HARD_THRESHOLD)
        return Outcome()

    def _zone_now(self, usage: ContextUsage) -> Zone:
        return self._state.decision_zone(
            usage.zone(self._state.limits.soft_threshold, self._state.limits.hard_threshold),
            usage.tokens,
        )

    def _pressure_decision(self, at: float, usage: ContextUsage) -> Outcome:
        if usage.pressure >= 1.0:
            return self._restart_flow.emergency(
                at, f"usage {usage.tokens} tokens is past the {self._state.window} window"
            )
        zone = self._zone_now(usage)
        if zone is Zone.HARD and self._state.manage is ManageMode.FULL:
            return self._restart_flow.wind_down(at, usage.tokens, Cause.HARD_THRESHOLD)
        if zone is not Zone.NORMAL:
            return self._masking.mask(at, usage.tokens, Trigger.SOFT_PRESSURE, Cause.SOFT_THRESHOLD)
        self._state.pending.skip_reason = None
        return Outcome()

    # -- turns -----------------------------------------------------------------------

    def _on_message(self, obs: MessageObserved) -> Outcome:
        self._state.transcript.append(obs.message)
        self._state.tracker.observe_transcript_size(self._state.transcript.characters)
        self._state.turn.tool_calls += len(obs.message.tool_calls)
        for tool_call in obs.message.tool_calls:
            key = call_key(tool_call)
            if key in self._state.masked_keys:
                # The agent fetched again what a mask took: it needs it, so keep it.
                self._state.needed.add(key)
                self._state.counters.refetched += 1
        events: list[ev.Event] = list(message_events(obs.at, self._state.name, obs.message))
        if (
            obs.message.role is Role.ASSISTANT
            and not obs.message.from_harness  # Claude Code's own error: no call was made
            and self._state.tracker.latest_call is None
            and not self._state.usage_missing
        ):
            # Usage comes as a call starts, before any of its content: an answer
            # without it means this agent reports none.
            self._state.usage_missing = True
            if self._state.manage is not ManageMode.OFF:
                events.append(self._estimate_warning(obs.at))
        if self._state.usage_missing and self._state.tracker.latest_call is None:
            # The labelled estimate is all there is, so decide on it.
            decided = self._decide_on(obs.at, self._state.usage)
            return Outcome(decided.actions, (*events, *decided.events))
        return Outcome(events=tuple(events))

    def _estimate_warning(self, at: float) -> ev.WarningRecorded:
        usage = self._state.usage
        return ev.WarningRecorded(
            at=at,
            session=self._state.name,
            where="usage",
            message=(
                "the agent reports no per-call usage: decisions use the "
                f"{usage.source.value} figure ({usage.tokens:,} tokens), not a measurement"
            ),
        )

    def _on_turn_ended(self, obs: TurnEnded) -> Outcome:
        stopping = self._state.turn.stopping
        if (
            stopping is None
            and obs.terminal_reason == HOOK_STOPPED
            and self._state.phase is Phase.RUNNING
        ):
            # Only our post-tool hook ends a turn this way: a stop it was asked for, whose
            # request to stop was lost on the way (say, to an item handled out of order).
            stopping = self._state.turn.stopping = StopFor.PROJECTION
        if stopping is None:
            ordinary_end = self._state.phase in (
                Phase.RUNNING,
                Phase.WINDING_DOWN,
                Phase.CHECKPOINTING,
            )
            if self._state.phase not in STREAMING or not (
                ordinary_end or obs.is_error or obs.prompt_too_long
            ):
                raise IllegalTransition(
                    f"{self._state.name}: a turn ended while {self._state.phase.value}"
                )
            if obs.prompt_too_long:  # the emergency's own check, before anything changes
                self._state.check(
                    self._restart_flow.checkpoint_trigger()
                    if self._state.manage is ManageMode.FULL
                    else Trigger.FAIL
                )
        # The request the API refused, as projected before this turn's end moves anything.
        refused = (
            self._state.projected_tokens()
            if obs.refused_by_api and self._state.tracker.latest_call is not None
            else None
        )
        if obs.context_window:
            self._state.set_told_window(obs.context_window, WindowSource.CLI)
        outcome = self._turn_outcome(obs, stopping)
        # Learnt once the turn's end is known to be legal: a refused one changes nothing.
        learned = self._state.learn_from_refusal(obs.at, refused) if refused is not None else ()
        return Outcome(outcome.actions, (*learned, *outcome.events))

    def _turn_outcome(self, obs: TurnEnded, stopping: StopFor | None) -> Outcome:
        if obs.session_id:
            self._state.session_id = obs.session_id
        self._state.tracker.observe_turn(obs.summed_usage)
        self._state.turn.streaming = False
        finished = not obs.is_error and obs.terminal_reason in _FINISHED
        if stopping is not None:
            return self._after_stop(obs, stopping, finished)
        if obs.prompt_too_long:
            return self._restart_flow.emergency(obs.at, "the prompt is too long for the window")
        if obs.is_error:
            return self._recovery.on_turn_error(obs)
        self._state.counters.idle_retries = 0
        if self._state.phase is Phase.RUNNING and self._state.messages:
            return self._deliver_now(obs.at)
        if self._state.phase is Phase.RUNNING:
            return self._state.end(
                obs.at, Trigger.TASK_DONE, EndStatus.DONE, "the agent finished its task"
            )
        if self._state.phase is Phase.WINDING_DOWN:
            return self._restart_flow.request_checkpoint(obs.at, Trigger.WIND_DOWN_DONE)
        try:
            checkpoint = extract_checkpoint(obs.result_text)
        except CheckpointError as exc:
            checkpoint = self._restart_flow.harness_checkpoint(str(exc))
        return self._restart_flow.checkpoint_ready(obs.at, checkpoint)

    def _after_stop(self, obs: TurnEnded, stopping: StopFor, finished: bool) -> Outcome:
        """The turn we stopped is over. Empty outcome: the action that stopped it goes on.

        A mask comes back planned anew, over the results the agent saw before it stopped;
        a stop asked of the hook is decided here, at the clean point it made.
        """
        self._state.turn.stopping = None
        if finished and self._state.phase in (Phase.RUNNING, Phase.MASKING):
            # The agent finished its task before the stop landed: nothing left to manage,
            # unless the operator has something to say to it.
            self._state.pending.mask = None
            if self._state.phase is Phase.RUNNING and self._state.messages:
                return self._deliver_now(obs.at)
            return self._state.end(
                obs.at, Trigger.TASK_DONE, EndStatus.DONE, "the agent finished its task"
            )
        if (
            obs.prompt_too_long
            and self._state.phase in STREAMING
            and self._state.phase is not Phase.RESTARTING
        ):
            return self._restart_flow.emergency(obs.at, "the prompt is too long for the window")
        if stopping in (StopFor.PROJECTION, StopFor.MESSAGE) and self._state.phase is Phase.RUNNING:
            # A clean point: mask or wind down if the window needs it, and the waiting
            # messages go with whatever sends the agent on (`_back_to_work`).
            return self._masking.decide_at_clean_point(obs.at)
        if self._state.phase is Phase.MASKING:
            return self._masking.replan_stopped_mask()
        follow_up = self._state.turn.then
        if follow_up is not None:
            self._state.begin_turn(follow_up)
        return Outcome()
