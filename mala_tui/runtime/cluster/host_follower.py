"""A host's batches followed from the driver, into the run's journal.

`HostFollower` is the part of a `RemoteRunner` (runtime.cluster.driver_runner) that reads
the batches of the session's current host (runtime.cluster.wire): it records each event
through the run's recorder, keeps the transcript the host sends (which a restart after a
loss may be built from) and the pids of the agent's processes, puts each question to the
driver's desk (runtime.cluster.host_questions), and tells the host what has been
journaled (`ack`), about once a second, and every few seconds when nothing happens. After
a reattach, the first batch may repeat what the journal already has
(runtime.cluster.replay): that much is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable

from mala_tui.core import events as ev
from mala_tui.core.transcript import Transcript
from mala_tui.runtime.cluster.host_link import HostLink, HostLostError
from mala_tui.runtime.cluster.host_questions import HostQuestions
from mala_tui.runtime.cluster.replay import overlap
from mala_tui.runtime.cluster.wire import Batch, HostEnd, message_from_json
from mala_tui.runtime.session.agent_process import EventSink

#: How often the driver tells each host it is there and what it has journaled.
ACK_SECONDS = 1.0


class HostFollower:
    """One remote session's reading of its hosts' batches, one host at a time."""

    def __init__(
        self,
        *,
        session: str,
        sink: EventSink,
        clock: Callable[[], float],
        questions: HostQuestions,
    ) -> None:
        self._session = session
        self._sink = sink
        self._clock = clock
        self._questions = questions
        self.position = 0
        """The current host's outbox position of the newest event journaled."""
        self.mirror = Transcript()
        """The transcript of the session's current agent session, as its host sent it."""
        self.pids: set[int] = set()
        """Every agent process the session's hosts started (pids on their machines)."""
        self.replayed: list[str] | None = None
        """After a reattach: the journal's last events of the session, which the host's
        first batch may repeat (acknowledged by no driver before it went)."""
        self._last_ack = 0.0

    def forget_transcript(self) -> None:
        """The session restarts in a new agent session: its transcript starts empty."""
        self.mirror = Transcript()

    async def follow(self, link: HostLink) -> HostEnd:
        """Read the host's batches from `position` on, to the session's end.

        Raises:
            HostLostError: the host is gone, or its stream kept ending early.
        """
        ticker = asyncio.create_task(self._keep_telling(link), name=f"ack {self._session}")
        try:
            for _ in range(3):  # a stream that ends early is asked again from where it was
                async for batch in link.batches(self.position):
                    self._take(batch, link)
                    if batch.end is not None:
                        return batch.end
            raise HostLostError("its event stream kept ending before the session did")
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker

    async def _keep_telling(self, link: HostLink) -> None:
        """Tell the host, now and then, that its driver is there even when nothing happens."""
        while True:
            await asyncio.sleep(ACK_SECONDS * 5)
            link.tell("ack", self.position)

    def _take(self, batch: Batch, link: HostLink) -> None:
        lines = batch.events
        if self.replayed is not None:
            lines = lines[overlap(self.replayed, lines) :]
            self.replayed = None
        for line in lines:
            try:
                event = ev.parse_event(json.loads(line))
            except (ValueError, ev.UnknownEventError, ev.BadEventError) as exc:
                self._error(f"an event from the host could not be read: {exc}")
                continue
            self._sink(event)
        if batch.events:
            self.position = batch.last
        if batch.transcript_reset:
            self.mirror = Transcript()
        for message in batch.messages:
            self.mirror.append(message_from_json(message))
        self.pids.update(batch.pids)
        for ask in batch.asks:
            self._questions.ask(ask, link)
        now = time.monotonic()
        if batch.end is None and now - self._last_ack >= ACK_SECONDS:
            self._last_ack = now
            link.tell("ack", self.position)

    def check_received(self, end: HostEnd) -> None:
        """Every event the host made reached the journal: said when not (never expected)."""
        if end.sent != self.position:
            missing = end.sent - self.position
            self._error(f"{missing} of the host's {end.sent} events never reached the journal")

    def _error(self, message: str) -> None:
        self._sink(
            ev.ErrorRecorded(
                at=self._clock(), session=self._session, where=ev.Where.HOST, message=message
            )
        )
