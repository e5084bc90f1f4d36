"""From supervisor callbacks to Textual signals, coalesced to at most one publication a frame.

The supervisor calls its listeners on the app's event loop (never from another
thread), for every event and with the snapshot of every session it changed: it
holds nothing back. Redrawing on each would spend the frame budget many times
over with 50 busy sessions, so the bridge only gathers: the newest snapshot per
session, the events in order, the latest approval list; and publishes them
together once per frame. This is the one place updates are coalesced.
"""

from __future__ import annotations

import asyncio
from typing import Final

from textual.dom import DOMNode
from textual.signal import Signal

from mala_tui.core import events as ev
from mala_tui.core.view import SessionSnapshot
from mala_tui.runtime.run_types import ApprovalRequest
from mala_tui.ui.controller import Controller
from mala_tui.ui.source import LiveSource

FRAME_SECONDS: Final = 1 / 30
"""How long updates gather before they are published: one frame at 30 fps."""


class UpdateBridge:
    """Subscribes to a live source's listeners and publishes per frame on three signals."""

    def __init__(
        self, owner: DOMNode, controller: Controller, *, frame: float = FRAME_SECONDS
    ) -> None:
        self.controller = controller
        self.frame = frame
        self.snapshots: Signal[dict[str, SessionSnapshot]] = Signal(owner, "snapshots")
        """Sessions that changed, newest snapshot of each."""
        self.events: Signal[list[ev.Event]] = Signal(owner, "events")
        """Events recorded since the last frame, in order."""
        self.approvals: Signal[list[ApprovalRequest]] = Signal(owner, "approvals")
        """Approvals still waiting for this app's answer, whenever the list changed."""
        self._snapshots: dict[str, SessionSnapshot] = {}
        self._events: list[ev.Event] = []
        self._approvals_changed = False
        self._handle: asyncio.TimerHandle | None = None
        self._source: LiveSource | None = None

    def attach(self, source: LiveSource) -> None:
        self._source = source
        source.listeners.snapshots.append(self._on_snapshots)
        source.listeners.events.append(self._on_event)
        source.listeners.approvals.append(self._on_approvals)

    def detach(self) -> None:
        if self._source is not None:
            listeners = self._source.listeners
            if self._on_snapshots in listeners.snapshots:
                listeners.snapshots.remove(self._on_snapshots)
            if self._on_event in listeners.events:
                listeners.events.remove(self._on_event)
            if self._on_approvals in listeners.approvals:
                listeners.approvals.remove(self._on_approvals)
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

    def _on_approvals(self, _requests: list[ApprovalRequest]) -> None:
        self._approvals_changed = True
        self._schedule()

    def _schedule(self) -> None:
        if self._handle is None:
            self._handle = asyncio.get_running_loop().call_later(self.frame, self.flush)

    # -- once a frame ------------------------------------------------------------------------------

    def flush(self) -> None:
        """Publish whatever gathered since the last frame."""
        self._handle = None
        snapshots, self._snapshots = self._snapshots, {}
        events, self._events = self._events, []
        approvals_changed, self._approvals_changed = self._approvals_changed, False
        if events:
            self.events.publish(events)
        if snapshots:
            self.snapshots.publish(self.controller.adjust(snapshots))
        if approvals_changed:
            self.controller.forget_answered()
            self.approvals.publish(self.controller.pending())
