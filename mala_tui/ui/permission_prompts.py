"""The app's side of permission requests: announce each one, open them in order, send answers.

Requests come to the app as events (the run's view keeps the waiting ones), so the
same path serves every screen: a notice when one arrives, `P` (or the
palette) opens the oldest, and answering it opens the next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mala_tui.core import events as ev
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.ui.screens.permission import PermissionReply, PermissionScreen

if TYPE_CHECKING:
    from mala_tui.ui.app import MalaApp

ANSWERED: Final = {
    PermissionAnswer.ALLOW_ONCE: "allowed once",
    PermissionAnswer.ALLOW_SESSION: "allowed for the session",
    PermissionAnswer.DENY: "denied",
}
"""How the notice after an answer names it."""


class PermissionPrompts:
    def __init__(self, app: MalaApp) -> None:
        self.app = app
        self._announced: set[tuple[str, str]] = set()

    def on_events(self, events: list[ev.Event]) -> None:
        """A notice for each request that still waits when its frame arrives (the bell and
        the desktop notification are the app's `Attention`'s)."""
        waiting = {(r.session, r.request_id) for r in self.app.controller.pending_permissions()}
        fresh = [
            event
            for event in events
            if isinstance(event, ev.PermissionRequested)
            and (event.session, event.request_id) in waiting
            and (event.session, event.request_id) not in self._announced
        ]
        for request in fresh:
            self._announced.add((request.session, request.request_id))
            self.app.notify(
                f"{request.session} asks to use {request.tool}: {request.summary} (press P)",
                title="Permission request",
                severity="warning",
                timeout=8,
                markup=False,
            )

    def review(self) -> None:
        """Open the oldest waiting request."""
        if isinstance(self.app.screen, PermissionScreen):
            return
        pending = self.app.controller.pending_permissions()
        if not pending:
            self.app.notify("No tool use is waiting for permission.")
            return
        screen = PermissionScreen(self.app.services, pending[0], waiting=len(pending))
        self.app.push_screen(screen, self._answered)

    def _answered(self, reply: PermissionReply | None) -> None:
        if reply is None:
            return
        request = reply.request
        if self.app.controller.answer_permission(request, reply.answer, reply.reason):
            said = f"{request.tool} {ANSWERED[reply.answer]}"
            self.app.notify(f"{request.session}: {said}", markup=False)
        else:
            self.app.notify(
                f"{request.session}: request #{request.request_id} was answered already",
                severity="warning",
                markup=False,
            )
        self.app.refresh_snapshots([request.session])
        if self.app.controller.pending_permissions():
            self.app.call_later(self.review)
