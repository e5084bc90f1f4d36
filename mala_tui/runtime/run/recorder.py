"""The run's recorder: every event is journaled, applied to the live view, and handed on.

Every event from every session passes through `RunRecorder.record`: it is journaled,
applied to the run's live view (core.view), and handed to the listeners (the app,
the headless printer, the supervisor's own) with a frozen snapshot of the session it
changed and, when the questions waiting for a person changed, their new list. The
recorder only records: what an event should cause (a budget reached, a question
whose session ended) is a listener's business, which tells whoever owns the action.
Nothing is held back here: how often to redraw is the display's business, and the
app's bridge gathers updates per frame (ui.bridge). Events come per API call and per
message, never per token. A journal that cannot be written (a full disk) is reported
once, to the `on_storage_failure` its owner gave.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mala_tui.core import events as ev
from mala_tui.core.questions import Question, touches_questions
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.runtime.journal.writer import RunJournal
from mala_tui.runtime.private.redaction import redact_json_line

SnapshotListener = Callable[[dict[str, SessionSnapshot]], None]
EventListener = Callable[[ev.Event], None]
QuestionListener = Callable[[list[Question]], None]
LineListener = Callable[[ev.Event, str], None]


@dataclass
class Listeners:
    snapshots: list[SnapshotListener] = field(default_factory=list)
    """Told the frozen snapshot of each session an event changed."""
    events: list[EventListener] = field(default_factory=list)
    """Told every event, in order, once it is journaled and in the view."""
    questions: list[QuestionListener] = field(default_factory=list)
    """Told the questions waiting for a person (`RunState.questions`) when they change."""
    lines: list[LineListener] = field(default_factory=list)
    """Told every event with its journal line (redacted JSON), in the order of their
    sequence numbers, before the event listeners: what a console's stream carries."""


class RunRecorder:
    """Journals each event, applies it to the run's view, and tells the listeners."""

    def __init__(
        self,
        *,
        journal: RunJournal | None,
        state: RunState,
        on_storage_failure: Callable[[OSError], None],
    ) -> None:
        self.journal = journal
        self.state = state
        self.listeners = Listeners()
        self.storage_failure: OSError | None = None
        """The first error writing the run's files, once there has been one."""
        self._on_storage_failure = on_storage_failure
        self.seq = journal.last_seq if journal is not None else 0
        """The sequence number of the last event recorded."""

    def record(self, event: ev.Event) -> ev.Event:
        """Journal an event and apply it to the live view; never raises for the journal's disk.

        A checkpoint that cannot be saved as a file is still in its journal line; a
        journal line that cannot be written is reported (see `storage_failed`).
        """
        journal = self.journal
        if journal is not None and (journal.closed or journal.failure is not None):
            journal = None
        self.seq += 1
        update: dict[str, object] = {"seq": self.seq}
        if isinstance(event, ev.CheckpointSaved) and not event.path and journal is not None:
            try:
                path = journal.save_checkpoint(event.session, event.number, event.text)
            except OSError as exc:
                self.storage_failed(exc)
            else:
                update["path"] = str(path)
        event = event.model_copy(update=update)
        line = ""
        failure: OSError | None = None
        if journal is not None:
            try:
                line = journal.write(event)
            except OSError as exc:
                failure = exc
        self._apply(event, line)
        # Reported once this event is in the view and streamed: stopping the run records
        # more events, and they must come after this one everywhere.
        if failure is not None:
            self.storage_failed(failure)
        if journal is not None and journal.disk_full is not None:
            self.storage_failed(journal.disk_full)
        return event

    def follow(self, event: ev.Event) -> None:
        """An event another process recorded (the host of a run this console follows):
        applied to the view and told to the listeners as `record` does, keeping its
        number, journaling nothing."""
        self.seq = max(self.seq, event.seq)
        self._apply(event, "")

    def _apply(self, event: ev.Event, line: str) -> None:
        asked = self.state.questions() if touches_questions(event) else None
        self.state.apply(event)
        if self.listeners.lines:
            line = line or redact_json_line(ev.event_json(event))
            for tell in list(self.listeners.lines):
                tell(event, line)
        for listener in list(self.listeners.events):
            try:
                listener(event)
            except OSError:
                # A printer whose terminal is gone (SIGHUP) or whose pipe closed: the run
                # goes on, journaled, without it.
                self.listeners.events.remove(listener)
        if asked is not None:
            self._tell_questions(asked)
        if event.session:
            self._publish(event.session)

    def storage_failed(self, exc: OSError) -> None:
        """The run's files cannot be written: report it, once.

        A failed checkpoint file alone would not need it, but it comes from the same
        disk as the journal: the owner stops the run now, keeping the journal's
        reserve for the shutdown.
        """
        if self.storage_failure is not None:
            return
        self.storage_failure = exc
        self._on_storage_failure(exc)

    def snapshots(self) -> dict[str, SessionSnapshot]:
        return {name: state.snapshot() for name, state in self.state.sessions.items()}

    def _tell_questions(self, before: list[Question]) -> None:
        waiting = self.state.questions()
        if waiting == before:
            return
        for listener in list(self.listeners.questions):
            listener(list(waiting))

    def _publish(self, session: str) -> None:
        state = self.state.sessions.get(session)
        if state is None or not self.listeners.snapshots:
            return
        changed = {session: state.snapshot()}
        for listener in self.listeners.snapshots:
            listener(changed)
