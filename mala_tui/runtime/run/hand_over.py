"""A session taken over by hand: its Claude Code process ended, the person's turns read back.

The supervisor owns one `HandOver`; it knows where each session's transcript stood when
the person took it (runtime.session.by_hand reads what came after).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.observations import SessionHandedBack
from mala_tui.core.phases import Phase
from mala_tui.runtime.backends.base import Backend
from mala_tui.runtime.run.recorder import Listeners
from mala_tui.runtime.run.runners import Runner
from mala_tui.runtime.session.by_hand import Interactive, interactive, read_back, size_of

#: How long a session taken over by hand may take to stop its turn (past the disconnect's
#: own bound).
HAND_OVER_SECONDS = 60.0


class HandOver:
    """Opens the run's sessions by hand and hands them back (`Supervisor.take_over`)."""

    def __init__(
        self,
        *,
        runners: dict[str, Runner],
        listeners: Listeners,
        backend: Backend,
        settings: Settings,
        record: Callable[[ev.Event], ev.Event],
        clock: Callable[[], float],
    ) -> None:
        self.runners = runners
        self.listeners = listeners
        self.backend = backend
        self.settings = settings
        self.record = record
        self.clock = clock
        self._by_hand: dict[str, int] = {}
        """Sessions opened by hand: where each transcript ended when it was (bytes)."""

    async def take_over(self, session: str) -> Interactive:
        """End the session's Claude Code process (its turn stopped as a pause stops it) and
        say how to open the session in the interactive Claude Code instead. A session that
        has ended has no process to end: it is only opened.

        Raises:
            ValueError: no such session, one on another host, one without an agent
                session yet, one open by hand already, or one busy (masking, restarting,
                waiting for approval: one line says which).
            ByHandError: no Claude Code CLI here.
        """
        runner = self.runners.get(session)
        if runner is None:
            raise ValueError(f"no session is named {session!r}")
        if runner.elsewhere:
            raise ValueError(
                f"{session} runs on {runner.elsewhere}, which keeps its transcript: it cannot "
                "be opened by hand from here"
            )
        manager = runner.manager
        session_id = manager.session_id
        if session_id is None:
            raise ValueError(f"{session} has no agent session yet to open by hand")
        if manager.by_hand:
            raise ValueError(f"{session} is open by hand already")
        how = interactive(runner.spec, session_id)
        if runner.status is not None:
            self._by_hand[session] = size_of(self._transcript_of(runner))
            return how
        if manager.phase not in (Phase.RUNNING, Phase.PAUSED):
            raise ValueError(
                f"{session} is {manager.phase.value.replace('_', ' ')}: it can be opened by "
                "hand while it is running or paused"
            )
        moved = asyncio.Event()

        def heard(event: ev.Event) -> None:
            if event.session == session:
                moved.set()

        def handed_over() -> bool:
            # Ended meanwhile, or taken over and its process gone: nothing else writes
            # its transcript now.
            ended = runner.status is not None
            return ended or (manager.by_hand and not runner.process_open)

        self.listeners.events.append(heard)
        try:
            taken = runner.take_over()
            taken.add_done_callback(lambda _: moved.set())
            bound = HAND_OVER_SECONDS + self.settings.idle.disconnect_timeout_seconds
            async with asyncio.timeout(bound):
                while not handed_over():
                    if taken.done() and taken.result():
                        # The manager would not: it moved on meanwhile (a restart, say).
                        raise ValueError(taken.result())
                    moved.clear()
                    await moved.wait()
        except TimeoutError:
            raise ValueError(
                f"{session} did not stop its turn within {bound:.0f} s; try again"
            ) from None
        finally:
            self.listeners.events.remove(heard)
        # Where the person's part of the transcript starts: after what the ended process
        # wrote as its turn was stopped.
        self._by_hand[session] = size_of(self._transcript_of(runner))
        return how

    def _transcript_of(self, runner: Runner) -> Path | None:
        session_id = runner.manager.session_id
        return self.backend.transcript_path(runner.spec, session_id) if session_id else None

    async def hand_back(self, session: str, *, go_on: bool) -> None:
        """The person is done with the session in the interactive Claude Code: its
        transcript is read again (the person's turns, the window of the latest call), then
        it goes on supervised (`go_on`) or ends. An ended session only has what the person
        did recorded.

        Raises:
            ValueError: no such session, or one that was not open by hand.
        """
        runner = self.runners.get(session)
        if runner is None or runner.elsewhere:
            raise ValueError(f"no session is named {session!r} here")
        path = self._transcript_of(runner)
        if runner.status is None and not runner.manager.by_hand:
            raise ValueError(f"{session} was not taken over by hand")
        since = self._by_hand.pop(session, 0)
        back = await asyncio.to_thread(read_back, path, since)
        if runner.status is None:
            runner.hand_back(
                SessionHandedBack(self.clock(), back.history, back.call, go_on, back.prompts)
            )
            return
        self.record(
            ev.HandedBack(
                at=self.clock(),
                session=session,
                prompts=back.prompts,
                tokens=back.call.context_tokens if back.call is not None else None,
            )
        )
