"""What the operator and the budgets ask of a session: commands, and stopping at a limit.

The operator pauses, resumes, stops, masks now or restarts now (by hand, from a
stopped session's checkpoint). A budget near its limit winds the session down
as the hard threshold would, but stops at the checkpoint instead of restarting;
at the limit it stops at once, with a checkpoint kept.
"""

from __future__ import annotations

from mala_tui.core.actions import EndStatus, Interrupt, SendPrompt
from mala_tui.core.observations import BudgetReached, Command, OperatorCommand
from mala_tui.core.phases import Cause, IllegalTransition, ManageMode, Phase, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.recovery import Recovery
from mala_tui.core.session_state import Outcome, StopFor


class OperatorFlow(Recovery):
    """The manager's handlers for operator commands and budget limits."""

    _budget_stop: str | None = None
    """Why the session stops at its next checkpoint instead of restarting (a budget)."""

    # -- budgets ---------------------------------------------------------------------

    def _on_budget(self, obs: BudgetReached) -> Outcome:
        """Near a limit: the usual wind-down, then stop at the checkpoint instead of restarting.
        At it: stop now, with a checkpoint built from the transcript unless one is on its way.

        The runtime says so at every call while the session is near or over, so a moment
        this cannot act on (a pause, a prompt already queued) is simply passed over.
        """
        if self.phase.terminal or self.phase in (
            Phase.PAUSED,
            Phase.AWAITING_APPROVAL,
            Phase.RESTARTING,
        ):
            return Outcome()
        if self.manage is not ManageMode.FULL:  # no checkpoints in these modes: stop at the limit
            if not obs.over:
                return Outcome()
            self._check(Trigger.STOP)
            return self._end(obs.at, Trigger.STOP, EndStatus.STOPPED, obs.reason)
        if self.phase in (Phase.WINDING_DOWN, Phase.CHECKPOINTING):
            if self._budget_stop is None:
                self._budget_stop = obs.reason  # a checkpoint is on its way: stop there
            return Outcome()
        if self._turn.stopping in (StopFor.PROMPT, StopFor.PAUSE, StopFor.EMERGENCY):
            return Outcome()
        self._budget_stop = obs.reason
        if obs.over:
            return self._emergency(obs.at, obs.reason)
        self._pending.mask = None
        return self._wind_down(obs.at, self.usage.tokens, Cause.BUDGET)

    def _checkpoint_trigger(self) -> Trigger:
        if self._budget_stop is not None:
            return Trigger.CHECKPOINT_AT_LIMIT
        return super()._checkpoint_trigger()

    def _end(self, at: float, trigger: Trigger, status: EndStatus, reason: str) -> Outcome:
        if trigger is Trigger.CHECKPOINT_AT_LIMIT and self._budget_stop is not None:
            reason = f"{self._budget_stop}; checkpoint kept"
        return super()._end(at, trigger, status, reason)

    # -- the operator ----------------------------------------------------------------

    def _on_command(self, obs: OperatorCommand) -> Outcome:
        at = obs.at
        match obs.command:
            case Command.STOP:
                self._check(Trigger.STOP)
                reason = obs.reason or "stopped by the operator"
                return self._end(at, Trigger.STOP, EndStatus.STOPPED, reason)
            case Command.PAUSE:
                moved = self._move(at, Trigger.PAUSE)
                stop = self._turn.streaming
                if stop:
                    self._turn.stopping = StopFor.PAUSE
                return Outcome((Interrupt(),) if stop else (), (moved,))
            case Command.RESUME:
                moved = self._move(at, Trigger.RESUME)
                text = self.prompts.render(PromptKind.OPERATOR_RESUME, session_name=self.name)
                self._begin_turn(text)
                return Outcome((SendPrompt(PromptKind.OPERATOR_RESUME, text),), (moved,))
            case Command.MASK_NOW:
                self._check(Trigger.OPERATOR_MASK)
                return self._mask(at, self.usage.tokens, Trigger.OPERATOR_MASK, Cause.OPERATOR)
            case Command.RESTART_NOW:
                if self.phase in (Phase.STOPPED, Phase.FAILED):
                    self._budget_stop = None  # the operator goes on: judged against the budget anew
                    return self._restart_by_hand(at)
                self._check(Trigger.OPERATOR_CHECKPOINT)
                self._pending.restart_reason = "asked by the operator"
                self._pending.restart_cause = Cause.OPERATOR
                return self._request_checkpoint(at, Trigger.OPERATOR_CHECKPOINT)
        raise IllegalTransition(f"{self.name}: unknown command {obs.command!r}")
