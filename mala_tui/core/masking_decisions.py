"""When to mask, and how much: the manager's masking decisions, in measured tokens.

Three ways in. The soft threshold, read from a call's measured usage (the mask
lands at the turn's next clean point). The operator's `m`. And the projection
at each tool result (core.projection), which stops the turn before a request past
a threshold and masks at that clean point.

Every size a decision uses is a chars/4 estimate scaled by the session's measured
density (core.calibration), so the batch minimum and what a mask frees mean the
same tokens the gauge shows.

The prompt cache has a lifetime (`limits.cache_ttl_seconds`). A session in the soft
zone whose cache went cold while it waited (a permission request, a pause: no
request for longer than the lifetime, judged on the observations' times) writes its
whole prompt again on its next request whatever happens; a mask then costs nothing of
its own. So the mask that was waiting to pay for itself is applied before that
request, whatever its size, and journaled as free (`MaskApplied.free`).

A part of the ContextManager (core.manager): `MaskingDecisions` is given the
session's state (core.manager_state) and the restart flow (core.restart_flow),
the one other part it calls. The turn flow, operator handling and the projection
call it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from mala_tui.core import events as ev
from mala_tui.core.actions import ApplyMask, SendPrompt
from mala_tui.core.decision_figures import (
    DecisionZone,
    cache_gone_cold,
    decision_zone_of,
    projected_tokens,
)
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.mask_economics import pays_for_itself, write_price
from mala_tui.core.mask_rewrites import (
    fold_now,
    fold_own_transcript,
    marker_prefix,
    unwritten_after_mask,
)
from mala_tui.core.masking import MaskPlan, call_key, maskable, placeholder, plan_masking
from mala_tui.core.observations import MaskConfirmed, MaskFailed
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.phases import Cause, IllegalTransition, ManageMode, Phase, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.restart_flow import RestartFlow
from mala_tui.core.state_parts import PendingMask, StopFor

#: Share of the window that results the agent fetched again may keep unmasked.
NEEDED_SHARE: Final = 0.10
#: The batch minimum is at most this share of the window: a fixed count fit for a
#: 200,000 window would forbid every mask in a small one.
MIN_BATCH_SHARE: Final = 0.15


class MaskingDecisions:
    """The manager's masking handlers.

    Given the session's state and the restart flow, which it calls when masking
    cannot make room (a wind-down once the mask lands, or an emergency).
    """

    def __init__(self, state: ManagerState, restart_flow: RestartFlow) -> None:
        self._state = state
        self._restart_flow = restart_flow

    # -- planning --------------------------------------------------------------------------

    def plan_mask(
        self, goal: int, cause: Cause, *, keep_recent: int | None = None, any_size: bool = False
    ) -> MaskPlan:
        """Which results to mask to free `goal` tokens (every old one, for a mask by hand)."""
        observations = self._state.transcript.exchanges()
        keep = self._state.limits.keep_recent_observations if keep_recent is None else keep_recent
        never = self._state.limits.never_mask_tools
        if cause is Cause.OPERATOR:
            chosen = {
                obs.call.id: placeholder(obs.call, obs.result)
                for obs in maskable(observations, keep, never)
                if obs.result is not None
            }
            return MaskPlan(chosen, 0) if chosen else MaskPlan(skipped_reason="nothing to mask")
        return plan_masking(
            observations,
            tokens_to_free=goal,
            keep_recent=keep,
            # For a wind-down that must fit, any batch size goes.
            min_batch_tokens=0 if any_size else self._min_batch_tokens(),
            density=self._state.density.ratio,
            never_mask=never,
            needed=frozenset(self._state.needed),
            needed_chars=self._state.tokens_as_chars(int(NEEDED_SHARE * self._state.window)),
        )

    def _min_batch_tokens(self) -> int:
        if not self._state.restart_makes_room():
            return 0  # masking is all that can make room: every token of it counts
        return min(
            self._state.limits.mask_min_batch_tokens, int(MIN_BATCH_SHARE * self._state.window)
        )

    def worth_it_now(self, plan: MaskPlan, tokens: int) -> bool:
        """In the soft zone, a mask waits until it pays for its cache rewrite
        (core.mask_economics), but never past halfway from soft to hard: a window kept
        near hard is one large result away from a restart, which costs far more."""
        if decision_zone_of(self._state, tokens) is not DecisionZone.SOFT:
            return True
        halfway = (self._state.limits.soft_threshold + self._state.limits.hard_threshold) / 2
        if tokens >= halfway * self._state.window:
            return True
        return pays_for_itself(
            plan.estimated_tokens,
            tokens - plan.estimated_tokens,
            unwritten_after_mask(self._state),
            self._state.growth.rate,
            write_price(self._state.limits.cache_ttl_seconds),
        )

    def idle_if_cold(self, at: float, tokens: int) -> float | None:
        """Seconds since the last request when the prompt cache has gone cold and the
        window is in the soft zone (a mask now is free); None otherwise."""
        refreshed = self._state.cache_refreshed_at
        if refreshed is None or not cache_gone_cold(self._state, at):
            return None
        if decision_zone_of(self._state, tokens) is not DecisionZone.SOFT:
            return None
        return at - refreshed

    def target_tokens(self) -> int:
        return int(self._state.limits.mask_target_threshold * self._state.window)

    # -- deciding --------------------------------------------------------------------------

    def mask(
        self,
        at: float,
        tokens: int,
        trigger: Trigger,
        cause: Cause,
        *,
        plan: MaskPlan | None = None,
        resume_after: bool = False,
        then_wind_down: bool = False,
        idle_seconds: float | None = None,
    ) -> Outcome:
        """Mask down towards the target; `tokens` is the window now (or projected).

        `idle_seconds`: the prompt cache went cold this long after the last request, so
        the mask is free: it goes ahead whatever its size and whatever it would save.
        """
        free = idle_seconds is not None
        if self._state.manage is ManageMode.OFF and cause is not Cause.OPERATOR:
            return Outcome()  # watching only; a mask asked for by hand still happens
        work = self._state.background
        if work.tasks:
            # A mask closes the agent process, and its background work with it.
            return self._skip(
                at, tokens, f"waiting: {work.describe()} running in the background would end"
            )
        goal = tokens - self.target_tokens() if cause is not Cause.OPERATOR else 0
        if self._state.counters.mask_failures >= self._state.limits.max_mask_failures:
            return self._skip(at, tokens, "masking failed twice in a row; not tried again")
        if (
            cause is Cause.SOFT_THRESHOLD
            and not free
            and self._state.pending.skip_revision == self._state.transcript.revision
        ):
            # Nothing was worth masking and no result has come since: planning again
            # would find the same (the batch minimum does not depend on the pressure).
            return Outcome()
        plan = plan if plan is not None else self.plan_mask(goal, cause, any_size=free)
        if not plan:
            return self._skip(at, tokens, plan.skipped_reason or "nothing to mask")
        if cause is not Cause.OPERATOR and not free and not self.worth_it_now(plan, tokens):
            return self._skip(
                at,
                tokens,
                f"waiting: masking ~{plan.estimated_tokens} tokens now would cost more in "
                "cache rewrites than it saves",
            )
        fold = fold_now(self._state, plan, tokens, cold=free)
        moved = self._state.move(at, trigger)
        stop = self._state.turn.streaming
        if stop:
            self._state.turn.stop_before(None, StopFor.MASK)  # the mask resumes the agent
        resume = (
            self._state.prompts.render(PromptKind.MASK_RESUME, masked_count=len(plan.ids))
            if (stop or resume_after) and not then_wind_down
            else None
        )
        self._state.pending.mask_decided(
            PendingMask(
                plan,
                trigger,
                cause,
                floor=tokens - goal,
                resume=stop or resume_after,
                then_wind_down=then_wind_down,
                projected=tokens if cause is Cause.PROJECTION else None,
                idle_seconds=idle_seconds,
                fold=fold,
            )
        )
        return Outcome((ApplyMask(plan, stop, resume, fold),), (moved,))

    def replan_stopped_mask(self) -> Outcome:
        """The turn stopped for a mask: plan it again over every result the agent has now.

        The mask was decided as an API call began, before its results (and often the
        previous call's) reached the transcript; planned as decided, it would keep more
        recent results than `keep_recent` and rewrite them at the cache-miss price.
        """
        pending = self._state.pending.mask
        if pending is None:
            return Outcome()
        goal = self._state.usage.tokens - pending.floor
        fresh = self.plan_mask(max(goal, 0), pending.cause)
        if fresh and set(pending.plan.ids) <= set(fresh.ids):
            tokens = pending.projected or self._state.usage.tokens
            fold = fold_now(self._state, fresh, tokens, cold=pending.idle_seconds is not None)
            pending = self._state.pending.mask = replace(pending, plan=fresh, fold=fold)
        resume = self._state.prompts.render(
            PromptKind.MASK_RESUME, masked_count=len(pending.plan.ids)
        )
        return Outcome((ApplyMask(pending.plan, False, resume, pending.fold),))

    def _skip(self, at: float, tokens: int, reason: str) -> Outcome:
        # Say it once per kind of reason, not on every API call while the zone lasts:
        # "only ~21,545 tokens maskable" and "only ~21,551" are the same news.
        self._state.pending.nothing_maskable(self._state.transcript.revision)
        if not self._state.pending.say_once(reason):
            return Outcome()
        return Outcome(
            events=(ev.MaskSkipped(at=at, session=self._state.name, reason=reason, tokens=tokens),)
        )

    # -- a wait that let the cache go cold ------------------------------------------------------

    def mask_before_resuming(self, at: float) -> Outcome | None:
        """The session goes back to work after a wait (a pause): when the wait let the
        prompt cache go cold in the soft zone, the waiting mask goes first, free, and the
        agent resumes on the masked transcript. None when there is nothing to do so."""
        if self._state.manage is ManageMode.OFF or self._state.phase is not Phase.RUNNING:
            return None
        tokens = projected_tokens(self._state)
        idle = self.idle_if_cold(at, tokens)
        if idle is None:
            return None
        decided = self.mask(
            at,
            tokens,
            Trigger.SOFT_PRESSURE,
            Cause.SOFT_THRESHOLD,
            resume_after=True,
            idle_seconds=idle,
        )
        return decided if decided.actions else None

    # -- the runtime's answer ----------------------------------------------------------------

    def on_mask_confirmed(self, obs: MaskConfirmed) -> Outcome:
        """The runtime applied the mask: the transcript takes the placeholders."""
        pending = self._state.pending.mask
        if self._state.phase is not Phase.MASKING or pending is None:
            raise IllegalTransition(
                f"{self._state.name}: mask confirmed while {self._state.phase.value}"
            )
        unknown = set(obs.tool_use_ids) - set(pending.plan.ids)
        if unknown:
            raise IllegalTransition(
                f"{self._state.name}: confirmed results that were not planned: {sorted(unknown)}"
            )
        moved = self._state.move(obs.at, Trigger.MASK_APPLIED)
        applied = {tool_id: pending.plan.placeholders[tool_id] for tool_id in obs.tool_use_ids}
        self._state.masked_keys.update(
            call_key(item.call)
            for item in self._state.transcript.exchanges()
            if item.call.id in applied
        )
        self._state.transcript.replace_results(applied)
        self._state.tracker.observe_transcript_size(self._state.transcript.characters)
        self._after_rewrite(pending)
        self._state.counters.masked_total += len(applied)
        self._state.counters.masked_session += len(applied)
        self._state.counters.mask_failures = 0
        # What the next measured request is compared with: the request the mask replaced
        # (projected, when decided at a tool result), so `reclaimed` is what it freed.
        tokens_before = (
            pending.projected if pending.projected is not None else self._state.usage.tokens
        )
        self._state.pending.drop_mask()
        self._state.pending.measure_from = tokens_before
        events: list[ev.Event] = [
            moved,
            ev.MaskApplied(
                at=obs.at,
                session=self._state.name,
                count=len(applied),
                tool_use_ids=tuple(applied),
                placeholders=tuple(applied.values()),
                estimated_tokens=pending.plan.estimated_tokens,
                tokens_before=tokens_before,
                total_masked=self._state.counters.masked_total,
                trigger=pending.cause,
                projected_tokens=pending.projected,
                free=pending.idle_seconds is not None,
                idle_seconds=(
                    round(pending.idle_seconds, 1) if pending.idle_seconds is not None else None
                ),
            ),
        ]
        if pending.then_wind_down:
            after = max(0, (pending.projected or tokens_before) - pending.plan.estimated_tokens)
            wound = self._restart_flow.wind_down(obs.at, after, Cause.PROJECTION)
            return Outcome(wound.actions, (*events, *wound.events))
        if pending.resume:
            # The runtime resumed the session on the masked transcript with ApplyMask's prompt.
            self._state.turn.stop_over()
            self._state.begin_turn(
                self._state.prompts.render(
                    PromptKind.MASK_RESUME, masked_count=len(pending.plan.ids)
                )
            )
        return Outcome(events=tuple(events))

    def _after_rewrite(self, pending: PendingMask) -> None:
        """The manager's transcript folded as the agent's was, and where the breakpoint
        the runtime keeps now is (core.rewrite_state)."""
        folded_to = fold_own_transcript(self._state) if pending.fold else None
        note = None
        if pending.resume and not pending.then_wind_down:
            note = self._state.prompts.render(
                PromptKind.MASK_RESUME, masked_count=len(pending.plan.ids)
            )
        self._state.rewrites.masked(
            self._state.counters.continuation,
            prefix=marker_prefix(self._state),
            note=note,
            folded_to=folded_to,
        )

    def on_mask_failed(self, obs: MaskFailed) -> Outcome:
        """The mask did not happen: back to running, the agent sent on if it was stopped."""
        moved = self._state.move(obs.at, Trigger.MASK_FAILED)
        pending = self._state.pending.take_mask()
        self._state.counters.mask_failures += 1
        resume: tuple[SendPrompt, ...] = ()
        delivered: tuple[ev.Event, ...] = ()
        if pending is not None and pending.resume:
            # The turn was stopped for a mask that did not happen: let the agent carry on.
            self._state.turn.stop_over()
            kind, text, delivered = self._state.back_to_work(
                obs.at, PromptKind.IDLE_RESUME, Delivery.RESUME, session_name=self._state.name
            )
            resume = (SendPrompt(kind, text),)
        return Outcome(
            resume,
            events=(
                moved,
                ev.ErrorRecorded(
                    at=obs.at, session=self._state.name, where=ev.Where.MASKING, message=obs.reason
                ),
                *delivered,
            ),
        )
