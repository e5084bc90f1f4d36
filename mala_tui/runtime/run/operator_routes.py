"""Where each thing a person does goes: the supervisor's routes for operator actions.

An answer goes to the run's desk (the approvals, the permission requests), a new or
forked session to `NewSessions`, a budget to the budget watch, and the rest to the
session's runner, which applies it (core.operator_actions says what each one is).
"""

from __future__ import annotations

from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Command
from mala_tui.core.operator_actions import (
    AddSession,
    AnswerApproval,
    AnswerPermission,
    ForkSession,
    OperatorAction,
    RequireApproval,
    SayToAgent,
    SessionCommand,
    SetBudget,
    SetManageMode,
)
from mala_tui.core.operator_messages import MessageError, checked_text
from mala_tui.runtime.questions.approvals import Approvals
from mala_tui.runtime.run.budget_watch import BudgetWatch
from mala_tui.runtime.run.new_sessions import NewSessions
from mala_tui.runtime.run.permission_requests import PermissionRequests
from mala_tui.runtime.run.runners import Runner
from mala_tui.runtime.run.slots import Slots

STOPPED_BY_OPERATOR = "stopped by the operator"


class OperatorRoutes:
    """Carries out operator actions on the run's parts (`Supervisor.act`)."""

    def __init__(
        self,
        *,
        runners: dict[str, Runner],
        approvals: Approvals,
        permissions: PermissionRequests,
        new_sessions: NewSessions,
        budget: BudgetWatch,
        slots: Slots,
    ) -> None:
        self.runners = runners
        self.approvals = approvals
        self.permissions = permissions
        self.new_sessions = new_sessions
        self.budget = budget
        self.slots = slots

    def act(self, action: OperatorAction) -> None:
        """Raises as `Supervisor.act` says."""
        match action:
            case AnswerApproval():
                self.approvals.decide(
                    action.session,
                    action.decision,
                    action.edited_text,
                    action.by,
                    action.checkpoint_number,
                    console=action.console,
                )
            case AnswerPermission():
                self.permissions.answer(
                    action.session,
                    action.request_id,
                    action.answer,
                    action.reason,
                    console=action.console,
                )
            case AddSession():
                self.new_sessions.add_task(action.name, action.task, action.cwd, action.profile)
            case ForkSession():
                self.new_sessions.fork(action.parent, action.name, action.instruction)
            case SetBudget():
                if action.session is not None and action.session not in self.runners:
                    raise KeyError(f"no session {action.session!r} in this run")
                self.budget.set_limits(action.session, action.limits)
            case RequireApproval():
                names = list(self.runners) if action.session is None else [action.session]
                for name in names:
                    self.runners[name].apply(action)
            case SayToAgent():
                runner = self.runners[action.session]
                text = checked_text(action.text)
                if runner.status is not None or action.session in self.slots.never_started:
                    raise MessageError(
                        f"{action.session} has ended: a message cannot reach its agent"
                    )
                runner.apply(action.model_copy(update={"text": text}))
            case SessionCommand(command=Command.STOP | Command.CANCEL) if (
                action.session in self.slots.queued
            ):
                self.slots.end_unstarted(action.session, EndStatus.STOPPED, STOPPED_BY_OPERATOR)
            case SessionCommand() | SetManageMode():
                self.runners[action.session].apply(action)
