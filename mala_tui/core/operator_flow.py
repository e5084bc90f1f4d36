"""What the operator and the budgets ask of a session: commands, messages, stopping at a limit.

The operator pauses, resumes, stops, masks now or restarts now (by hand, from a
stopped session's checkpoint), cancels (a checkpoint first, then a stop), and
says things to the agent (core.operator_messages). A budget near its limit
winds the session down as the hard threshold would, but stops at the checkpoint
instead of restarting; at the limit it stops at once, with a checkpoint kept.
The operator's settings (whether a restart waits for a person, how much of the
window is managed) are taken here too.

A part of the ContextManager (core.manager): `OperatorFlow` is given the
session's state (core.manager_state), masking decisions (core.masking_decisions)
and the restart flow (core.restart_flow), and calls only those. The manager also
asks it, after every observation, whether the turn in flight must stop so that
the operator's waiting messages go next.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import Action, Disconnect, EndStatus, Interrupt, SendPrompt, StopTurn
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.masking_decisions import MaskingDecisions
from mala_tui.core.observations import (
    ApprovalPolicyChanged,
    BudgetReached,
    Command,
    ManageModeChanged,
    MessageForAgent,
    OperatorCommand,
)
from mala_tui.core.operator_messages import Delivery, MessageError
from mala_tui.core.phases import Cause, IllegalTransition, ManageMode, Phase, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.restart_flow import RestartFlow
from mala_tui.core.state_parts import StopFor


class OperatorFlow:
    """The manager's handlers for operator commands, settings and budget limits.

    Given the session's state, masking decisions (a mask asked for by hand) and the
    restart flow (wind-down, checkpoint, restart by hand, the emergency at a limit).
    """

    def __init__(
        self, state: ManagerState, masking: MaskingDecisions, restart_flow: RestartFlow
    ) -> None:
        self._state = state
        self._masking = masking
        self._restart_flow = restart_flow

    # -- budgets ---------------------------------------------------------------------

    def on_budget(self, obs: BudgetReached) -> Outcome:
        """Near a limit: the usual wind-down, then stop at the checkpoint instead of restarting.
        At it: stop now, with a checkpoint built from the transcript unless one is on its way.

        The runtime says so at every call while the session is near or over, so a moment
        this cannot act on (a pause, a prompt already queued) is simply passed over.
        """
        if self._state.phase.terminal or self._state.phase in (
            Phase.PAUSED,
            Phase.AWAITING_APPROVAL,
            Phase.RESTARTING,
        ):
            return Outcome()
        if (
            self._state.manage is not ManageMode.FULL
        ):  # no checkpoints in these modes: stop at the limit
            if not obs.over:
                return Outcome()
            self._state.check(Trigger.STOP)
            return self._state.end(obs.at, Trigger.STOP, EndStatus.STOPPED, obs.reason)
        if self._state.phase in (Phase.WINDING_DOWN, Phase.CHECKPOINTING):
            if self._state.budget_stop is None:
                self._state.budget_stop = obs.reason  # a checkpoint is on its way: stop there
            return Outcome()
        if self._state.turn.stopping in (StopFor.PROMPT, StopFor.PAUSE, StopFor.EMERGENCY):
            return Outcome()
        self._state.budget_stop = obs.reason
        if obs.over:
            return self._restart_flow.emergency(obs.at, obs.reason)
        self._state.pending.drop_mask()
        return self._restart_flow.wind_down(obs.at, self._state.usage.tokens, Cause.BUDGET)

    # -- the operator ----------------------------------------------------------------

    def on_command(self, obs: OperatorCommand) -> Outcome:
        """Pause, resume, stop, mask now, cancel, restart now, or take over by hand."""
        at = obs.at
        if self._state.by_hand and obs.command is not Command.STOP:
            # Anything else would send the agent a prompt, in a process of its own, while
            # the person's CLI writes the same transcript.
            raise IllegalTransition(
                f"{self._state.name} is open by hand in Claude Code: hand it back first"
            )
        match obs.command:
            case Command.STOP:
                self._state.check(Trigger.STOP)
                reason = obs.reason or "stopped by the operator"
                return self._state.end(at, Trigger.STOP, EndStatus.STOPPED, reason)
            case Command.PAUSE:
                moved = self._state.move(at, Trigger.PAUSE)
                stop = self._state.turn.streaming
                if stop:
                    self._state.turn.begin_stop(StopFor.PAUSE)
                return Outcome((Interrupt(),) if stop else (), (moved,))
            case Command.RESUME:
                moved = self._state.move(at, Trigger.RESUME)
                freed = self._masking.mask_before_resuming(at)
                if freed is not None:
                    # The pause let the prompt cache go cold: the waiting mask first.
                    return Outcome(freed.actions, (moved, *freed.events))
                kind, text, delivered = self._state.back_to_work(
                    at, PromptKind.OPERATOR_RESUME, Delivery.RESUME, session_name=self._state.name
                )
                return Outcome((SendPrompt(kind, text),), (moved, *delivered))
            case Command.MASK_NOW:
                self._state.check(Trigger.OPERATOR_MASK)
                return self._masking.mask(
                    at, self._state.usage.tokens, Trigger.OPERATOR_MASK, Cause.OPERATOR
                )
            case Command.CANCEL:
                return self._cancel(at, obs.reason or "cancelled by the operator")
            case Command.TAKE_OVER:
                return self._take_over(at)
            case Command.RESTART_NOW:
                if self._state.phase in (Phase.STOPPED, Phase.FAILED):
                    self._state.budget_stop = (
                        None  # the operator goes on: judged against the budget anew
                    )
                    return self._restart_flow.restart_by_hand(at)
                self._state.check(Trigger.OPERATOR_CHECKPOINT)
                self._state.pending.restart_for("asked by the operator", Cause.OPERATOR)
                return self._restart_flow.request_checkpoint(at, Trigger.OPERATOR_CHECKPOINT)
        raise IllegalTransition(f"{self._state.name}: unknown command {obs.command!r}")

    def _take_over(self, at: float) -> Outcome:
        """Stop the turn (as a pause does) and end the process: the person's interactive
        Claude Code is then the only one writing the session's transcript."""
        state = self._state
        if state.phase not in (Phase.RUNNING, Phase.PAUSED):
            raise IllegalTransition(
                f"{state.name} is {state.phase.value.replace('_', ' ')}: it can be taken over "
                "by hand while it is running or paused"
            )
        if state.session_id is None:
            raise IllegalTransition(f"{state.name} has no agent session yet to open by hand")
        events: list[ev.Event] = []
        actions: list[Action] = []
        if state.phase is Phase.RUNNING:
            events.append(state.move(at, Trigger.PAUSE))
            if state.turn.streaming:
                state.turn.begin_stop(StopFor.PAUSE)
                actions.append(Interrupt())
        state.taken_over()
        events.append(ev.TakenOver(at=at, session=state.name))
        actions.append(Disconnect(state.limits.disconnect_timeout))
        return Outcome(tuple(actions), tuple(events))

    def _cancel(self, at: float, reason: str) -> Outcome:
        """Out of the run, its work kept: a checkpoint first (unless one is already on its
        way or waiting for approval), then stopped. `reason`: who cancelled it, and why."""
        if self._state.phase in (Phase.AWAITING_APPROVAL, Phase.RESTARTING) or (
            self._state.manage is not ManageMode.FULL and not self._state.phase.terminal
        ):
            # The checkpoint is written already (or, unmanaged, never will be).
            self._state.check(Trigger.STOP)
            kept = "; checkpoint kept" if self._state.checkpoint is not None else ""
            return self._state.end(at, Trigger.STOP, EndStatus.STOPPED, reason + kept)
        if self._state.phase is Phase.PAUSED:
            self._state.check(Trigger.OPERATOR_CHECKPOINT)
            self._state.budget_stop = reason
            return self._restart_flow.request_checkpoint(at, Trigger.OPERATOR_CHECKPOINT)
        if self._state.phase in (Phase.WINDING_DOWN, Phase.CHECKPOINTING):
            self._state.budget_stop = reason  # its checkpoint is on its way: stop there
            return Outcome()
        self._state.check(Trigger.HARD_PRESSURE)
        self._state.budget_stop = reason
        self._state.pending.drop_mask()
        return self._restart_flow.wind_down(at, self._state.usage.tokens, Cause.OPERATOR)

    # -- settings --------------------------------------------------------------------

    def on_approval_policy(self, obs: ApprovalPolicyChanged) -> Outcome:
        if obs.required == self._state.require_approval:
            return Outcome()
        self._state.require_approval = obs.required
        return Outcome(
            events=(
                ev.ApprovalPolicySet(at=obs.at, session=self._state.name, required=obs.required),
            )
        )

    def set_manage_mode(self, obs: ManageModeChanged) -> Outcome:
        """The one place a session's management mode is set: what a `SetManageMode`
        action (core.operator_actions) becomes once its runner has heard it."""
        if obs.mode is self._state.manage:
            return Outcome()
        self._state.manage = obs.mode
        return Outcome(
            events=(ev.ManageModeSet(at=obs.at, session=self._state.name, mode=obs.mode),)
        )

    # -- messages --------------------------------------------------------------------

    def on_message_for_agent(self, obs: MessageForAgent) -> Outcome:
        """The operator says something to the agent: queued, or its next prompt if idle."""
        if self._state.phase.terminal:
            raise IllegalTransition(
                f"{self._state.name} has ended ({self._state.phase.value}): "
                "a message cannot reach its agent"
            )
        try:
            queued = self._state.messages.add(obs.at, obs.text)
        except MessageError as exc:
            raise IllegalTransition(f"{self._state.name}: {exc}") from None
        said = ev.MessageQueued(
            at=obs.at, session=self._state.name, number=queued.number, text=queued.text
        )
        if (
            self._state.phase is Phase.PAUSED
            and not self._state.turn.streaming
            and not self._state.by_hand  # it goes with the hand-back
        ):
            # Paused is idle: the message is what the agent goes on with.
            moved = self._state.move(obs.at, Trigger.RESUME)
            kind, text, delivered = self._state.back_to_work(
                obs.at, PromptKind.OPERATOR_RESUME, Delivery.IDLE, session_name=self._state.name
            )
            return Outcome((SendPrompt(kind, text),), (said, moved, *delivered))
        return Outcome(events=(said,))

    def stop_for_messages(self, outcome: Outcome) -> Outcome:
        """Messages wait and the agent is at work: stop its turn at the next clean point,
        after its running tools, so that they go next (`TurnFlow._after_stop`)."""
        if (
            not self._state.messages
            or self._state.phase is not Phase.RUNNING
            or not self._state.turn.streaming
            or self._state.turn.stopping is not None
        ):
            return outcome
        self._state.turn.begin_stop(StopFor.MESSAGE)
        return Outcome((*outcome.actions, StopTurn("a message from the operator")), outcome.events)
