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
from mala_tui.core.observations import Command, Decision
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.phases import ManageMode
from mala_tui.core.view import RunState, SessionSnapshot
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

    def command(self, session: str, command: Command) -> None: ...

    def decide(
        self,
        session: str,
        decision: Decision,
        edited_text: str | None = None,
        by: AnsweredBy = AnsweredBy.OPERATOR,
        checkpoint_number: int | None = None,
    ) -> None:
        """Answer the approval of this checkpoint of the session.

        Raises:
            KeyError: it does not wait (`runtime.questions.desk.QuestionClosed` says who
                answered it).
        """

    def set_require_approval(self, session: str | None, required: bool) -> None: ...

    def set_manage_mode(self, session: str, mode: ManageMode) -> None: ...

    def stop_all(self) -> None: ...

    def stop_for(self, cause: str) -> None:
        """Stop every session because of `cause` (a quit): each one's ending says so."""

    def hurry(self) -> None:
        """The stop was asked for again: kill the agent processes now, not wait for them."""

    def alive_pids(self) -> list[int]:
        """Agent processes still running: none may be left when the app ends."""

    def transcript_path(self, session: str) -> Path | None: ...

    def say(self, session: str, text: str) -> None:
        """A message for the session's agent (raises MessageError for an empty one)."""

    def add_task(self, name: str, task: str, cwd: Path, profile: str = "") -> None:
        """A new session in the running run, with one of its named profiles or ("") the
        run's settings (raises ValueError, saying why, when it cannot)."""

    def fork(self, parent: str, name: str, instruction: str) -> None:
        """A new session from `parent`'s conversation as it stands, told `instruction`
        (raises ValueError, saying why, when it cannot)."""

    def answer_permission(
        self, session: str, request_id: str, answer: PermissionAnswer, reason: str = ""
    ) -> None:
        """Answer a tool use waiting for permission (the waiting ones are in `state`).

        Raises:
            KeyError: no such request waits (answered meanwhile, timed out, session ended;
                `runtime.questions.desk.QuestionClosed` says who answered it).
        """


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

    def set_budget(self, session: str | None, limits: BudgetLimits) -> None:
        """New limits for one session, or (None) for the whole run."""


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
