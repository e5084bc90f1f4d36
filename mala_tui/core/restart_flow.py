"""Wind-down, checkpoint, approval and restart: how a full window becomes a fresh session.

RUNNING/MASKING --hard--> WINDING_DOWN --turn ends--> CHECKPOINTING --checkpoint-->
AWAITING_APPROVAL (when a person approves) --> RESTARTING --> RUNNING, or STOPPED at
max_restarts or on a denial. An emergency (the window already gone) skips the
agent's part: mala-tui builds the checkpoint from the transcript itself.

What goes into the fresh session is the checkpoint and the agent's own last
complete steps, never mala-tui's prompts: carried over, a wind-down would tell the
new session to wrap up too. Both are bounded in tokens, by the session's measured
density, so a dense transcript cannot fill the fresh window on its own.

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
from mala_tui.core.background import BackgroundTask, describe_tasks
from mala_tui.core.checkpoint import (
    Checkpoint,
    CheckpointOrigin,
    carryover_text,
    checkpoint_for_prompt,
    harness_checkpoint,
)
from mala_tui.core.decision_figures import nothing_taken
from mala_tui.core.describe import gap
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.observations import ApprovalGiven, Decision, RestartCompleted
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import Cause, IllegalTransition, ManageMode, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.resume_plan import ResumeFrom, SessionResume
from mala_tui.core.state_parts import StopFor
from mala_tui.core.text import clean
from mala_tui.core.transcript import Message
from mala_tui.core.usage import estimate_tokens


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
            return self._state.end(at, Trigger.FAIL, EndStatus.FAILED, self._first_prompt_refused())
        if self._state.manage is not ManageMode.FULL:
            self._state.check(Trigger.FAIL)
            return self._state.end(
                at,
                Trigger.FAIL,
                EndStatus.FAILED,
                f"{reason}; management mode {self._state.manage.value!r} does not restart",
            )
        self._state.check(self.checkpoint_trigger())
        checkpoint = self.harness_checkpoint(reason)
        self._state.pending.restart_for(f"emergency: {reason}", Cause.EMERGENCY)
        self._state.pending.drop_mask()
        streaming = self._state.turn.streaming
        outcome = self.checkpoint_ready(at, checkpoint)
        if streaming and not self._state.phase.terminal:
            # The window is gone mid-turn: stop the turn before restarting.
            self._state.turn.begin_stop(StopFor.EMERGENCY)
            return Outcome((Interrupt(), *outcome.actions), outcome.events)
        return outcome

    def _first_prompt_refused(self) -> str:
        messages = self._state.transcript.messages
        first = messages[0].text if messages else self._state.turn.prompt
        is_task = self._state.counters.continuation == 0 and first == self._state.task
        what = "the task" if is_task else "this fresh session's first prompt"
        return (
            f"{what} ({len(first):,} characters, about {estimate_tokens(len(first)):,} tokens) "
            "does not fit the window: its first request was refused as too long for the "
            f"{self._state.window:,}-token window, and a restart would only send it again; "
            + (
                "shorten the task, or put its bulk in a file the agent reads"
                if is_task
                else "its checkpoint is kept"
            )
        )

    def harness_checkpoint(self, reason: str) -> Checkpoint:
        """A checkpoint built from the transcript, for when the agent cannot write one."""
        # The goal is the task, not this session's first prompt (after a restart that
        # is the continuation prompt); what earlier checkpoints listed stays listed;
        # nothing from the wind-down on counts as work.
        return harness_checkpoint(
            self._state.transcript,
            reason=reason,
            carryover_turns=self._state.limits.carryover_turns,
            goal=self._state.task,
            previous=self._state.checkpoint,
            before=self._state.pending.work_ends_at,
            carryover_chars=self._state.tokens_as_chars(self._state.limits.carryover_tokens),
        )

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

    def continuation_prompt(self, number: int) -> str:
        """The fresh session's first prompt: the checkpoint and the agent's last steps."""
        assert self._state.checkpoint is not None
        carried = (
            "(included in the checkpoint above)"
            if self._state.checkpoint.harness_made
            else carryover_text(
                self._state.transcript.carryover(
                    self._state.limits.carryover_turns, before=self._state.pending.work_ends_at
                ),
                max_chars=self._state.tokens_as_chars(self._state.limits.carryover_tokens),
            )
        )
        return self._state.prompts.render(
            PromptKind.CONTINUATION,
            checkpoint=checkpoint_for_prompt(
                self._state.checkpoint,
                self._state.tokens_as_chars(self._state.limits.checkpoint_prompt_tokens),
            ),
            carryover=carried,
            continuation_number=number,
        )

    def _restart(self, at: float, *, approved_by: AnsweredBy) -> Outcome:
        assert self._state.checkpoint is not None
        number = self._state.counters.continuation + 1
        prompt = self.continuation_prompt(number)
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
            self._state.checkpoint = self.harness_checkpoint(
                "restarted by hand after the session ended without a checkpoint"
            )
            self._state.counters.checkpoints += 1
            events.append(self._checkpoint_event(at, self._state.checkpoint))
        self._state.pending.restart_for("restarted by the operator", Cause.OPERATOR)
        events.append(self._state.reopen(at))
        restart = self._restart(at, approved_by=AnsweredBy.OPERATOR)
        return Outcome(restart.actions, (*events, *restart.events))

    def resumed_start(
        self, at: float, plan: SessionResume, gap_seconds: float, history: tuple[Message, ...]
    ) -> Outcome:
        """The first prompt after `mala-tui resume`: the session's counts go on from the journal,
        and what the operator said that had not reached the agent goes with it."""
        carried = plan.carried
        self._state.carry_over(carried)
        events: tuple[ev.Event, ...] = ()
        if plan.how is ResumeFrom.SESSION_ID and plan.session_id:
            self._state.go_on_in(plan.session_id, history)
            kind = PromptKind.RUN_RESUME
            prompt = self._state.prompts.render(
                kind, session_name=self._state.name, gap=gap(gap_seconds)
            )
            how = Delivery.RESUME
        elif plan.how is ResumeFrom.CHECKPOINT and plan.checkpoint is not None:
            self._state.checkpoint = plan.checkpoint
            lost = plan.lost_host
            if lost is not None and self._state.require_approval:
                # A host lost is a restart like any other: a person approves it first.
                return self._ask_again(at, plan.checkpoint_number, lost, Cause.NODE_LOST)
            if plan.awaiting_approval is not None and self._state.require_approval:
                return self._ask_again(at, plan.checkpoint_number, plan.awaiting_approval)
            # A fresh session seeded with the checkpoint: a restart, numbered after the last.
            number = carried.restarts + 1
            self._state.counters.continuation = number
            kind, prompt, how = (
                PromptKind.CONTINUATION,
                self.continuation_prompt(number),
                Delivery.RESTART,
            )
            events = (
                ev.Restarted(
                    at=at,
                    session=self._state.name,
                    continuation=number,
                    reason=lost
                    or f"resumed after the run was interrupted ({gap(gap_seconds)} earlier)",
                    tokens_before=0,
                    checkpoint_number=plan.checkpoint_number,
                    approved_by=AnsweredBy.AUTO if lost is not None else AnsweredBy.RESUME,
                    trigger=Cause.NODE_LOST if lost is not None else Cause.RESUME,
                ),
            )
        else:
            kind, prompt, how = PromptKind.TASK, self._state.task, Delivery.RESTART
        gone = carried.lost_background
        if gone:
            # Its reports will never come: the agent must know, or it waits for them.
            prompt = f"{prompt}\n\n{lost_background_note(gone)}"
            events = (
                *events,
                ev.BackgroundStopped(
                    at=at,
                    session=self._state.name,
                    tasks=gone,
                    reason="lost when the run stopped; the agent is told",
                ),
            )
        said, delivered = self._state.messages_prompt(at, how)
        if said:
            prompt = f"{prompt}\n\n{said}"
        self._state.begin_turn(prompt)
        return Outcome((SendPrompt(kind, prompt),), (*events, *delivered))

    def _ask_again(
        self, at: float, number: int, reason: str, cause: Cause = Cause.OPERATOR
    ) -> Outcome:
        """The restart was waiting for a person when the run was interrupted (or its host
        was lost): ask, and on the answer restart (or end) as the approval would have done."""
        self._state.pending.restart_for(reason, cause)
        moved = self._state.move(at, Trigger.CHECKPOINT_FOR_APPROVAL)
        assert self._state.checkpoint is not None
        asked = ev.ApprovalRequested(
            at=at, session=self._state.name, checkpoint_number=number, reason=reason
        )
        return Outcome((RequestApproval(self._state.checkpoint, number, reason),), (moved, asked))


def lost_background_note(tasks: tuple[BackgroundTask, ...]) -> str:
    """What the agent is told of background work that ended with the run: each one by its
    kind and description, so it can start it again or go on without it."""
    lines = [f"- {task.kind}: {clean(task.description) or task.id}" for task in tasks]
    return (
        "Background work you had started was lost when the run stopped, and its reports "
        f"will not come ({describe_tasks(tasks)}):\n" + "\n".join(lines) + "\n"
        "Start it again if you still need it, or go on without it."
    )
