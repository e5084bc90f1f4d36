"""A session's first prompt: its task, a fork's new instruction, or where a run left it.

A new session starts on its task. A fork goes on in the conversation it was forked
from, its task said as the person's next message. After `mala-tui resume`, the
session's counts, density, learnt window and waiting messages go on from the
journal (core.resume_plan). It resumes its agent session by id when it can; else a
fresh session starts on its latest checkpoint, a restart numbered after the last
(asked of a person first when a restart waited for one, or its host was lost);
else it starts afresh on its task. Background work the run's end took with it is
said to the agent, which would otherwise wait for its reports.

A part of the ContextManager (core.manager): `SessionStart` is given the session's
state (core.manager_state) and calls no other part; the manager calls it once, at
`start`.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import RequestApproval, SendPrompt
from mala_tui.core.describe import gap
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.operator_messages import Delivery, MessageError
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import Cause, IllegalTransition, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.restart_prompts import (
    continuation_prompt,
    first_prompt,
    lost_background_note,
)
from mala_tui.core.resume_plan import ResumeFrom, SessionResume
from mala_tui.core.state_parts import Fork
from mala_tui.core.transcript import Message


class SessionStart:
    """The manager's first prompt for a session."""

    def __init__(self, state: ManagerState) -> None:
        self._state = state

    def first_turn(self) -> Outcome:
        """The session's first prompt: its task."""
        prompt = first_prompt(self._state, self._state.task)
        self._state.begin_turn(prompt)
        return Outcome((SendPrompt(PromptKind.TASK, prompt),))

    def forked_turn(self, at: float, fork: Fork) -> Outcome:
        """A fork's first prompt, in the conversation it was forked from (resumed by that
        session's id; the agent forks it into a session of its own): its task, the new
        instruction, said as the person's message, which is what it is."""
        state = self._state
        state.go_on_in(fork.session_id, fork.history, fork.density)
        try:
            queued = state.messages.add(at, state.task)
        except MessageError as exc:
            raise IllegalTransition(f"{state.name}: {exc}") from None
        said = ev.MessageQueued(at=at, session=state.name, number=queued.number, text=queued.text)
        prompt, delivered = state.messages_prompt(at, Delivery.FORK)
        state.begin_turn(prompt)
        return Outcome((SendPrompt(PromptKind.OPERATOR_MESSAGE, prompt),), (said, *delivered))

    def resumed_turn(
        self, at: float, plan: SessionResume, gap_seconds: float, history: tuple[Message, ...]
    ) -> Outcome:
        """The first prompt after `mala-tui resume`: the session's counts go on from the journal,
        and what the operator said that had not reached the agent goes with it."""
        carried = plan.carried
        self._state.carry_over(plan)
        events: tuple[ev.Event, ...] = ()
        if plan.how is ResumeFrom.SESSION_ID and plan.session_id:
            self._state.go_on_in(plan.session_id, history)
            kind = PromptKind.RUN_RESUME
            prompt = self._state.prompts.render(
                kind, session_name=self._state.name, gap=gap(gap_seconds)
            )
            how = Delivery.RESUME
        elif plan.how is ResumeFrom.CHECKPOINT and plan.checkpoint is not None:
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
                continuation_prompt(self._state, number),
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
            task = first_prompt(self._state, self._state.task)
            kind, prompt, how = PromptKind.TASK, task, Delivery.RESTART
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
