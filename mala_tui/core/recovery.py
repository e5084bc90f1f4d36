"""Recovery after a hang or a failed API call: the manager's side of the retry rules.

The rules themselves (resume, start afresh, fail fast, give up) are core.retry's;
here they meet the session: the disconnect that always comes first, the prompt a
retry sends, the events that say what was decided. The failures nothing retries
end the session here too: the agent failed for good, or the session's time ran out.

A part of the ContextManager (core.manager): `Recovery` is given the session's
state (core.manager_state) and calls no other part. The manager sends it idle
timeouts and the failures that end a session; the turn flow, a turn that ended
with an API error.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import Disconnect, EndStatus, RetryMode, RetryTurn
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.observations import AgentFailed, IdleTimedOut, SessionTimedOut, TurnEnded
from mala_tui.core.phases import STREAMING, IllegalTransition, Phase, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.retry import RETRYABLE_RESULTS, RetryDecision, backoff_delay, decide_retry
from mala_tui.core.text import excerpt
from mala_tui.core.transcript import Transcript


class Recovery:
    """The manager's handlers for idle timeouts and failed turns.

    Given the session's state, and nothing else: it calls no other part.
    """

    def __init__(self, state: ManagerState) -> None:
        self._state = state

    def on_turn_error(self, obs: TurnEnded) -> Outcome:
        """A turn ended with an error: retry what core.retry says may be retried, else fail."""
        reason = obs.terminal_reason or obs.subtype
        if reason not in RETRYABLE_RESULTS:
            return self._state.end(
                obs.at,
                Trigger.FAIL,
                EndStatus.FAILED,
                f"the turn ended with {reason}: {excerpt(obs.result_text)}",
            )
        decision, decided = self._retry(obs.at, f"{reason} (status {obs.api_error_status})")
        event = ev.ApiErrorSeen(
            at=obs.at,
            session=self._state.name,
            terminal_reason=reason,
            status=obs.api_error_status,
            retry=self._state.counters.idle_retries,
            decision=decision.value,
        )
        return Outcome(decided.actions, (event, *decided.events))

    def _retry(self, at: float, cause: str) -> tuple[RetryDecision, Outcome]:
        """Disconnect always; then resume, start fresh, or fail (core.retry)."""
        disconnect = Disconnect(self._state.limits.disconnect_timeout)
        decision = decide_retry(
            retries_done=self._state.counters.idle_retries,
            max_retries=self._state.limits.max_idle_retries,
            has_session_id=self._state.session_id is not None,
            tool_calls=self._state.turn.tool_calls,
        )
        if not decision.retries:
            reason = (
                f"{cause}: max retries ({self._state.limits.max_idle_retries}) exceeded"
                if decision is RetryDecision.GIVE_UP
                else f"{cause}: cannot retry: {self._state.turn.tool_calls} tool calls occurred "
                "without session context"
            )
            ended = self._state.end(at, Trigger.FAIL, EndStatus.FAILED, reason)
            return decision, Outcome((disconnect, *ended.actions), ended.events)
        retry = self._state.counters.idle_retries + 1
        delay = backoff_delay(self._state.limits.idle_retry_backoff, retry)
        if decision is RetryDecision.RESUME:
            prompt = self._state.prompts.render(
                PromptKind.IDLE_RESUME, session_name=self._state.name
            )
            action = RetryTurn(RetryMode.RESUME, delay, prompt, self._state.session_id)
        else:
            # Nothing happened that a fresh start could repeat: same prompt, new session.
            prompt = self._state.turn.prompt
            action = RetryTurn(RetryMode.FRESH, delay, prompt, None)
            self._state.transcript = Transcript()
        self._state.counters.idle_retries = retry
        self._state.begin_turn(prompt)
        return decision, Outcome((disconnect, action))

    def on_idle(self, obs: IdleTimedOut) -> Outcome:
        """The agent went quiet past the idle timeout: disconnect, then retry or fail."""
        if self._state.phase not in STREAMING:
            raise IllegalTransition(
                f"{self._state.name}: idle timeout while {self._state.phase.value}"
            )
        decision, decided = self._retry(obs.at, f"idle for {obs.idle_seconds:.3g} s")
        retry = next((a for a in decided.actions if isinstance(a, RetryTurn)), None)
        ended = next((e for e in decided.events if isinstance(e, ev.SessionEnded)), None)
        event = ev.IdleTimedOut(
            at=obs.at,
            session=self._state.name,
            idle_seconds=obs.idle_seconds,
            retry=self._state.counters.idle_retries,
            decision=decision.value,
            delay=retry.delay if retry else 0.0,
            reason=ended.reason if ended else "",
        )
        return Outcome(decided.actions, (event, *decided.events))

    # -- failures nothing can retry ----------------------------------------------------

    def on_session_timeout(self, obs: SessionTimedOut) -> Outcome:
        """The session's whole time ran out, retries included: it fails."""
        if self._state.phase not in STREAMING and self._state.phase is not Phase.PAUSED:
            raise IllegalTransition(
                f"{self._state.name}: session timeout while {self._state.phase}"
            )
        return self._state.end(
            obs.at,
            Trigger.FAIL,
            EndStatus.FAILED,
            f"session timeout: {obs.seconds:g} s passed, retries included",
        )

    def on_agent_failed(self, obs: AgentFailed) -> Outcome:
        """The agent could not go on (the runtime has given up on it): the session fails."""
        self._state.check(Trigger.FAIL)
        return self._state.end(obs.at, Trigger.FAIL, EndStatus.FAILED, obs.reason)
