"""The server's record of requests: the log, the requests abandoned, and waiting on them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from mala_tui.loopback.request_log import RequestRecord, write_jsonl


class RequestBook:
    """Every ``/v1/messages`` request in arrival order, and those whose client went away
    before its answer was complete; ``wait_for`` wakes at every change."""

    def __init__(self) -> None:
        self._records: list[RequestRecord] = []
        self._abandoned: list[int] = []
        # Replaced on every change: waiters hold the old one and wake when it is set.
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> list[RequestRecord]:
        """The log so far (a copy)."""
        return list(self._records)

    @property
    def abandoned(self) -> tuple[int, ...]:
        return tuple(self._abandoned)

    def add(self, record: RequestRecord) -> None:
        self._records.append(record)
        self._notify()

    def abandon(self, index: int) -> None:
        """The client of request ``index`` went away before its answer was complete."""
        self._abandoned.append(index)
        self._notify()

    def write(self, path: Path) -> None:
        """The log as JSONL, one record a line."""
        write_jsonl(self._records, path)

    def restart(self) -> None:
        """A new event for waiters in the loop the server now runs in."""
        self._changed = asyncio.Event()

    async def wait_for(
        self, predicate: Callable[[list[RequestRecord]], bool]
    ) -> list[RequestRecord]:
        """Wait until ``predicate(log)`` holds, checked at every change; return the log."""
        while not predicate(self.records):
            await self._changed.wait()
        return self.records

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
