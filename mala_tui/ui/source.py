"""What the app shows: a live run it can act on, or a finished run it can only read.

The app is built against `LiveSource`, the part of `runtime.run.supervisor.Supervisor`
it uses, so the command line passes a real Supervisor while tests, screenshots
and the benchmark may pass a recording stand-in with the same shape. A
`RunState` read back from a journal is the read-only source (`mala-tui show`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from mala_tui.core.breakdown import WindowContents
from mala_tui.core.budget import BudgetCheck, BudgetLimits
from mala_tui.core.operator_actions import OperatorAction
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.runtime.run.landings import WorktreeLandings
from mala_tui.runtime.run.recorder import EventListener, QuestionListener, SnapshotListener
from mala_tui.runtime.session.by_hand import Interactive


class Listeners(Protocol):
    """Callbacks the supervisor calls on the event loop; the app appends its own."""

    @property
    def snapshots(self) -> list[SnapshotListener]: ...

    @property
    def events(self) -> list[EventListener]: ...

    @property
    def questions(self) -> list[QuestionListener]: ...


class Observed(Protocol):
    """What records a run's events and tells its listeners (a live run; a finished run's
    landings)."""

    @property
    def listeners(self) -> Listeners: ...


class LiveSource(Protocol):
    """A run in progress, as the app sees it (`runtime.run.supervisor.Supervisor` is one)."""

    @property
    def state(self) -> RunState:
        """Every event so far, reduced: the histories the detail screens draw, and the
        questions waiting for a person (`RunState.questions`)."""

    @property
    def listeners(self) -> Listeners: ...

    def snapshots(self) -> dict[str, SessionSnapshot]: ...

    async def run(self) -> object:
        """Run every session to its end; cancelled, it stops them all first."""

    def act(self, action: OperatorAction) -> None:
        """Carry out what a person did (core.operator_actions).

        Raises:
            KeyError: no such session, or the question no longer waits
                (`runtime.questions.desk.QuestionClosed` says who answered it).
            MessageError: a message that cannot reach the agent.
            ValueError: a session that cannot be added or forked (it says why).
        """

    def stop_all(self) -> None: ...

    def stop_for(self, cause: str) -> None:
        """Stop every session because of `cause` (a quit): each one's ending says so."""

    def hurry(self) -> None:
        """The stop was asked for again: kill the agent processes now, not wait for them."""

    def alive_pids(self) -> list[int]:
        """Agent processes still running: none may be left when the app ends."""

    def transcript_path(self, session: str) -> Path | None: ...


@runtime_checkable
class BreakdownSource(Protocol):
    """A live run that can show what fills a session's window (the real Supervisor can)."""

    def window_contents(self, session: str) -> WindowContents | None:
        """The session's conversation and calibration now; None before it has any."""


@runtime_checkable
class BudgetSource(Protocol):
    """A live run with budgets the operator can see and raise (the real Supervisor)."""

    def budget_limits(self, session: str) -> tuple[BudgetLimits, BudgetLimits]:
        """The session's limits and the run's."""

    def budget_check(self, session: str) -> BudgetCheck:
        """Where the session stands against its own limits now."""


@runtime_checkable
class ProfileSource(Protocol):
    """A live run with named profiles a new session may be given (a tasks file's)."""

    def profile_names(self) -> list[str]:
        """Their names, in the tasks file's order."""


@runtime_checkable
class HandSource(Protocol):
    """A live run whose sessions can be opened by hand in the interactive Claude Code from
    this console (the real Supervisor, in the console's own process)."""

    async def take_over(self, session: str) -> Interactive:
        """End the session's process and say how to open it instead (raises ValueError, or
        ByHandError, saying why when it cannot)."""

    async def hand_back(self, session: str, *, go_on: bool) -> None:
        """Read the session's transcript again; then it goes on supervised, or ends."""


@runtime_checkable
class LandingSource(Protocol):
    """A run whose worktree sessions' work can be landed or discarded from the app (the real
    Supervisor; a finished run's journal, reopened for each landing)."""

    @property
    def landings(self) -> WorktreeLandings: ...


Source = LiveSource | RunState
"""What `MalaApp` is given: a live run, or a finished one read from its journal."""
