"""A session host as a Ray actor, and the driver's link to it.

`HostActor` wraps a `SessionHost` (runtime.cluster.session_host) in an async actor; its
batches come back through the actor's streaming generator, and commands, approvals,
permission answers and messages are actor method calls. `RayLink` is the driver's end of
one (a `HostLink`, runtime.cluster.host_link): a Ray error says the host is lost.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy
from mala_tui.runtime.cluster.host_link import HostLostError
from mala_tui.runtime.cluster.ray_process import die_with_parent, own_exit_statuses
from mala_tui.runtime.cluster.ray_refusals import ray_module
from mala_tui.runtime.cluster.session_host import HostSetup, SessionHost
from mala_tui.runtime.cluster.wire import Batch


class HostActor:
    """A session host in a Ray worker (the actor class; `ray.remote` is applied on use)."""

    def __init__(self, setup: HostSetup) -> None:
        die_with_parent()
        own_exit_statuses()
        ray = ray_module()
        self.host = SessionHost(setup, on_exit=self._exit)
        context = ray.get_runtime_context()
        self.node = context.get_node_id()
        self.address = ray.util.get_node_ip_address()

    async def where(self) -> tuple[str, str, int]:
        """Start the session (in the actor's event loop) and say where it runs."""
        self.host.start()
        return self.node, self.address, os.getpid()

    async def batches(self, after: int) -> AsyncIterator[Batch]:
        async for batch in self.host.batches(after):
            yield batch

    async def ack(self, position: int) -> None:
        self.host.ack(position)

    async def apply(self, action: str) -> None:
        self.host.apply(action)

    async def hurry(self) -> None:
        self.host.hurry()

    async def budget_reached(self, over: bool, reason: str) -> None:
        self.host.budget_reached(over, reason)

    async def answer_approval(
        self,
        number: int,
        decision: Decision,
        edited_text: str | None,
        by: AnsweredBy,
        reason: str,
    ) -> bool:
        return self.host.answer_approval(number, decision, edited_text, by, reason)

    async def answer_permission(self, key: int, allow: bool, message: str) -> bool:
        return self.host.answer_permission(key, allow, message)

    async def release(self) -> None:
        """The driver has what it needs: the host goes."""
        ray = ray_module()
        await self.host.close()
        ray.actor.exit_actor()

    def _exit(self) -> None:
        """Orphaned, its session wound down, and nobody came for the rest: the host goes."""
        os._exit(0)


def host_lost(exc: BaseException, node: str = "", address: str = "") -> HostLostError:
    text = str(exc)
    reason = "its node died" if "node has died" in text or "node died" in text else ""
    if not reason:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        reason = f"{type(exc).__name__}: {first}"[:300]
    return HostLostError(reason, node, address)


@dataclass
class RayLink:
    """The driver's end of one host actor."""

    handle: Any
    node: str
    address: str
    pid: int = 0
    """The host's process on its node."""

    async def batches(self, after: int) -> AsyncIterator[Batch]:
        ray = ray_module()
        try:
            stream = self.handle.batches.options(num_returns="streaming").remote(after)
            async for ref in stream:
                batch: Batch = await ref
                yield batch
        except ray.exceptions.RayError as exc:
            raise host_lost(exc, self.node, self.address) from None

    def tell(self, method: str, *args: object) -> None:
        ray = ray_module()
        with contextlib.suppress(ray.exceptions.RayError):
            getattr(self.handle, method).remote(*args)

    async def release(self) -> None:
        ray = ray_module()
        with contextlib.suppress(ray.exceptions.RayError):
            await self.handle.release.remote()

    async def kill(self) -> None:
        ray = ray_module()
        with contextlib.suppress(ray.exceptions.RayError, ValueError):
            ray.kill(self.handle, no_restart=True)
