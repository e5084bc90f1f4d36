"""From supervisor callbacks to Textual signals, coalesced to at most one publication a frame.

The supervisor calls its listeners on the app's event loop (never from another
thread), for every event and with the snapshot of every session it changed: it
holds nothing back. Redrawing on each would spend the frame budget many times
over with 50 busy sessions, so the bridge only gathers: the newest snapshot per
session, the events in order, the latest list of questions waiting for a person;
and publishes them together once per frame. This is the one place updates are
coalesced. After the person's own action the app may `flush` at once, so what the
run recorded for it shows without waiting for the frame; nothing is published that
the run did not say.
"""

from __future__ import annotations

import asyncio
from typing import Final

from textual.dom import DOMNode
from textual.signal import Signal

from mala_tui.core import events as ev
from mala_tui.core.questions import Question
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.ui.source import Observed

FRAME_SECONDS: Final = 1 / 30
"""How long updates gather before they are published: one frame at 30 fps."""


class UpdateBridge:
    """Subscribes to a live source's listeners and publishes per frame on three signals."""

    def __init__(self, owner: DOMNode, *, frame: float = FRAME_SECONDS) -> None:
        self.frame = frame
        self.snapshots: Signal[dict[str, SessionSnapshot]] = Signal(owner, "snapshots")
        """Sessions that changed, newest snapshot of each."""
        self.events: Signal[list[ev.Event]] = Signal(owner, "events")
        """Events recorded since the last frame, in order."""
        self.questions: Signal[list[Question]] = Signal(owner, "questions")
        """The questions waiting for a person (`RunState.questions`), whenever they changed."""
        self._snapshots: dict[str, SessionSnapshot] = {}
        self._events: list[ev.Event] = []
        self._questions: list[Question] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._source: Observed | None = None

    def attach(self, source: Observed) -> None:
        self._source = source
        source.listeners.snapshots.append(self._on_snapshots)
        source.listeners.events.append(self._on_event)
        source.listeners.questions.append(self._on_questions)

    def detach(self) -> None:
        if self._source is not None:
            listeners = self._source.listeners
            if self._on_snapshots in listeners.snapshots:
                listeners.snapshots.remove(self._on_snapshots)
            if self._on_event in listeners.events:
                listeners.events.remove(self._on_event)
            if self._on_questions in listeners.questions:
                listeners.questions.remove(self._on_questions)
            self._source = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    # -- the listeners: gather only ----------------------------------------------------------------

    def _on_snapshots(self, changed: dict[str, SessionSnapshot]) -> None:
        self._snapshots.update(changed)
        self._schedule()

    def _on_event(self, event: ev.Event) -> None:
        self._events.append(event)
        self._schedule()

    def _on_questions(self, waiting: list[Question]) -> None:
        self._questions = waiting
        self._schedule()

    def _schedule(self) -> None:
        if self._handle is None:
            self._handle = asyncio.get_running_loop().call_later(self.frame, self.flush)

    # -- once a frame ------------------------------------------------------------------------------

    def flush(self) -> None:
        """Publish whatever gathered since the last frame (now, if called before it)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        snapshots, self._snapshots = self._snapshots, {}
        events, self._events = self._events, []
        questions, self._questions = self._questions, None
        if events:
            self.events.publish(events)
        if snapshots:
            self.snapshots.publish(snapshots)
        if questions is not None:
            self.questions.publish(questions)
