"""A reattached host's replay: which of its first events the journal has already.

A host keeps the events no driver acknowledged (about a second's worth) and sends them
again to the driver that takes it up after a restart; those the journal holds are
dropped, compared as the journal keeps them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mala_tui.core import events as ev
from mala_tui.runtime.private.redaction import redact_json_line

#: How many of the journal's last events of a session a reattached host's replay is
#: compared with (a host keeps only what no driver acknowledged: about a second's worth).
REPLAY_WINDOW = 2_000


def as_journaled(event: ev.Event) -> str:
    """An event as the journal keeps it, less what the driver adds: its number in the run
    (the recorder's), a checkpoint's file."""
    update: dict[str, object] = {"seq": 0}
    if isinstance(event, ev.CheckpointSaved):
        update["path"] = ""
    return redact_json_line(ev.event_json(event.model_copy(update=update)))


#: What the driver journals of a session itself (its host never sends these).
DRIVER_MADE = (
    ev.HostPlaced,
    ev.HostLost,
    ev.WorktreeCreated,
    ev.WorktreeChanged,
    ev.WorktreeLanded,
    ev.WorktreePushed,
    ev.WorktreeDiscarded,
    ev.PermissionRequested,
    ev.PermissionDecided,
    ev.SessionAdded,
)


def host_made(event: ev.Event) -> bool:
    if isinstance(event, DRIVER_MADE):
        return False
    if isinstance(event, ev.ErrorRecorded) and event.where is ev.Where.HOST:
        return False
    return not (isinstance(event, ev.WarningRecorded) and event.where is ev.Where.QUEUE)


def overlap(journaled: list[str], lines: tuple[str, ...]) -> int:
    """How many of `lines` (a reattached host's first events) the journal has already: the
    longest start of them that is the journal's end."""
    received: list[str] = []
    for line in lines:
        try:
            received.append(as_journaled(ev.parse_event(json.loads(line))))
        except (ValueError, ev.UnknownEventError, ev.BadEventError):
            break
    for count in range(min(len(received), len(journaled)), 0, -1):
        if received[:count] == journaled[-count:]:
            return count
    return 0


def from_current_host(events: Sequence[ev.Event]) -> list[str]:
    """The journal's last events from the session's current host (what the host may
    send again), as `as_journaled` writes them."""
    placed = max((i for i, e in enumerate(events) if isinstance(e, ev.HostPlaced)), default=-1)
    mine = [e for e in events[placed + 1 :] if e.session and host_made(e)]
    return [as_journaled(e) for e in mine[-REPLAY_WINDOW:]]
