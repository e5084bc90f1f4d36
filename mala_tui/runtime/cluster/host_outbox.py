"""What a session's host keeps for its driver, and the batches the driver reads it in.

The host's events wait in an outbox, each numbered by its position there; the driver
reads everything after a position, then live, in batches (runtime.cluster.wire), with the
transcript as deltas, the questions asked or withdrawn since, and once, the session's end.
The driver acknowledges what it has journaled (`ack`) and the outbox lets that go; the
rest stays, so a driver that reconnects misses nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence

from mala_tui.core.transcript import Transcript
from mala_tui.runtime.cluster.wire import Ask, Batch, HostEnd, message_json


class Outbox:
    """A host's events by position, the questions since the last batch, and its end."""

    def __init__(
        self,
        *,
        transcript: Callable[[], Transcript],
        pids: Callable[[], tuple[int, ...]],
        flush_seconds: float,
        batch_events: int,
    ) -> None:
        """`transcript`: the session's transcript now; `pids`: its agent's processes so
        far; `flush_seconds`: how long events are gathered before a batch goes;
        `batch_events`: the most events one batch carries."""
        self._transcript = transcript
        self._pids = pids
        self._flush_seconds = flush_seconds
        self._batch_events = batch_events
        self.lines: list[str] = []
        """The events not yet acknowledged, as JSON lines."""
        self._dropped = 0
        """Positions acknowledged and let go: `lines[0]` is position `_dropped + 1`."""
        self._asks: list[Ask] = []
        """Questions asked or withdrawn since the last batch of the current connection."""
        self._changed = asyncio.Event()
        self._connection = 0
        self.end: HostEnd | None = None
        """How the session ended, once it has: the last batch carries it."""

    @property
    def sent_up_to(self) -> int:
        """The position of the newest event in the outbox."""
        return self._dropped + len(self.lines)

    def put(self, line: str) -> None:
        """An event (as JSON) for the driver."""
        self.lines.append(line)
        self._changed.set()

    def ask(self, ask: Ask) -> None:
        """A question asked, or withdrawn, for the driver."""
        self._asks.append(ask)
        self._changed.set()

    def finish(self, end: HostEnd) -> None:
        """The session's end: once the driver has every event before it, it is sent."""
        self.end = end
        self._changed.set()

    async def batches(self, after: int, waiting: Sequence[Ask]) -> AsyncGenerator[Batch]:
        """Every event after position `after`, then live, in batches, until the session's end.

        A new call (a driver reconnecting) supersedes the one before: that one returns. The
        first batch carries the whole transcript and every question still `waiting`.
        """
        self.ack(after)
        self._connection += 1
        connection = self._connection
        sent = max(after, self._dropped)
        transcript_id, transcript_sent = -1, 0
        self._asks = list(waiting)
        first = True
        while True:
            if not first:
                await self._wait_for_news(sent)
                if connection != self._connection:
                    return
            transcript = self._transcript()
            reset = id(transcript) != transcript_id or len(transcript) < transcript_sent
            if reset:
                transcript_id, transcript_sent = id(transcript), 0
            messages = tuple(message_json(m) for m in transcript.messages[transcript_sent:])
            transcript_sent = len(transcript)
            start = sent - self._dropped
            events = tuple(self.lines[start : start + self._batch_events])
            asks, self._asks = tuple(self._asks), []
            end = self.end if sent + len(events) == self.sent_up_to else None
            batch = Batch(
                first=sent + 1,
                events=events,
                transcript_reset=reset,
                messages=messages,
                asks=asks,
                end=end,
                pids=self._pids(),
            )
            sent = batch.last
            first = False
            yield batch
            if end is not None:
                return

    async def _wait_for_news(self, sent: int) -> None:
        """Until there is something to send (events, a question, the end); then a short
        while longer, so what comes together goes together."""
        while sent >= self.sent_up_to and not self._asks and self.end is None:
            self._changed.clear()
            await self._changed.wait()
        if self.sent_up_to - sent < self._batch_events and self.end is None:
            await asyncio.sleep(self._flush_seconds)

    def ack(self, position: int) -> None:
        """The driver has journaled everything up to `position`: the outbox lets it go."""
        drop = min(position, self.sent_up_to) - self._dropped
        if drop > 0:
            del self.lines[:drop]
            self._dropped += drop
