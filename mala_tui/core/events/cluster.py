"""The events of sessions run on a cluster (`--engine ray`): where a session's host was
placed, a host lost with the node it ran on, and the worktree kept aside after a turn.

The driver (the process that writes the run's journal) records these; every other event
of such a session comes from its host.
"""

from __future__ import annotations

from typing import Literal

from mala_tui.core.events.base import EventBase


class HostPlaced(EventBase):
    """The session's host runs on a node of the cluster (or was found alive there again)."""

    type: Literal["host_placed"] = "host_placed"
    node: str
    """The node's id, as the cluster names it."""
    address: str
    """The node's address."""
    attempt: int = 1
    """1 for the session's first host, 2 for the one after its first host was lost..."""
    reattached: bool = False
    """A host that outlived an earlier driver, taken up again by `resume`."""


class HostLost(EventBase):
    """The session's host is gone (its node died or was removed): what the driver does."""

    type: Literal["host_lost"] = "host_lost"
    node: str
    address: str
    reason: str
    """What the cluster said."""
    restart: bool
    """The session restarts on another host (from a checkpoint); False: it ends here."""


class WorktreeSnapshot(EventBase):
    """The session's working tree, kept aside after a turn (or made again from that)."""

    type: Literal["worktree_snapshot"] = "worktree_snapshot"
    ref: str
    """The side ref it is kept at: refs/mala/wip/<run>/<session>."""
    commit: str
    restored: bool = False
    """The worktree's folder was gone (its host lost): it was made again from this one."""
