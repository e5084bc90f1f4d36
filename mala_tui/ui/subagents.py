"""A session's subagents in words: what its card, its detail view and `show` say of each.

The figures come from `core.subagents.SubagentGauge` (exact, from each subagent's
transcript); here they only get their short human forms, so the card, the detail
list and `mala-tui show --json` agree on what "running" or "killed" means.
"""

from __future__ import annotations

from typing import Final

from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.core.pricing import format_cost
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.subagents import SubagentGauge
from mala_tui.core.text import flatten, plural, shorten, tokens
from mala_tui.ui.format import elapsed

CARD_GAUGES: Final = 3
"""Live subagents a card shows a gauge for; the rest are counted ("+2 more running"), so a
session that starts a dozen does not push the dashboard off the screen."""
COLUMNS: Final = (
    "subagent",
    "ended",
    "window",
    "peak",
    "cost (est.)",
    "duration",
    "calls",
    "tool uses",
    "compactions",
    "managed",
    "type",
    "depth",
    "runs in",
    "nested",
)
"""The detail view's list of subagents, left to right, what matters most first (the cost
is an estimate at list prices, as every cost the app shows)."""
CELL_LIMIT: Final = 32
"""A label or an ending in the list is cut to this many characters (the event log, and
`show --json`, have them whole): the figures stay on the screen."""


def running(snapshot: SessionSnapshot) -> tuple[SubagentGauge, ...]:
    """Its subagents still at work: none once the session has ended (its agent process is
    gone, and every subagent with it, whether or not their end was seen)."""
    if snapshot.status is not None:
        return ()
    return tuple(gauge for gauge in snapshot.subagents if gauge.live)


def card_gauges(snapshot: SessionSnapshot) -> tuple[SubagentGauge, ...]:
    """The live subagents its card draws a gauge for, in the order they started."""
    return running(snapshot)[:CARD_GAUGES]


def card_summary(snapshot: SessionSnapshot) -> str:
    """The card's line under its subagent gauges: "3 subagents finished (1 failed)", or
    "+2 more running · 3 finished"; "" when there is nothing more to say."""
    live = running(snapshot)
    parts = []
    if len(live) > CARD_GAUGES:
        parts.append(f"+{len(live) - CARD_GAUGES} more running")
    ended = snapshot.status is not None
    finished = [gauge for gauge in snapshot.subagents if ended or not gauge.live]
    if finished:
        # Beside "+2 more running" the noun is understood, and a card is narrow.
        said = f"{len(finished) if parts else plural(len(finished), 'subagent')} finished"
        failed = sum(1 for gauge in finished if gauge.how is SubagentEnd.FAILED)
        killed = sum(1 for gauge in finished if gauge.how is SubagentEnd.KILLED)
        bad = [f"{count} {how}" for count, how in ((failed, "failed"), (killed, "killed")) if count]
        parts.append(said + (f" ({', '.join(bad)})" if bad else ""))
    return " \u00b7 ".join(parts)


def counts(snapshot: SessionSnapshot) -> tuple[int, int]:
    """Its live and finished subagents: when these change, its card changes height."""
    live = len(running(snapshot))
    return live, len(snapshot.subagents) - live


def managed_text(gauge: SubagentGauge) -> str:
    """What mala-tui did to its window: " · wound down", " · 2 withheld"; "" for nothing."""
    said = []
    if gauge.wound_down:
        said.append("wound down")
    if gauge.withheld:
        said.append(f"{gauge.withheld} withheld")
    return "".join(f" \u00b7 {part}" for part in said)


def ended_text(gauge: SubagentGauge, *, session_over: bool = False) -> str:
    """How it ended, and why: "completed", "killed: stopped by the operator"; "running",
    or "not seen ending" for one whose session ended first."""
    if gauge.how is None:
        return "not seen ending" if session_over else "running"
    return f"{gauge.how}: {gauge.reason}" if gauge.reason else str(gauge.how)


def depth_text(gauge: SubagentGauge, labels: dict[str, str]) -> str:
    """1 for one the main thread started; "2 in <its parent's label>" for a nested one."""
    if not gauge.parent:
        return str(gauge.depth)
    return f"{gauge.depth} in {labels.get(gauge.parent, gauge.parent)}"


def row(
    gauge: SubagentGauge, now: float, labels: dict[str, str], *, session_over: bool = False
) -> tuple[str, ...]:
    """One subagent's figures, as COLUMNS names them (agent text still to be made literal)."""
    return (
        shorten(flatten(gauge.label), CELL_LIMIT),
        shorten(flatten(ended_text(gauge, session_over=session_over)), CELL_LIMIT),
        tokens(gauge.tokens),
        tokens(gauge.peak),
        format_cost(gauge.spend.cost_usd),
        elapsed(gauge.seconds(now)),
        str(gauge.calls),
        str(gauge.tool_uses),
        str(gauge.compactions),
        managed_text(gauge).removeprefix(" \u00b7 ").replace(" \u00b7 ", ", ") or "-",
        gauge.agent_type or "-",
        shorten(flatten(depth_text(gauge, labels)), CELL_LIMIT),
        "background" if gauge.background else "foreground",
        "yes" if gauge.nested else "no",
    )
