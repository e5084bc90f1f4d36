"""The projection at each tool result: stop the turn before a request past a threshold.

The post-tool hook reports each result before the model request that would carry
it; the manager adds it (calibrated) to the window last measured, and when that
next request would pass a threshold it stops the turn right there, so the result
never reaches the model unmasked past the threshold. At that clean point it masks;
when masking the old results cannot bring the request under the hard threshold, it
masks the new ones too and winds the agent down on the masked transcript; only when
even that would not fit is it an emergency.

A part of the ContextManager (core.manager): `Projection` is given the session's
state (core.manager_state), masking decisions (core.masking_decisions), which plan
and make the mask, and the restart flow (core.restart_flow), for the emergency. The
manager sends it the hook's reports; the turn flow, the turn it stopped.
"""

from __future__ import annotations

from mala_tui.core.actions import SendPrompt, StopTurn
from mala_tui.core.decision_figures import DecisionZone, decision_zone_of, projected_tokens
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.masking_decisions import MaskingDecisions
from mala_tui.core.observations import ToolResultSeen
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.phases import Cause, ManageMode, Phase, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.restart_flow import RestartFlow
from mala_tui.core.state_parts import StopFor


class Projection:
    """The manager's handlers for the post-tool hook's reports and the stops they ask for."""

    def __init__(
        self, state: ManagerState, masking: MaskingDecisions, restart_flow: RestartFlow
    ) -> None:
        self._state = state
        self._masking = masking
        self._restart_flow = restart_flow

    def on_tool_result_seen(self, obs: ToolResultSeen) -> Outcome:
        """The post-tool hook reports a result: stop the turn there if the next request
        would pass a threshold (see the module's docstring)."""
        self._state.turn.seen_results[obs.tool_use_id] = max(0, obs.characters)
        if (
            self._state.manage is ManageMode.OFF
            or self._state.phase is not Phase.RUNNING
            or not self._state.turn.streaming
            or self._state.turn.stopping is not None
        ):
            return Outcome()
        projected = projected_tokens(self._state)
        zone = decision_zone_of(self._state, projected)
        if zone is DecisionZone.NORMAL:
            return Outcome()
        # Results still on their way are the newest: they count among those kept.
        arriving = sum(
            1
            for tool_id in self._state.turn.seen_results
            if not self._state.transcript.has_result(tool_id)
        )
        keep = max(0, self._state.limits.keep_recent_observations - arriving)
        if zone is DecisionZone.SOFT:
            free = self._masking.idle_if_cold(obs.at, projected) is not None
            plan = self._masking.plan_mask(
                projected - self._masking.target_tokens(),
                Cause.PROJECTION,
                keep_recent=keep,
                any_size=free,
            )
            if not plan or not (free or self._masking.worth_it_now(plan, projected)):
                return Outcome()
        self._state.turn.begin_stop(StopFor.PROJECTION)
        return Outcome(
            (
                StopTurn(
                    f"next request projected at {projected:,} of {self._state.window:,} tokens "
                    f"({zone.value} zone)"
                ),
            )
        )

    def decide_at_clean_point(self, at: float) -> Outcome:
        """The hook stopped the turn before the next request: mask, wind down, or resume."""
        decided = self._act_at_clean_point(at)
        if decided.actions:
            return decided
        # Nothing to do after all (the figures moved between the hook and here): the
        # turn was stopped, so it must be sent on its way again.
        kind, text, delivered = self._state.back_to_work(
            at, PromptKind.STOPPED_RESUME, Delivery.CLEAN_POINT, session_name=self._state.name
        )
        return Outcome((SendPrompt(kind, text),), (*decided.events, *delivered))

    def _act_at_clean_point(self, at: float) -> Outcome:
        projected = projected_tokens(self._state)
        zone = decision_zone_of(self._state, projected)
        hard = self._state.hard_tokens()
        if zone is not DecisionZone.NORMAL:
            idle = self._masking.idle_if_cold(at, projected)
            plan = self._masking.plan_mask(
                projected - self._masking.target_tokens(),
                Cause.PROJECTION,
                any_size=idle is not None,
            )
            if plan and projected - plan.estimated_tokens < hard:
                return self._masking.mask(
                    at,
                    projected,
                    Trigger.PROJECTION,
                    Cause.PROJECTION,
                    plan=plan,
                    resume_after=True,
                    idle_seconds=idle,
                )
        if zone is DecisionZone.HARD:
            # Old results cannot make room: mask the new ones too, so that the request
            # that winds the agent down fits, and never send them past the threshold.
            everything = self._masking.plan_mask(
                projected, Cause.PROJECTION, keep_recent=0, any_size=True
            )
            if everything and projected - everything.estimated_tokens < hard:
                return self._masking.mask(
                    at,
                    projected,
                    Trigger.PROJECTION,
                    Cause.PROJECTION,
                    plan=everything,
                    resume_after=True,
                    then_wind_down=self._state.manage is ManageMode.FULL,
                )
            if self._state.manage is ManageMode.FULL:
                room = max(0, hard - self._state.usage.tokens)
                return self._restart_flow.emergency(
                    at,
                    f"the next request would hold ~{projected:,} tokens, past the hard "
                    f"threshold ({hard:,}), and masking cannot make room: a single result "
                    f"larger than the room left ({room:,} tokens)",
                )
        return Outcome()
