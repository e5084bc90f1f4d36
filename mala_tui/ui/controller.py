"""The app's one handle on what it shows: reads, operator commands, and the approval queue.

Screens never talk to the supervisor directly: they ask the controller, which
knows whether the run is live (commands go to the supervisor) or read-only (a
journal: nothing can be changed), and which approvals are still waiting for an
answer from this app.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.observations import Command, Decision
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.core.phases import ManageMode
from mala_tui.core.view import RunState, SessionSnapshot, SessionState
from mala_tui.runtime.run_types import ApprovalRequest
from mala_tui.ui.source import BudgetSource, LiveSource, Source, WindowSource


class ReadOnlyError(RuntimeError):
    """An action on a finished run read from its journal."""


class Controller:
    """Reads the run and sends the operator's commands to its supervisor."""

    def __init__(self, source: Source) -> None:
        self.supervisor: LiveSource | None = None if isinstance(source, RunState) else source
        self.state: RunState = source if isinstance(source, RunState) else source.state
        self._answered: set[tuple[str, int]] = set()
        self._approval_overrides: dict[str, bool] = {}
        self._answered_permissions: set[tuple[str, str]] = set()

    @property
    def live(self) -> bool:
        """True when the run is in progress and can be acted on."""
        return self.supervisor is not None

    # -- reading -----------------------------------------------------------------------------------

    def snapshots(self) -> dict[str, SessionSnapshot]:
        """Every session now, in the order they appeared."""
        return self.adjust({name: state.snapshot() for name, state in self.state.sessions.items()})

    def snapshot(self, name: str) -> SessionSnapshot | None:
        state = self.state.sessions.get(name)
        return None if state is None else self.adjust({name: state.snapshot()})[name]

    def session(self, name: str) -> SessionState | None:
        return self.state.sessions.get(name)

    def adjust(self, snapshots: dict[str, SessionSnapshot]) -> dict[str, SessionSnapshot]:
        """Snapshots with what this app changed and the run has not recorded yet.

        Switching approval on or off goes through the session's inbox and is recorded
        when the session takes it in; the app shows the new setting at once.
        """
        if not self._approval_overrides:
            return snapshots
        return {
            name: (
                replace(snap, require_approval=self._approval_overrides[name])
                if name in self._approval_overrides
                else snap
            )
            for name, snap in snapshots.items()
        }

    # -- acting ------------------------------------------------------------------------------------

    def _live(self) -> LiveSource:
        if self.supervisor is None:
            raise ReadOnlyError("this run has ended: it can be read, not changed")
        return self.supervisor

    def command(self, name: str, command: Command) -> None:
        self._live().command(name, command)

    def set_require_approval(self, name: str | None, required: bool) -> None:
        """Switch approval before restarts on or off, for one session or (None) for all."""
        self._live().set_require_approval(name, required)
        for target in self.state.sessions if name is None else [name]:
            self._approval_overrides[target] = required

    def set_manage_mode(self, name: str, mode: ManageMode) -> None:
        """How much of one session's window mala-tui manages: full, mask or off."""
        self._live().set_manage_mode(name, mode)

    def say(self, name: str, text: str) -> None:
        """A message for the session's agent, at its next clean point."""
        self._live().say(name, text)

    def add_task(self, name: str, task: str, cwd: Path) -> None:
        """A new session in the running run."""
        self._live().add_task(name, task, cwd)

    def requires_approval_everywhere(self) -> bool:
        snapshots = self.snapshots()
        return bool(snapshots) and all(snap.require_approval for snap in snapshots.values())

    def transcript_path(self, name: str) -> Path | None:
        return self._live().transcript_path(name)

    def budget(self) -> BudgetSource | None:
        """The run's budgets, when it is live and has them."""
        source: object = self.supervisor
        return source if isinstance(source, BudgetSource) else None

    def window_contents(self, name: str) -> WindowContents | None:
        """What fills the session's window, while the run is live (a journal does not hold it)."""
        source: object = self.supervisor  # a LiveSource may or may not also be a WindowSource
        if isinstance(source, WindowSource):
            return source.window_contents(name)
        return None

    # -- approvals ---------------------------------------------------------------------------------

    def pending(self) -> list[ApprovalRequest]:
        """Approvals waiting for an answer this app has not given yet, oldest first."""
        if self.supervisor is None:
            return []
        return [
            request
            for request in self.supervisor.approvals
            if (request.session, request.checkpoint_number) not in self._answered
        ]

    def forget_answered(self) -> None:
        """Drop answers the supervisor has acted on (their requests left its list)."""
        if self.supervisor is not None:
            asked = {(r.session, r.checkpoint_number) for r in self.supervisor.approvals}
            self._answered &= asked

    def decide(
        self, request: ApprovalRequest, decision: Decision, edited_text: str | None = None
    ) -> None:
        """Answer one approval; it leaves the queue at once, before the session acts on it."""
        self._live().decide(request.session, decision, edited_text)
        self._answered.add((request.session, request.checkpoint_number))

    # -- permission requests -----------------------------------------------------------------------

    def pending_permissions(self) -> list[ev.PermissionRequested]:
        """Tool uses waiting for this app's answer, oldest first (none in a finished run)."""
        if self.supervisor is None:
            return []
        waiting = [
            request
            for state in self.state.sessions.values()
            for request in state.permissions_waiting.values()
            if (request.session, request.request_id) not in self._answered_permissions
        ]
        return sorted(waiting, key=lambda request: request.at)

    def answer_permission(
        self, request: ev.PermissionRequested, answer: PermissionAnswer, reason: str = ""
    ) -> bool:
        """Answer one request; False when it no longer waits (answered by a timeout, say)."""
        key = (request.session, request.request_id)
        try:
            self._live().answer_permission(request.session, request.request_id, answer, reason)
        except KeyError:
            return False
        finally:
            self._answered_permissions.add(key)
        return True
