"""The app's one handle on what it shows: reads, operator commands, and answers.

Screens never talk to the supervisor directly: they ask the controller, which
knows whether the run is live (commands go to the supervisor) or read-only (a
journal: nothing can be changed). What it shows is what the run recorded: the
questions waiting for a person are the run's one list (`RunState.questions`),
and an answer leaves it when the run records its decision, not before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mala_tui.core.breakdown import WindowContents
from mala_tui.core.budget import BudgetCheck, BudgetLimits
from mala_tui.core.operator_actions import OperatorAction, SetBudget
from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion, Question
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.view import SessionState
from mala_tui.runtime.consoles.sockets import ChannelError
from mala_tui.runtime.run.landings import WorktreeLandings
from mala_tui.ui.source import (
    BreakdownSource,
    BudgetSource,
    HandSource,
    LandingSource,
    LiveSource,
    ProfileSource,
    Source,
)


class ReadOnlyError(RuntimeError):
    """An action on a run that cannot be changed: a finished run read from its journal, a
    run that has ended since, or one whose host cannot be reached (the message says which)."""


class Controller:
    """Reads the run and sends the operator's commands to its supervisor."""

    def __init__(self, source: Source, *, landings: WorktreeLandings | None = None) -> None:
        """`landings`: for a finished run, how its worktree sessions are landed (a live run
        has its own)."""
        self.supervisor: LiveSource | None = None if isinstance(source, RunState) else source
        self.state: RunState = source if isinstance(source, RunState) else source.state
        found: object = self.supervisor
        self._landings = found.landings if isinstance(found, LandingSource) else landings
        self.over = ""
        """Why a live run can no longer be acted on, once it cannot ("" while it can): it
        ended, or its host went away. Set by whoever follows the run (the app)."""

    @property
    def live(self) -> bool:
        """True when the run is in progress and can be acted on."""
        return self.supervisor is not None and not self.over

    def run_over(self, why: str) -> None:
        """The run followed has ended (or its host is gone): from now on nothing is sent to it."""
        self.over = why or "the run has ended"

    # -- reading -----------------------------------------------------------------------------------

    def snapshots(self) -> dict[str, SessionSnapshot]:
        """Every session now, in the order they appeared."""
        return {name: state.snapshot() for name, state in self.state.sessions.items()}

    def snapshot(self, name: str) -> SessionSnapshot | None:
        state = self.state.sessions.get(name)
        return None if state is None else state.snapshot()

    def session(self, name: str) -> SessionState | None:
        return self.state.sessions.get(name)

    # -- acting ------------------------------------------------------------------------------------

    @contextmanager
    def _live(self) -> Iterator[LiveSource]:
        """The run to act on; what cannot reach it (its host gone) is a ReadOnlyError saying
        so, never a crash: a console learns that its run is over a moment after its host."""
        if self.supervisor is None:
            raise ReadOnlyError("this run has ended: it can be read, not changed")
        if self.over:
            raise ReadOnlyError(f"{self.over}: it can be read, not changed")
        try:
            yield self.supervisor
        except ChannelError as exc:
            raise ReadOnlyError(str(exc)) from None

    def act(self, action: OperatorAction) -> None:
        """Send what the person did to the run (core.operator_actions); an answer leaves the
        list of questions once the run records it.

        Raises:
            ReadOnlyError: the run cannot be acted on (ended, or its host gone), or has no
                budgets to change from here.
            KeyError: no such session, or the question no longer waits
                (`runtime.questions.desk.QuestionClosed` says who answered it).
            MessageError, ValueError: the run refused it (the message says why).
        """
        with self._live() as run:
            if isinstance(action, SetBudget) and not isinstance(run, BudgetSource):
                raise ReadOnlyError("this run's budgets cannot be changed from here")
            run.act(action)

    def profile_names(self) -> list[str]:
        """The run's named profiles a new session may be given, in the tasks file's order.

        Raises:
            ReadOnlyError: the run cannot be acted on (ended, or its host gone).
        """
        with self._live() as run:
            source: object = run
            return source.profile_names() if isinstance(source, ProfileSource) else []

    def requires_approval_everywhere(self) -> bool:
        snapshots = self.snapshots()
        return bool(snapshots) and all(snap.require_approval for snap in snapshots.values())

    def transcript_path(self, name: str) -> Path | None:
        with self._live() as run:
            return run.transcript_path(name)

    def budget(self) -> BudgetSource | None:
        """The run's budgets, when it is live and has them."""
        source: object = self.supervisor if self.live else None
        return source if isinstance(source, BudgetSource) else None

    def budget_check(self, name: str) -> BudgetCheck | None:
        """Where the session stands against its budget, when the run is live and has budgets
        (None too when its host cannot be reached to ask for the limits)."""
        budget = self.budget()
        if budget is None:
            return None
        try:
            return budget.budget_check(name)
        except ChannelError:
            return None

    def budget_limits(self, name: str) -> tuple[BudgetLimits, BudgetLimits]:
        """The session's limits and the run's.

        Raises:
            ReadOnlyError: the run has no budgets to change (ended, or its host gone).
        """
        with self._live() as run:
            source: object = run
            if not isinstance(source, BudgetSource):
                raise ReadOnlyError("this run's budgets cannot be changed from here")
            return source.budget_limits(name)

    def hands(self) -> HandSource | None:
        """Opening sessions by hand, when this console can (a live run in its own process)."""
        source: object = self.supervisor if self.live else None
        return source if isinstance(source, HandSource) else None

    def landings(self) -> WorktreeLandings | None:
        """Landing and discarding worktree sessions' work, when this run can (live or not)."""
        return self._landings

    def window_contents(self, name: str) -> WindowContents | None:
        """What fills the session's window, while the run is live (a journal does not hold it)."""
        source: object = self.supervisor if self.live else None
        if isinstance(source, BreakdownSource):  # a LiveSource may or may not be one
            try:
                return source.window_contents(name)
            except ChannelError:
                return None  # its host gone: nothing to show, as for a finished run
        return None

    # -- questions: approvals and permission requests --------------------------------------------

    def questions(self) -> list[Question]:
        """Every question waiting for a person, oldest first (none in a finished run)."""
        return self.state.questions() if self.live else []

    def pending(self) -> list[ApprovalQuestion]:
        """Restarts waiting for approval, oldest first."""
        return [q for q in self.questions() if isinstance(q, ApprovalQuestion)]

    def pending_permissions(self) -> list[PermissionQuestion]:
        """Tool uses waiting for permission, oldest first."""
        return [q for q in self.questions() if isinstance(q, PermissionQuestion)]
