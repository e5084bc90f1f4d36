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
from mala_tui.core.observations import (
    AgentFailed,
    ApiRetrying,
    IdleTimedOut,
    SessionTimedOut,
    TurnEnded,
)
from mala_tui.core.phases import STREAMING, IllegalTransition, Phase, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.retry import (
    RETRYABLE_RESULTS,
    ApiFailure,
    RetryDecision,
    backoff_delay,
    classify_api_error,
    decide_retry,
)
from mala_tui.core.text import clean, excerpt


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
        said = _said(obs.result_text)
        if reason == "api_error":
            failure = classify_api_error(obs.api_error_status, obs.api_error_kind)
            if failure is ApiFailure.AUTHENTICATION:
                return self._fail(obs.at, f"authentication failed: {said or _status(obs)}")
            if failure is ApiFailure.REFUSED:
                return self._fail(
                    obs.at, f"the API refused the request ({_http(obs.api_error_status)}): {said}"
                )
            self._failing(obs.at, said)
            over = self._past_bound(obs.at)
            if over is not None:
                return self._fail(obs.at, over)
        cause = f"{reason} ({_http(obs.api_error_status)})" + (f": {said}" if said else "")
        decision, decided = self._retry(obs.at, cause)
        event = ev.ApiErrorSeen(
            at=obs.at,
            session=self._state.name,
            terminal_reason=reason,
            status=obs.api_error_status,
            retry=self._state.counters.idle_retries,
            decision=decision,
        )
        return Outcome(decided.actions, (event, *decided.events))

    def on_api_retrying(self, obs: ApiRetrying) -> Outcome:
        """Claude Code retries a failed call: an authentication error fails the session at
        once (retrying it changes nothing), and so does an endpoint that has failed every
        call for longer than the bound; else Claude Code goes on retrying."""
        if self._state.phase not in STREAMING:
            return Outcome()  # a retry of a turn already given up on
        if classify_api_error(obs.status, obs.error) is ApiFailure.AUTHENTICATION:
            kind = f", {clean(obs.error, one_line=True)}" if obs.error else ""
            return self._fail(
                obs.at,
                "authentication failed: the model endpoint refused the credentials "
                f"({_http(obs.status)}{kind})",
            )
        self._failing(obs.at, "")
        # What Claude Code says once it gives up is better, when a retry before said it.
        kind = clean(obs.error, one_line=True) or "error"
        over = self._past_bound(
            obs.at, f"Claude Code's retries failed ({kind}, {_http(obs.status)})"
        )
        return Outcome() if over is None else self._fail(obs.at, over)

    def endpoint_answers(self) -> None:
        """A call was taken: the endpoint is not failing (any more)."""
        self._state.api_failing_since, self._state.api_said = None, ""

    def turn_went_through(self) -> None:
        """A turn ended well: the next hang is retried as the first."""
        self._state.counters.idle_retries = 0

    def _failing(self, at: float, said: str) -> None:
        """A call failed: the failing run starts now unless it had already; say what it said."""
        if self._state.api_failing_since is None:
            self._state.api_failing_since = at
        if said:
            self._state.api_said = said

    def _past_bound(self, at: float, otherwise: str = "") -> str | None:
        """Why the session fails now that every call has failed for so long (with what
        Claude Code said last, else `otherwise`); None within the bound."""
        bound, since = self._state.limits.api_failure_seconds, self._state.api_failing_since
        if bound is None or since is None or at - since < bound:
            return None
        last = self._state.api_said or otherwise
        said = f": {last}" if last else ""
        return (
            f"the model endpoint failed every call for {at - since:.0f} s (bound: {bound:g} s)"
            + said
        )

    def _fail(self, at: float, reason: str) -> Outcome:
        self._state.check(Trigger.FAIL)
        return self._state.end(at, Trigger.FAIL, EndStatus.FAILED, reason)

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
            self._state.new_transcript()
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
        event = ev.IdleTimeoutSeen(
            at=obs.at,
            session=self._state.name,
            idle_seconds=obs.idle_seconds,
            retry=self._state.counters.idle_retries,
            decision=decision,
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


def _said(text: str) -> str:
    """What Claude Code said in the agent's place, as one safe, short line."""
    return clean(excerpt(text), one_line=True)


def _http(status: int | None) -> str:
    return f"HTTP {status}" if status is not None else "no HTTP status"


def _status(obs: TurnEnded) -> str:
    return f"the model endpoint refused the credentials ({_http(obs.api_error_status)})"
