"""The life of a turn: usage as each API call starts, the agent's messages, a turn's end.

A turn begins with a prompt and streams: each API call's usage comes first (the
figure every decision reads: under soft pressure, mask; past hard, wind down;
past the window, the emergency), then the agent's messages, then the turn's end.
How it ended says what comes next: the task is done, a prompt that waited for the
stop goes, the checkpoint the agent was asked for is read, a failed call is
retried (core.recovery), or, for a turn stopped at a clean point, what the
window needs is decided there (core.masking_decisions).

A part of the ContextManager (core.manager): `TurnFlow` is given the session's
state (core.manager_state), the projection, masking decisions, the restart flow,
recovery and the background flow, and calls only those.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus, SendPrompt
from mala_tui.core.background_flow import BackgroundFlow
from mala_tui.core.checkpoint import CheckpointError, extract_checkpoint
from mala_tui.core.decision_figures import DecisionZone, decision_zone, projected_tokens
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.masking import call_key
from mala_tui.core.masking_decisions import MaskingDecisions
from mala_tui.core.message_events import compaction_event, message_events
from mala_tui.core.observations import (
    CompactionObserved,
    MessageObserved,
    SessionHandedBack,
    SessionIdentified,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.phases import STREAMING, Cause, IllegalTransition, ManageMode, Phase, Trigger
from mala_tui.core.projection import Projection
from mala_tui.core.prompts import PromptKind
from mala_tui.core.recovery import Recovery
from mala_tui.core.restart_flow import RestartFlow
from mala_tui.core.restart_prompts import checkpoint_from_transcript
from mala_tui.core.state_parts import StopFor
from mala_tui.core.transcript import Role
from mala_tui.core.usage import ContextUsage, estimate_tokens
from mala_tui.core.window import WindowSource

#: A turn's end that is the agent's own: its task is finished.
_FINISHED = (None, "completed")
#: How a turn ends when the post-tool hook stopped it.
HOOK_STOPPED = "hook_stopped"


class TurnFlow:
    """The manager's handlers for usage, the agent's messages and a turn's end.

    Given the session's state and the parts it hands decisions to: the projection,
    masking decisions, the restart flow, recovery and the background flow.
    """

    def __init__(
        self,
        state: ManagerState,
        *,
        masking: MaskingDecisions,
        projection: Projection,
        restart_flow: RestartFlow,
        recovery: Recovery,
        background: BackgroundFlow,
    ) -> None:
        self._state = state
        self._background = background
        self._masking = masking
        self._projection = projection
        self._restart_flow = restart_flow
        self._recovery = recovery

    def on_handed_back(self, obs: SessionHandedBack) -> Outcome:
        """The person is done with the session by hand: the conversation is what its
        transcript now holds, the window what the person's latest call measured; then it
        goes on supervised (with whatever the operator said meanwhile) or ends."""
        state = self._state
        if not state.by_hand:
            raise IllegalTransition(f"{state.name} was not taken over by hand")
        if obs.go_on:
            state.check(Trigger.RESUME)
        state.handed_back(obs.history)
        events: list[ev.Event] = []
        if obs.call is not None:
            # The person's latest call is the window's measure now (its request kept the
            # prompt cache warm); the density is not fitted on it: no estimate was taken.
            state.tracker.observe_call(obs.call)
            state.chars_at_call = state.transcript.characters
            state.cache_refreshed_at = obs.at
            events.append(usage_recorded(state, obs.at, state.usage, ("by hand",)))
        tokens = state.usage.tokens if obs.call is not None else None
        said = ev.HandedBack(
            at=obs.at, session=state.name, prompts=obs.prompts, tokens=tokens, went_on=obs.go_on
        )
        if not obs.go_on:
            ended = state.end(obs.at, Trigger.STOP, EndStatus.STOPPED, "ended by hand")
            return Outcome(ended.actions, (*events, said, *ended.events))
        moved = state.move(obs.at, Trigger.RESUME)
        kind, text, delivered = state.back_to_work(
            obs.at, PromptKind.OPERATOR_RESUME, Delivery.RESUME, session_name=state.name
        )
        return Outcome((SendPrompt(kind, text),), (*events, said, moved, *delivered))

    # -- what the agent reports --------------------------------------------------------

    def on_session_identified(self, obs: SessionIdentified) -> Outcome:
        self._state.session_id = obs.session_id
        self._background.injected_turn_begins()
        return Outcome()

    def on_compaction(self, obs: CompactionObserved) -> Outcome:
        self._state.counters.compactions += 1
        if not obs.blocked:
            # The CLI rewrote the conversation itself: the pairs fitted so far
            # describe a transcript it no longer sends.
            self._state.calibration.restart()
        return Outcome(events=(compaction_event(self._state.name, obs),))

    # -- usage -----------------------------------------------------------------------

    def on_usage(self, obs: UsageObserved) -> Outcome:
        """An API call's usage: record it, and act on the window it measures."""
        if obs.starts_call:
            self._background.injected_turn_begins()
        self._recovery.endpoint_answers()
        self._state.tracker.observe_call(obs.call)
        noted = self._state.note_accepted(obs.at, obs.call)
        self._state.calibration.observe(
            estimate_tokens(self._state.transcript.characters), obs.call.context_tokens
        )
        self._state.chars_at_call = self._state.transcript.characters
        if obs.starts_call:
            self._state.growth.observe(obs.call.context_tokens)
        if obs.starts_call or self._state.cache_refreshed_at is None:
            self._state.cache_refreshed_at = obs.at
        if self._state.turn.stopping is StopFor.PROJECTION and obs.starts_call:
            self._state.turn.stop_over()  # a new request: the CLI did not stop at the hook
        usage = self._state.usage
        events: list[ev.Event] = [
            usage_recorded(self._state, obs.at, usage, obs.notes, call_started=obs.starts_call),
            *noted,
        ]
        before = self._state.pending.take_measure_from()
        if before is not None:
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

    def _decide_on(self, at: float, usage: ContextUsage) -> Outcome:
        """Act on a figure of the window, measured or (labelled) estimated."""
        if self._state.manage is ManageMode.OFF or self._state.turn.stopping is not None:
            return Outcome()
        if self._state.phase is Phase.RUNNING:
            return self._pressure_decision(at, usage)
        if self._state.phase is Phase.MASKING and self._decision_zone(usage) is DecisionZone.HARD:
            # The window jumped past hard before the mask landed: wind down instead.
            if self._state.manage is ManageMode.FULL:
                self._state.pending.drop_mask()
            return self._restart_flow.wind_down(at, usage.tokens, Cause.HARD_THRESHOLD)
        return Outcome()

    def _decision_zone(self, usage: ContextUsage) -> DecisionZone:
        return decision_zone(
            self._state,
            usage.zone(self._state.limits.soft_threshold, self._state.limits.hard_threshold),
            usage.tokens,
        )

    def _pressure_decision(self, at: float, usage: ContextUsage) -> Outcome:
        if usage.pressure >= 1.0:
            return self._restart_flow.emergency(
                at, f"usage {usage.tokens} tokens is past the {self._state.window} window"
            )
        zone = self._decision_zone(usage)
        if zone is DecisionZone.HARD and self._state.manage is ManageMode.FULL:
            return self._restart_flow.wind_down(at, usage.tokens, Cause.HARD_THRESHOLD)
        if zone is not DecisionZone.NORMAL:
            return self._masking.mask(at, usage.tokens, Trigger.SOFT_PRESSURE, Cause.SOFT_THRESHOLD)
        self._state.pending.pressure_eased()
        return Outcome()

    # -- turns -----------------------------------------------------------------------

    def on_message(self, obs: MessageObserved) -> Outcome:
        """A message of the agent's (or its tools'): into the transcript."""
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
                events.append(estimate_warning(self._state, obs.at))
        if self._state.usage_missing and self._state.tracker.latest_call is None:
            # The labelled estimate is all there is, so decide on it.
            decided = self._decide_on(obs.at, self._state.usage)
            return Outcome(decided.actions, (*events, *decided.events))
        return Outcome(events=tuple(events))

    def _deliver_now(self, at: float) -> Outcome:
        """The agent's turn is over and messages wait: they are its next prompt."""
        kind, text, delivered = self._state.back_to_work(
            at, PromptKind.OPERATOR_RESUME, Delivery.IDLE, session_name=self._state.name
        )
        return Outcome((SendPrompt(kind, text),), delivered)

    def on_turn_ended(self, obs: TurnEnded) -> Outcome:
        """The turn is over: what comes next depends on why it was stopped, if it was,
        and on the phase (see the module's docstring)."""
        stopping = self._state.turn.stopping
        if (
            stopping is None
            and obs.terminal_reason == HOOK_STOPPED
            and self._state.phase is Phase.RUNNING
        ):
            # Only our post-tool hook ends a turn this way: a stop it was asked for, whose
            # request to stop was lost on the way (say, to an item handled out of order).
            stopping = StopFor.PROJECTION
            self._state.turn.begin_stop(stopping)
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
                self._state.check(self._restart_flow.emergency_trigger())
        # The request the API refused, as projected before this turn's end moves anything.
        refused = (
            projected_tokens(self._state)
            if obs.refused_by_api and self._state.tracker.latest_call is not None
            else None
        )
        if obs.context_window:
            self._state.belief.tell(obs.context_window, WindowSource.CLI)
        outcome = self._turn_outcome(obs, stopping)
        # Learnt once the turn's end is known to be legal: a refused one changes nothing.
        learned = self._state.learn_from_refusal(obs.at, refused) if refused is not None else ()
        return Outcome(outcome.actions, (*learned, *outcome.events))

    def _turn_outcome(self, obs: TurnEnded, stopping: StopFor | None) -> Outcome:
        if obs.session_id:
            self._state.session_id = obs.session_id
        self._state.tracker.observe_turn(obs.summed_usage)
        self._state.turn.ended()
        finished = not obs.is_error and obs.terminal_reason in _FINISHED
        if stopping is not None:
            return self._after_stop(obs, stopping, finished)
        if obs.prompt_too_long:
            return self._restart_flow.emergency(obs.at, "the prompt is too long for the window")
        if obs.is_error:
            return self._recovery.on_turn_error(obs)
        self._recovery.turn_went_through()
        if self._state.phase is Phase.RUNNING and self._state.messages:
            return self._deliver_now(obs.at)
        if self._state.phase is Phase.RUNNING:
            if obs.api_calls == 0 and self._state.background.subagents_seen:
                # Seen with the real CLI when reports reach it together: a result with no
                # call, then the turn that takes them in. Waited for as a report is.
                self._state.background.expect_report()
            return self._background.done_or_waiting(obs.at)
        if self._state.phase is Phase.WINDING_DOWN:
            return self._restart_flow.request_checkpoint(obs.at, Trigger.WIND_DOWN_DONE)
        try:
            checkpoint = extract_checkpoint(obs.result_text)
        except CheckpointError as exc:
            checkpoint = checkpoint_from_transcript(self._state, str(exc))
        return self._restart_flow.checkpoint_ready(obs.at, checkpoint)

    def _after_stop(self, obs: TurnEnded, stopping: StopFor, finished: bool) -> Outcome:
        """The turn we stopped is over. Empty outcome: the action that stopped it goes on.

        A mask comes back planned anew, over the results the agent saw before it stopped;
        a stop asked of the hook is decided here, at the clean point it made.
        """
        self._state.turn.stop_over()
        if finished and self._state.phase in (Phase.RUNNING, Phase.MASKING):
            # The agent finished its task before the stop landed: nothing left to manage,
            # unless the operator has something to say to it.
            self._state.pending.drop_mask()
            if self._state.phase is Phase.RUNNING and self._state.messages:
                return self._deliver_now(obs.at)
            if self._state.phase is Phase.RUNNING:
                return self._background.done_or_waiting(obs.at)
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
            # messages go with whatever sends the agent on (`ManagerState.back_to_work`).
            return self._projection.decide_at_clean_point(obs.at)
        if self._state.phase is Phase.MASKING:
            return self._masking.replan_stopped_mask()
        follow_up = self._state.turn.then
        if follow_up is not None:
            self._state.begin_turn(follow_up)
        return Outcome()


def usage_recorded(
    state: ManagerState,
    at: float,
    usage: ContextUsage,
    notes: tuple[str, ...] = (),
    *,
    call_started: bool = False,
) -> ev.UsageRecorded:
    """The event that records a figure of the window, with what it was judged on."""
    density = state.density
    return ev.UsageRecorded.of(
        usage,
        at=at,
        session=state.name,
        notes=notes,
        window_source=state.window_source,
        density=round(density.ratio, 4),
        density_measured=density.measured,
        call_started=call_started,
    )


def estimate_warning(state: ManagerState, at: float) -> ev.WarningRecorded:
    """Said once: the agent reports no per-call usage, so decisions use an estimate."""
    usage = state.usage
    return ev.WarningRecorded(
        at=at,
        session=state.name,
        where=ev.Where.USAGE,
        message=(
            "the agent reports no per-call usage: decisions use the "
            f"{usage.source.value} figure ({usage.tokens:,} tokens), not a measurement"
        ),
    )
