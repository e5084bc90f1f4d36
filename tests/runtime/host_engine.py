"""An engine that places session hosts in this process: the driver's side of a cluster
(runtime.cluster.driver_runner) and the host's (runtime.cluster.session_host), without a cluster.

`lose()` makes a host vanish as a dead node's does: its stream breaks, nothing more of
it reaches the driver, and it stops. The Ray engine itself is tested on a real cluster
(tests/cluster).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from mala_tui.runtime.cluster.host_link import HostLostError
from mala_tui.runtime.cluster.session_host import HostSetup, SessionHost
from mala_tui.runtime.cluster.wire import Batch


@dataclass
class InProcessLink:
    host: SessionHost
    node: str
    address: str = "127.0.0.1"
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    calls: list[tuple[str, tuple[object, ...]]] = field(default_factory=list)
    released: bool = False
    frozen: bool = False
    """The driver at this end is gone (killed): it reads and says nothing any more."""

    async def batches(self, after: int) -> AsyncIterator[Batch]:
        if self.frozen:
            await asyncio.Event().wait()
        stream = aiter(self.host.batches(after))
        while True:
            if self.lost.is_set():
                raise HostLostError("its node died", self.node, self.address)
            following = asyncio.ensure_future(anext(stream))
            gone = asyncio.ensure_future(self.lost.wait())
            done, _ = await asyncio.wait({following, gone}, return_when=asyncio.FIRST_COMPLETED)
            if gone in done:
                following.cancel()
                raise HostLostError("its node died", self.node, self.address)
            gone.cancel()
            try:
                batch = following.result()
            except StopAsyncIteration:
                return
            if self.frozen:
                await asyncio.Event().wait()
            yield batch

    def tell(self, method: str, *args: object) -> None:
        self.calls.append((method, args))
        if not self.lost.is_set() and not self.frozen:
            getattr(self.host, method)(*args)

    async def release(self) -> None:
        self.released = True
        await self.host.close()

    async def kill(self) -> None:
        if not self.frozen:
            await self.host.close()

    async def lose(self) -> None:
        """The node dies: the host stops where it is, and the driver hears no more of it."""
        self.lost.set()
        await self.host.close()


@dataclass
class InProcessEngine:
    slots: int = 8
    links: list[InProcessLink] = field(default_factory=list)
    placed: asyncio.Event = field(default_factory=asyncio.Event)

    async def place(self, name: str, attempt: int, setup: HostSetup) -> InProcessLink:
        host = SessionHost(setup)
        host.start()
        link = InProcessLink(host, node=f"node-{len(self.links) + 1}")
        self.links.append(link)
        self.placed.set()
        return link

    async def find(self, name: str, attempt: int) -> InProcessLink | None:
        """A new link to the host, as a new driver's connection to a live actor is."""
        found = self.of(name)
        if not 0 < attempt <= len(found) or found[attempt - 1].lost.is_set():
            return None
        link = InProcessLink(found[attempt - 1].host, node=found[attempt - 1].node)
        self.links.append(link)
        return link

    def alive(self, name: str, attempt: int) -> bool:
        found = self.of(name)
        return 0 < attempt <= len(found) and not found[attempt - 1].lost.is_set()

    def of(self, session: str) -> list[InProcessLink]:
        """The session's hosts, in the order placed (one link each)."""
        hosts: list[SessionHost] = []
        links = []
        for link in self.links:
            if link.host.spec.name == session and link.host not in hosts:
                hosts.append(link.host)
                links.append(link)
        return links
