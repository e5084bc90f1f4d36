"""A live run's worktree sessions, landed or discarded from an attached console."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from mala_tui.core import events as ev
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import BranchStatus
from mala_tui.runtime.consoles.sockets import ChannelError
from mala_tui.runtime.git.landing import LandingError, Target
from mala_tui.runtime.run.landings import FinishedRun, Landings
from mala_tui.runtime.run.recorder import RunRecorder

LANDING_SECONDS: Final = 120.0
"""How long a landing (git's commit and merge, at the host) may take."""

Request = Callable[[str, str, dict[str, Any] | None, float], Any]
"""One request to the run's host: method, path, body, timeout; its JSON answer."""


class RemoteLandings:
    """A live run's worktree sessions, landed or discarded from an attached console: what
    is left to land is read here (the console is on the run's machine, and git is git),
    the landing itself is done by the run's host, which journals it; the console sees its
    event come back like every other. Once the run is over its host is gone: then the
    console does it itself, as `mala-tui land` would, reopening the journal."""

    def __init__(
        self,
        folder: Path,
        recorder: RunRecorder,
        ask_host: Request,
        host_gone: Callable[[], bool],
    ) -> None:
        """`host_gone`: the run is over, or its host cannot be reached any more."""
        self.state = recorder.state
        # What is left to land, and whether it can be, is read here as the run's own
        # Landings reads it; only the landing itself is the host's.
        self._here = Landings(self.state, _host_records, _running_in(self.state))
        self._ask_host = ask_host
        self._host_gone = host_gone
        self._over = FinishedRun(folder, self.state, recorder)

    def target(self, session: str) -> Target:
        return self._here.target(session)

    def draft(self, session: str) -> str:
        return self._here.draft(session)

    async def status(self, session: str) -> BranchStatus | None:
        return await self._here.status(session)

    async def land(self, session: str, message: str) -> ev.WorktreeLanded:
        if self._host_gone():
            return await self._over.landings.land(session, message)
        self.target(session)  # refused here first, as the host would
        event = await self._ask("/land", {"session": session, "message": message})
        if not isinstance(event, ev.WorktreeLanded):
            raise LandingError(f"{session}: the run's host answered without the landing")
        return event

    async def discard(self, session: str, *, force: bool) -> ev.WorktreeDiscarded:
        if self._host_gone():
            return await self._over.landings.discard(session, force=force)
        self.target(session)
        event = await self._ask("/discard", {"session": session, "force": force})
        if not isinstance(event, ev.WorktreeDiscarded):
            raise LandingError(f"{session}: the run's host answered without the discard")
        return event

    async def _ask(self, path: str, body: dict[str, Any]) -> ev.Event:
        try:
            answer = await asyncio.to_thread(self._ask_host, "POST", path, body, LANDING_SECONDS)
            return ev.parse_event(answer["event"])
        except (ValueError, KeyError, TypeError, ChannelError) as exc:
            raise LandingError(str(exc.args[0]) if exc.args else str(exc)) from None


def _host_records(event: ev.Event) -> None:
    """The host journals what it did; it reaches this console with the run's other events."""


def _running_in(state: RunState) -> Callable[[str], str | None]:
    def still_running(session: str) -> str | None:
        found = state.sessions.get(session)
        return "still running" if found is not None and found.status is None else None

    return still_running
