"""Land or discard a worktree session's work from a console: what the app's keys call.

`mala-tui land` and `discard` do the same git work (runtime.git.landing) from the command
line, once the run is over. Here a console does it while the run may still be going on:
a session can be landed or discarded as soon as it has ended, never while it runs (its
agent could still be writing to the worktree). The git work runs in a thread, so the
console stays live; what was done is recorded through the run's own recorder (the
journal, the view, every console), the way every event is.

Refusals are `LandingError`s: one line, nothing changed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from mala_tui.core import events as ev
from mala_tui.core.commit_message import draft_commit_message, session_notes
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import BranchStatus
from mala_tui.core.view import SessionState
from mala_tui.runtime.git.landing import LandingError, Target, discard, land, status
from mala_tui.runtime.journal.writer import JournalInUse, RunJournal, StorageError
from mala_tui.runtime.run.recorder import Listeners, RunRecorder
from mala_tui.runtime.run.run_source import ResumeError, read_source, still_live

StillRunning = Callable[[str], str | None]
"""Why the session cannot be landed now (it is still running, say), or None."""


class WorktreeLandings(Protocol):
    """What a console lands and discards through: the run's own `Landings`, or an attached
    console's, which has the run's host do the git work (runtime.consoles.live_run)."""

    state: RunState

    def target(self, session: str) -> Target: ...

    def draft(self, session: str) -> str: ...

    async def status(self, session: str) -> BranchStatus | None: ...

    async def land(self, session: str, message: str) -> ev.WorktreeLanded: ...

    async def discard(self, session: str, *, force: bool) -> ev.WorktreeDiscarded: ...


class Landings:
    """The worktree sessions of one run, landed or discarded one at a time each."""

    def __init__(
        self,
        state: RunState,
        record: Callable[[ev.Event], object],
        still_running: StillRunning,
    ) -> None:
        self.state = state
        self._record = record
        self._still_running = still_running
        self._busy: set[str] = set()

    def target(self, session: str) -> Target:
        """The session's worktree, if its work can be landed or discarded now.

        Raises:
            LandingError: no such session, no worktree of its own, discarded already,
                still running, or being landed or discarded already.
        """
        state = self._session(session)
        record = state.worktree
        if record is None:
            raise LandingError(
                f"{session} has no worktree of its own: its run was not started with --worktree"
            )
        if record.status is not None and record.status.discarded:
            raise LandingError(f"{session}: its worktree and branch were discarded already")
        why = self._still_running(session)
        if why is not None:
            raise LandingError(
                f"{session} is {why}: its work can be landed or discarded once it has ended"
            )
        if session in self._busy:
            raise LandingError(f"{session} is being landed or discarded already")
        return Target.of(session, record)

    def draft(self, session: str) -> str:
        """The commit message for what the agent left uncommitted, drafted from its latest
        checkpoint (else its last words) and its task."""
        state = self._session(session)
        target = self.target(session)
        return draft_commit_message(
            state.task,
            session_notes(state),
            session=session,
            branch=target.branch,
            run_id=self.state.run_id,
        )

    async def status(self, session: str) -> BranchStatus | None:
        """What is left to land, read from git now (and shown from now on); None when the
        branch is gone."""
        target = self.target(session)
        found = await asyncio.to_thread(status, target)
        if found is not None:
            self._session(session).set_branch_status(found)
        return found

    async def land(self, session: str, message: str) -> ev.WorktreeLanded:
        """Commit the agent's edits with `message` and merge its branch
        (runtime.git.landing.land)."""
        if not message.strip():
            raise LandingError(f"{session}: the commit message is empty")
        if not message.endswith("\n"):
            message += "\n"
        target = self.target(session)
        with self._doing(session):
            event = await asyncio.to_thread(land, target, message)
        self._record(event)
        return event

    async def discard(self, session: str, *, force: bool) -> ev.WorktreeDiscarded:
        """Remove the session's worktree and branch; unless `force`, refused while it holds
        work not landed (runtime.git.landing.discard)."""
        target = self.target(session)
        with self._doing(session):
            event = await asyncio.to_thread(discard, target, force=force)
        self._record(event)
        return event

    def _session(self, session: str) -> SessionState:
        state = self.state.sessions.get(session)
        if state is None:
            raise LandingError(f"this run has no session {session!r}")
        return state

    @contextlib.contextmanager
    def _doing(self, session: str) -> Iterator[None]:
        """The session is being landed or discarded while the git work runs."""
        self._busy.add(session)
        try:
            yield
        finally:
            self._busy.discard(session)


class FinishedRun:
    """A finished run read from its journal (`mala-tui show`), whose worktree sessions can
    still be landed or discarded from its app, as `mala-tui land` and `discard` would.

    Nothing holds the journal while the app shows the run (a `resume` or a `land` from
    another terminal must be able to take it): it is reopened for each event, after the
    git work, and a run some mala-tui process writes again meanwhile is refused first.
    What was done goes into the view and to the app through a recorder of its own.
    """

    def __init__(self, folder: Path, state: RunState, recorder: RunRecorder | None = None) -> None:
        """`recorder`: the view's own, when a console already has one (else one is made)."""
        self.folder = folder
        self.recorder = recorder or RunRecorder(
            journal=None, state=state, on_storage_failure=_never
        )
        self.landings = Landings(state, self._record, self._still_running)

    @property
    def listeners(self) -> Listeners:
        return self.recorder.listeners

    def _still_running(self, session: str) -> str | None:
        try:
            live = still_live(read_source(self.folder))
        except ResumeError:
            return None  # nothing writes a journal that cannot be read; git decides the rest
        return None if live is None else f"in a run process {live} is writing again"

    def _record(self, event: ev.Event) -> None:
        """Journaled first, then shown; shown anyway when the journal cannot say it (git did
        the work: the app must not pretend otherwise), with the reason raised."""
        try:
            with RunJournal.reopen(self.folder) as journal:
                journal.write(event)
        except (JournalInUse, StorageError, OSError) as exc:
            self.recorder.record(event)
            raise LandingError(
                f"{event.session}: done in git, but the run's journal could not say so: {exc}"
            ) from None
        self.recorder.record(event)


def _never(exc: OSError) -> None:
    """A recorder without a journal has no disk to fail."""
