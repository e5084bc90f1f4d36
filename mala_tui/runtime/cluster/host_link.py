"""The driver's view of a cluster: an engine that places session hosts, a link to each.

`HostEngine` is what a cluster engine (runtime.cluster.ray_engine) offers the driver;
`HostLink` is the driver's end of one placed host; `HostLostError` says a host is gone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from mala_tui.runtime.cluster.session_host import HostSetup
from mala_tui.runtime.cluster.wire import Batch


class HostLostError(Exception):
    """The session's host is gone: its node died or was removed, or it cannot be reached."""

    def __init__(self, reason: str, node: str = "", address: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node
        self.address = address


class HostLink(Protocol):
    """The driver's end of one placed host."""

    node: str
    address: str

    def batches(self, after: int) -> AsyncIterator[Batch]:
        """The host's batches after outbox position `after`. Raises HostLostError."""

    def tell(self, method: str, *args: object) -> None:
        """Call a host method without waiting (a lost host shows in `batches`)."""

    async def release(self) -> None:
        """The session is over and its events journaled: the host may go."""

    async def kill(self) -> None:
        """End the host now, wherever it is (it must never run beside its successor)."""


class HostEngine(Protocol):
    """Places session hosts on a cluster."""

    slots: int
    """How many sessions the cluster can run at once."""

    async def place(self, name: str, attempt: int, setup: HostSetup) -> HostLink:
        """Start a host for the session (its `attempt`-th); returns once it runs.
        Raises HostLostError when it died before it ran."""

    async def find(self, name: str, attempt: int) -> HostLink | None:
        """The session's `attempt`-th host, if it still runs (it outlived an earlier driver)."""

    def alive(self, name: str, attempt: int) -> bool:
        """Whether that host still runs (asked before the event loop, by `resume`)."""
