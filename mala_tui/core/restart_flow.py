"""Wind-down, checkpoint, approval and restart: how a full window becomes a fresh session.

RUNNING/MASKING --hard--> WINDING_DOWN --turn ends--> CHECKPOINTING --checkpoint-->
AWAITING_APPROVAL (when a person approves) --> RESTARTING --> RUNNING, or STOPPED at
max_restarts or on a denial. An emergency (the window already gone) skips the
agent's part: mala-tui builds the checkpoint from the transcript itself.

What goes into the fresh session is the checkpoint and the agent's own last
complete steps (core.restart_prompts).

A part of the ContextManager (core.manager): `RestartFlow` is given the session's
state (core.manager_state) and calls no other part. The manager sends it the
approvals and restarts; the turn flow, masking decisions and operator handling
call it to wind down, ask for a checkpoint, or restart in an emergency.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import (
    EndStatus,
    Interrupt,
    RequestApproval,
    SendPrompt,
    StartFreshSession,
)
from mala_tui.core.checkpoint import (
    Checkpoint,
    CheckpointOrigin,
)
from mala_tui.core.decision_figures import nothing_taken
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.observations import ApprovalGiven, Decision, RestartCompleted
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import Cause, IllegalTransition, ManageMode, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.restart_prompts import (
    checkpoint_from_transcript,
    continuation_prompt,
    first_prompt_refused,
)
from mala_tui.core.state_parts import StopFor


class RestartFlow:
    """The manager's wind-down, checkpoint, approval and restart handlers.

    Given the session's state, and nothing else: it calls no other part.
    """

    def __init__(self, state: ManagerState) -> None:
        self._state = state

    def wind_down(self, at: float, tokens: int, cause: Cause) -> Outcome:
        """Past hard: ask the agent to wrap up (its turn in flight stopped first); in `mask`
        mode, say once that nothing restarts."""
        if self._state.manage is not ManageMode.FULL:
            return self._full_without_restart(at, tokens)
        moved = self._state.move(at, Trigger.HARD_PRESSURE)
        self._state.pending.work_ends_at = len(self._state.transcript)
        stop = self._state.turn.streaming
        percent = 100 * tokens / self._state.window if self._state.window else 0.0
        text = self._state.prompts.render(
            PromptKind.WIND_DOWN,
            percent=f"{percent:.0f}",
            tokens_left=max(0, self._state.window - tokens),
            tokens_used=tokens,
            window=self._state.window,
        )
        self._state.pending.restart_for(
            f"{cause.value.replace('_', ' ')}: {tokens} of {self._state.window} tokens "
            f"({percent:.0f}%)",
            cause,
        )
        self._send_after_stop(text, stop)
        return Outcome(
            (SendPrompt(PromptKind.WIND_DOWN, text, interrupt_first=stop),),
            (
                moved,
                ev.WindDownSent(
                    at=at,
                    session=self._state.name,
                    tokens=tokens,
                    window=self._state.window,
                    trigger=cause,
                ),
            ),
        )

    def _full_without_restart(self, at: float, tokens: int) -> Outcome:
        """`mask` mode past hard: nothing restarts; say so once, and let the agent go on."""
        reason = (
            f"past the hard threshold ({tokens:,} of {self._state.window:,} tokens) with nothing "
            "left to mask; management mode 'mask' does not restart"
        )
        if not self._state.pending.say_once(reason):
            return Outcome()
        return Outcome(
            events=(ev.MaskSkipped(at=at, session=self._state.name, reason=reason, tokens=tokens),)
        )

    def _send_after_stop(self, text: str, stop: bool) -> None:
        if stop:
            self._state.turn.stop_before(text)
        else:
            self._state.begin_turn(text)

    def request_checkpoint(self, at: float, trigger: Trigger) -> Outcome:
        """Ask the agent for its checkpoint (after stopping its turn, if one is in flight)."""
        moved = self._state.move(at, trigger)
        if self._state.pending.work_ends_at is None:
            self._state.pending.work_ends_at = len(self._state.transcript)
        usage = self._state.usage
        stop = self._state.turn.streaming
        text = self._state.prompts.render(
            PromptKind.CHECKPOINT_REQUEST,
            percent=f"{usage.percent:.0f}",
            tokens_used=usage.tokens,
            window=self._state.window,
        )
        self._send_after_stop(text, stop)
        return Outcome(
            (SendPrompt(PromptKind.CHECKPOINT_REQUEST, text, interrupt_first=stop),),
            (moved, ev.CheckpointRequested(at=at, session=self._state.name, tokens=usage.tokens)),
        )

    def emergency_trigger(self) -> Trigger:
        """Where an emergency leads: a restart from a checkpoint, or the session's end."""
        if self._state.manage is not ManageMode.FULL or nothing_taken(self._state):
            return Trigger.FAIL
        return self.checkpoint_trigger()

    def emergency(self, at: float, reason: str) -> Outcome:
        """The agent can no longer write a checkpoint: build one from the transcript.

        Not when the refused request was the session's first: its prompt (the task, or
        the checkpoint a fresh session starts from) does not fit, and a checkpoint of
        nothing done would cut the task to fit or send the same prompt again. The
        session ends instead, saying so: never done on a task it could not read."""
        if nothing_taken(self._state):
            self._state.check(Trigger.FAIL)
            return self._state.end(
                at, Trigger.FAIL, EndStatus.FAILED, first_prompt_refused(self._state)
            )
        if self._state.manage is not ManageMode.FULL:
            self._state.check(Trigger.FAIL)
            return self._state.end(
                at,
                Trigger.FAIL,
                EndStatus.FAILED,
                f"{reason}; management mode {self._state.manage.value!r} does not restart",
            )
        self._state.check(self.checkpoint_trigger())
        checkpoint = checkpoint_from_transcript(self._state, reason)
        self._state.pending.restart_for(f"emergency: {reason}", Cause.EMERGENCY)
        self._state.pending.drop_mask()
        streaming = self._state.turn.streaming
        outcome = self.checkpoint_ready(at, checkpoint)
        if streaming and not self._state.phase.terminal:
            # The window is gone mid-turn: stop the turn before restarting.
            self._state.turn.begin_stop(StopFor.EMERGENCY)
            return Outcome((Interrupt(), *outcome.actions), outcome.events)
        return outcome

    def checkpoint_trigger(self) -> Trigger:
        """Where a checkpoint leads: a stop (at a budget, a cancel, or max restarts), a
        person's approval, or the restart itself."""
        if self._state.budget_stop is not None:
            return Trigger.CHECKPOINT_AT_LIMIT
        if self._state.counters.continuation >= self._state.limits.max_restarts:
            return Trigger.CHECKPOINT_AT_LIMIT
        if self._state.require_approval:
            return Trigger.CHECKPOINT_FOR_APPROVAL
        return Trigger.CHECKPOINT_ACCEPTED

    def checkpoint_ready(self, at: float, checkpoint: Checkpoint) -> Outcome:
        """The checkpoint is in hand: stop, ask for approval, or restart."""
        trigger = self.checkpoint_trigger()
        self._state.check(trigger)
        self._state.checkpoint = checkpoint
        self._state.counters.checkpoints += 1
        saved = self._checkpoint_event(at, checkpoint)
        if trigger is Trigger.CHECKPOINT_AT_LIMIT:
            stop = self._state.budget_stop
            if stop is None:
                stop = f"max restarts ({self._state.limits.max_restarts}) reached"
            ended = self._state.end(at, trigger, EndStatus.STOPPED, f"{stop}; checkpoint kept")
            return Outcome(ended.actions, (saved, *ended.events))
        moved = self._state.move(at, trigger)
        if trigger is Trigger.CHECKPOINT_FOR_APPROVAL:
            reason = self._state.pending.restart_reason or "restart"
            return Outcome(
                (RequestApproval(checkpoint, self._state.counters.checkpoints, reason),),
                (
                    saved,
                    moved,
                    ev.ApprovalRequested(
                        at=at,
                        session=self._state.name,
                        checkpoint_number=self._state.counters.checkpoints,
                        reason=reason,
                    ),
                ),
            )
        restart = self._restart(at, approved_by=AnsweredBy.AUTO)
        return Outcome(restart.actions, (saved, moved, *restart.events))

    def _checkpoint_event(self, at: float, checkpoint: Checkpoint) -> ev.CheckpointSaved:
        return ev.CheckpointSaved(
            at=at,
            session=self._state.name,
            number=self._state.counters.checkpoints,
            origin=checkpoint.origin,
            text=checkpoint.text,
        )

    def _restart(self, at: float, *, approved_by: AnsweredBy) -> Outcome:
        assert self._state.checkpoint is not None
        number = self._state.counters.continuation + 1
        prompt = continuation_prompt(self._state, number)
        said, delivered = self._state.messages_prompt(at, Delivery.RESTART)
        if said:
            # Said while the old session was winding down: the fresh one hears it.
            prompt = f"{prompt}\n\n{said}"
        self._state.turn_to_come(prompt)
        cause = self._state.pending.restart_cause or Cause.OPERATOR
        # The old agent process closes: its background work, if any, ends with it.
        stopped = self._state.background_stopped(at, "the session restarted fresh")
        return Outcome(
            (StartFreshSession(prompt, self._state.checkpoint, number),),
            (
                *stopped,
                ev.Restarted(
                    at=at,
                    session=self._state.name,
                    continuation=number,
                    reason=self._state.pending.restart_reason or "restart",
                    tokens_before=self._state.usage.tokens,
                    checkpoint_number=self._state.counters.checkpoints,
                    approved_by=approved_by,
                    trigger=cause,
                ),
                *delivered,
            ),
        )

    def on_approval(self, obs: ApprovalGiven) -> Outcome:
        """A person answered: restart (on the edited checkpoint, if edited), or stop."""
        if not isinstance(obs.decision, Decision):
            raise IllegalTransition(f"{self._state.name}: unknown decision {obs.decision!r}")
        trigger = Trigger.DENIED if obs.decision is Decision.DENY else Trigger.APPROVED
        self._state.check(trigger)
        edited: Checkpoint | None = None
        if obs.decision is Decision.EDIT:
            text = (obs.edited_text or "").strip()
            if not text:
                raise IllegalTransition(f"{self._state.name}: the edited checkpoint is empty")
            edited = Checkpoint(text, CheckpointOrigin.EDITED)
        decided = ev.ApprovalDecided(
            at=obs.at,
            session=self._state.name,
            decision=obs.decision,
            decided_by=obs.decided_by,
        )
        if trigger is Trigger.DENIED:
            ended = self._state.end(
                obs.at, trigger, EndStatus.DENIED, f"restart denied by {obs.decided_by}"
            )
            return Outcome(ended.actions, (decided, *ended.events))
        events: list[ev.Event] = [decided]
        if edited is not None:
            self._state.checkpoint = edited
            self._state.counters.checkpoints += 1
            events.append(self._checkpoint_event(obs.at, edited))
        events.append(self._state.move(obs.at, trigger))
        restart = self._restart(obs.at, approved_by=obs.decided_by)
        return Outcome(restart.actions, (*events, *restart.events))

    def on_restarted(self, obs: RestartCompleted) -> Outcome:
        """The fresh session is up: its first turn is the continuation prompt."""
        moved = self._state.move(obs.at, Trigger.RESTARTED)
        self._state.start_fresh_session(obs.session_id)
        return Outcome(events=(moved,))

    def restart_by_hand(self, at: float) -> Outcome:
        """The operator restarts a stopped or failed session from its checkpoint."""
        self._state.check(Trigger.RESTART_BY_HAND)
        events: list[ev.Event] = []
        if self._state.checkpoint is None:
            self._state.checkpoint = checkpoint_from_transcript(
                self._state, "restarted by hand after the session ended without a checkpoint"
            )
            self._state.counters.checkpoints += 1
            events.append(self._checkpoint_event(at, self._state.checkpoint))
        self._state.pending.restart_for("restarted by the operator", Cause.OPERATOR)
        events.append(self._state.reopen(at))
        restart = self._restart(at, approved_by=AnsweredBy.OPERATOR)
        return Outcome(restart.actions, (*events, *restart.events))
