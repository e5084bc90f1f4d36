"""A question that keeps a session waiting past half its prompt cache's lifetime says so.

While an approval or a permission request waits for a person, the session sends no
request and its prompt cache cools: a lifetime (`context.cache_ttl_seconds`) after its
last request, the next one writes the whole prompt again. Half-way there, the watch
journals a `CacheCooling` event (the event log shows it, and the attention listener
raises a notification saying when the cache goes cold), once per question. A question
answered before then cancels it; one asked after the cache went cold has nothing left
to warn about.

When the cache goes cold is the manager's figure (its last request's time plus the
lifetime, `ContextManager.cache_warm_until`), read when the question is asked: nothing
is sent while the session waits, so it cannot move.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from mala_tui.core import events as ev


class CacheWatch:
    """One session's reminders, one per waiting question."""

    def __init__(
        self,
        *,
        session: str,
        warm_until: Callable[[], float | None],
        ttl: float,
        clock: Callable[[], float],
        emit: Callable[[ev.Event], object],
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.session = session
        self.ttl = ttl
        self._warm_until = warm_until
        self._clock = clock
        self._emit = emit
        self._sleep = sleep
        self._watching: dict[str, asyncio.Task[None]] = {}

    def start(self, key: str, waiting_for: str) -> None:
        """A question began to wait (`key` names it; `waiting_for` says it to a person)."""
        self.stop(key)
        self._watching[key] = asyncio.get_running_loop().create_task(
            self._remind(key, waiting_for), name=f"cache watch {self.session} {key}"
        )

    def stop(self, key: str) -> None:
        """The question was answered (or withdrawn): no reminder."""
        task = self._watching.pop(key, None)
        if task is not None:
            task.cancel()

    async def close(self) -> None:
        """The session ends: every watch goes."""
        tasks = list(self._watching.values())
        self._watching.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _remind(self, key: str, waiting_for: str) -> None:
        try:
            cold_at = self._warm_until()
            if cold_at is None:
                return
            halfway = cold_at - self.ttl / 2
            delay = halfway - self._clock()
            if delay > 0:
                await self._sleep(delay)
            now = self._clock()
            if now >= cold_at:
                return  # cold already: nothing is about to happen
            self._emit(
                ev.CacheCooling(
                    at=now,
                    session=self.session,
                    waiting_for=waiting_for,
                    cold_in=round(cold_at - now, 1),
                    ttl=self.ttl,
                )
            )
        finally:
            if self._watching.get(key) is asyncio.current_task():
                del self._watching[key]
