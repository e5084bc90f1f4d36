"""The figures the manager's decisions read off its state, changing nothing.

The next request's projected size, the zone a decision acts on (the gauge's zone,
but for a restart that would free nothing), whether the prompt cache has gone
cold, and whether the agent session has had a request taken yet. Each is read off
a `ManagerState` (core.manager_state) by the parts that decide.
"""

from __future__ import annotations

from enum import StrEnum

from mala_tui.core.manager_state import ManagerState
from mala_tui.core.mask_economics import cache_cold
from mala_tui.core.usage import ContextUsage, UsageSource, Zone, estimate_tokens


class DecisionZone(StrEnum):
    """The zone the manager's decisions act on: the gauge's `Zone` of the same figure,
    except that hard reads as soft while a restart would free nothing
    (`ManagerState.restart_makes_room`). A type of its own, so that the zone a gauge shows
    is never taken for the one a decision acts on."""

    NORMAL = "normal"
    SOFT = "soft"
    HARD = "hard"


def projected_tokens(state: ManagerState) -> int:
    """The next request's size: the latest measured window, plus what joined the
    conversation since (calibrated), plus results the hook reported that have not
    arrived yet. Without per-call usage: the estimate of it all."""
    pending = sum(
        chars
        for tool_id, chars in state.turn.seen_results.items()
        if not state.transcript.has_result(tool_id)
    )
    usage = state.usage
    if usage.source is UsageSource.PER_CALL and state.chars_at_call is not None:
        # Signed: a mask since the call shrank the conversation.
        grown = estimate_tokens(state.transcript.characters) - estimate_tokens(state.chars_at_call)
        now = max(0, usage.tokens + round(grown * state.density.ratio))
    else:
        now = usage.tokens
    return now + state.calibrated(pending)


def cache_gone_cold(state: ManagerState, at: float) -> bool:
    """The prompt cache has gone cold by `at`: the next request writes the whole
    prompt again, whatever masking does (core.mask_economics)."""
    return cache_cold(state.cache_refreshed_at, at, state.limits.cache_ttl_seconds)


def cache_warm_until(state: ManagerState) -> float | None:
    """When the prompt cache goes cold unless a request comes first (None: unknown)."""
    if state.cache_refreshed_at is None:
        return None
    return state.cache_refreshed_at + state.limits.cache_ttl_seconds


def decision_zone_of(state: ManagerState, tokens: int) -> DecisionZone:
    """The zone decisions act on at `tokens`."""
    zone = ContextUsage(tokens, state.window, UsageSource.PER_CALL).zone(
        state.limits.soft_threshold, state.limits.hard_threshold
    )
    return decision_zone(state, zone, tokens)


def decision_zone(state: ManagerState, zone: Zone, tokens: int) -> DecisionZone:
    """The gauge's `zone` as decisions read it: hard is soft while a restart would free
    nothing."""
    # Past the whole window nothing can be sent: that stays hard whatever happens.
    if zone is Zone.HARD and tokens < state.window and not state.restart_makes_room():
        return DecisionZone.SOFT
    return DecisionZone(zone.value)


def nothing_taken(state: ManagerState) -> bool:
    """No request of this agent session was taken yet: no call was measured, and its
    transcript holds only what mala-tui sent (and Claude Code's errors). A refusal
    now is of its first prompt, which a restart would only send again."""
    return state.tracker.latest_call is None and all(
        message.from_harness for message in state.transcript.messages
    )
