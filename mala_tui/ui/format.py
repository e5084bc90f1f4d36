"""Short human forms of what the screens show: durations, phases, usage sources.

Token counts and percentages are `core.text.tokens` and `core.text.percent`,
shared with the event describer.
"""

from __future__ import annotations

import math
from typing import Final

from mala_tui.core.actions import EndStatus
from mala_tui.core.phases import Phase
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.usage import UsageSource

SOURCE_LABELS: Final = {
    UsageSource.PER_CALL: "exact",
    UsageSource.CUMULATIVE: "est.",
    UsageSource.ESTIMATE: "est.",
    UsageSource.DISABLED: "no data",
}
"""core.usage's sources, shortened: only per-call usage is an exact figure."""


def phase_label(state: Phase | EndStatus) -> str:
    """A phase or an end status as the screens name it: `winding_down` reads "winding down"."""
    return state.value.replace("_", " ")


def state_label(snapshot: SessionSnapshot) -> str:
    """The snapshot's state as the screens name it; "queued" before the session started.

    A session the run has but whose `session_started` has not come (so it has no task
    yet) is waiting for a slot under `agent.max_concurrent`.
    """
    if snapshot.status is None and not snapshot.task:
        return "queued"
    if snapshot.by_hand and snapshot.status is None:
        return "open by hand"
    return phase_label(snapshot.state)


def source_label(source: UsageSource) -> str:
    return SOURCE_LABELS[source]


def cache_text(snapshot: SessionSnapshot, now: float) -> str:
    """How long a waiting session's prompt cache stays warm: "cache warm 3:12", or
    "cache cold" once it has expired; "" for a session that is not waiting, or whose
    cache is not known."""
    if not snapshot.waiting:
        return ""
    left = snapshot.cache_warm_for(now)
    if left is None:
        return ""
    # Rounded up: "0:00" would read as warm while it is not.
    return f"cache warm {elapsed(math.ceil(left))}" if left > 0 else "cache cold"


def elapsed(seconds: float) -> str:
    """Seconds as `m:ss`, or `h:mm:ss` from an hour on; negative values read as 0."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def run_status(state: RunState, now: float, *, live: bool, gone: bool = False) -> str:
    """The header's word for the run, and its age: "live · 3:12" (since the run's start in
    its journal, whenever this console opened), "ended · 1:14" (how long it ran),
    "host gone" (`gone`: a console whose run's host went away before the run ended) or
    "read-only" (a run that never ended, read back)."""
    start = state.started_at
    if state.ended_at is not None:
        return "ended" if start is None else f"ended \u00b7 {elapsed(state.ended_at - start)}"
    if live:
        return "live" if start is None else f"live \u00b7 {elapsed(now - start)}"
    return "host gone" if gone else "read-only"
