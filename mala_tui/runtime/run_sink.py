"""The run's one sink: every event is journaled, applied to the live view, and handed on.

Every event from every session passes through `RunSink.record`: it is journaled,
applied to the run's live view (core.view), and handed to the listeners (the app,
the headless printer) with a frozen snapshot of the session it changed. Nothing
is held back here: how often to redraw is the display's business, and the app's
bridge gathers updates per frame (ui.bridge). Events come per API call and per
message, never per token. A journal that cannot be written (a full disk) stops
the run, once (`storage_failed`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mala_tui.core import events as ev
from mala_tui.core.observations import Decision
from mala_tui.core.view import RunState, SessionSnapshot
from mala_tui.runtime.budget_watch import BudgetWatch
from mala_tui.runtime.journal import RunJournal, describe_os_error, redact_file
from mala_tui.runtime.run_types import ApprovalRequest
from mala_tui.runtime.session import SessionRunner

ApprovalMode = Literal["ask", "auto", "deny"]
SnapshotListener = Callable[[dict[str, SessionSnapshot]], None]
EventListener = Callable[[ev.Event], None]
ApprovalListener = Callable[[list["ApprovalRequest"]], None]


@dataclass
class _Listeners:
    snapshots: list[SnapshotListener] = field(default_factory=list)
    events: list[EventListener] = field(default_factory=list)
    approvals: list[ApprovalListener] = field(default_factory=list)


class RunSink:
    """What the supervisor records with; it sets every attribute here in its __init__."""

    journal: RunJournal | None
    state: RunState
    listeners: _Listeners
    budget: BudgetWatch
    runners: dict[str, SessionRunner]
    approvals: list[ApprovalRequest]
    approval_mode: ApprovalMode
    storage_failure: OSError | None
    _redacted_copies: set[Path]
    clock: Callable[[], float]

    def stop_for(self, cause: str) -> None:
        raise NotImplementedError

    # -- the sink ---------------------------------------------------------------------------------

    def record(self, event: ev.Event) -> ev.Event:
        """Journal an event and apply it to the live view; never raises for the journal's disk.

        A checkpoint that cannot be saved as a file is still in its journal line; a
        journal line that cannot be written stops the run (see `storage_failed`).
        """
        journal = self.journal
        if journal is not None and (journal.closed or journal.failure is not None):
            journal = None
        if isinstance(event, ev.CheckpointSaved) and not event.path and journal is not None:
            try:
                path = journal.save_checkpoint(event.session, event.number, event.text)
            except OSError as exc:
                self.storage_failed(exc)
            else:
                event = event.model_copy(update={"path": str(path)})
        if journal is not None:
            try:
                journal.write(event)
            except OSError as exc:
                self.storage_failed(exc)
            if journal.disk_full is not None:
                self.storage_failed(journal.disk_full)
        if isinstance(event, ev.MaskApplied):
            self._redact_transcript_copies()
        self.state.apply(event)
        self._track_approvals(event)
        for notice in self.budget.observe(event, self.state):
            target = self.runners.get(notice.session)
            if target is not None and target.status is None:
                target.budget_reached(notice.over, notice.reason)
        for listener in list(self.listeners.events):
            try:
                listener(event)
            except OSError:
                # A printer whose terminal is gone (SIGHUP) or whose pipe closed: the run
                # goes on, journaled, without it.
                self.listeners.events.remove(listener)
        if event.session:
            self._publish(event.session)
        return event

    def storage_failed(self, exc: OSError) -> None:
        """The run's files cannot be written: stop every session, once.

        A failed checkpoint file alone would not need it, but it comes from the same
        disk as the journal: stopping now keeps the journal's reserve for the shutdown.
        """
        if self.storage_failure is not None:
            return
        self.storage_failure = exc
        self.stop_for(f"the run's files could not be written: {describe_os_error(exc)}")

    def _redact_transcript_copies(self) -> None:
        """Scrub secrets from the transcript copies masking kept under the run's folder.

        The backend copies a transcript before rewriting it; the copy is the original
        for a person to read, so it is kept, but without keys or tokens in it.
        """
        if self.journal is None:
            return
        folder = self.journal.directory / "transcripts"
        if not folder.is_dir():
            return
        for copy in sorted(folder.glob("*.jsonl")):
            if copy in self._redacted_copies:
                continue
            try:
                redact_file(copy)
            except OSError as exc:
                self.storage_failed(exc)
                return
            self._redacted_copies.add(copy)

    def _track_approvals(self, event: ev.Event) -> None:
        if isinstance(event, ev.ApprovalRequested):
            state = self.state.sessions[event.session]
            text = state.checkpoints[-1].text if state.checkpoints else ""
            request = ApprovalRequest(
                event.session, event.checkpoint_number, text, event.reason, event.at
            )
            if self.approval_mode == "deny":
                self.runners[event.session].answer_approval(Decision.DENY, None, "policy")
            else:
                self.approvals.append(request)
        elif isinstance(event, ev.ApprovalDecided | ev.SessionEnded):
            self.approvals = [a for a in self.approvals if a.session != event.session]
        else:
            return
        for listener in self.listeners.approvals:
            listener(list(self.approvals))

    def _publish(self, session: str) -> None:
        state = self.state.sessions.get(session)
        if state is None or not self.listeners.snapshots:
            return
        changed = {session: state.snapshot()}
        for listener in self.listeners.snapshots:
            listener(changed)

    def snapshots(self) -> dict[str, SessionSnapshot]:
        return {name: state.snapshot() for name, state in self.state.sessions.items()}
