"""Errors from the model endpoint: an authentication error fails at once, a request the
API refuses is not sent again, a dead endpoint is retried for a bounded time; each time
the session ends saying what Claude Code said (cleaned), never "api_error (status None)"."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import EndSession, EndStatus, RetryTurn
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import ApiRetrying, SessionIdentified, TurnEnded, UsageObserved
from mala_tui.core.phases import Phase
from mala_tui.core.retry import ApiFailure, classify_api_error, cli_retries_within
from mala_tui.core.usage import CallUsage
from mala_tui.prompt_files import load_prompts
from tests.support.factories import default_limits

PROMPTS = load_prompts()


def manager(**limits: object) -> ContextManager:
    m = ContextManager(
        name="s1",
        task="Fix the bug.",
        limits=default_limits(**{"api_failure_seconds": 60.0, **limits}),
        prompts=PROMPTS,
    )
    m.start(0.0)
    m.observe(SessionIdentified(0.1, "sess-1"))
    return m


def api_error(
    at: float, text: str, status: int | None = None, kind: str | None = None
) -> TurnEnded:
    return TurnEnded(
        at,
        subtype="success",
        is_error=True,
        terminal_reason="api_error",
        result_text=text,
        api_error_status=status,
        api_error_kind=kind,
    )


def ended_with(outcome: Outcome) -> ev.SessionEnded:
    (ended,) = [e for e in outcome.events if isinstance(e, ev.SessionEnded)]
    return ended


def retried(outcome: Outcome) -> bool:
    return any(isinstance(a, RetryTurn) for a in outcome.actions)


# -- what kind of failure ------------------------------------------------------------------------


def test_failures_are_told_apart_by_status_and_by_claude_codes_kind() -> None:
    assert classify_api_error(401, None) is ApiFailure.AUTHENTICATION
    assert classify_api_error(403, None) is ApiFailure.AUTHENTICATION
    assert classify_api_error(None, "authentication_failed") is ApiFailure.AUTHENTICATION
    assert classify_api_error(None, "billing_error") is ApiFailure.AUTHENTICATION
    assert classify_api_error(400, "invalid_request") is ApiFailure.REFUSED
    assert classify_api_error(404, None) is ApiFailure.REFUSED
    for status in (None, 408, 429, 500, 529):
        assert classify_api_error(status, "server_error") is ApiFailure.TRANSIENT


def test_the_clis_own_retries_fit_a_third_of_the_bound() -> None:
    # Claude Code waits about 0.5, 1, 2, 4, 8, 16, then 32 s between its retries.
    assert cli_retries_within(60) == 5
    assert cli_retries_within(5) == 2
    assert cli_retries_within(1) == 0
    assert cli_retries_within(3600) == 10


# -- at once -----------------------------------------------------------------------------------


def test_not_logged_in_fails_at_once_saying_what_claude_code_said() -> None:
    m = manager()
    outcome = m.observe(
        api_error(1.0, "Not logged in · Please run /login", None, "authentication_failed")
    )
    assert m.phase is Phase.FAILED and not retried(outcome)
    assert ended_with(outcome).reason == (
        "authentication failed: Not logged in · Please run /login"
    )


def test_a_401_while_claude_code_retries_fails_at_once() -> None:
    m = manager()
    outcome = m.observe(ApiRetrying(1.0, status=401, error="authentication_failed", attempt=1))
    assert m.phase is Phase.FAILED
    (end,) = [a for a in outcome.actions if isinstance(a, EndSession)]
    assert end.status is EndStatus.FAILED
    assert ended_with(outcome).reason == (
        "authentication failed: the model endpoint refused the credentials (HTTP 401, "
        "authentication_failed)"
    )


def test_a_request_the_api_refuses_is_not_sent_again() -> None:
    m = manager()
    text = "API Error: 400 messages: text content blocks must be non-empty"
    outcome = m.observe(api_error(1.0, text, 400, "invalid_request"))
    assert m.phase is Phase.FAILED and not retried(outcome)
    assert ended_with(outcome).reason == f"the API refused the request (HTTP 400): {text}"


def test_what_claude_code_said_is_cleaned_before_it_is_shown() -> None:
    m = manager()
    outcome = m.observe(
        api_error(
            1.0, "Not logged in\x1b]0;PWNED\x07\nPlease run /login", None, "authentication_failed"
        )
    )
    reason = ended_with(outcome).reason
    assert "\x1b" not in reason and "\x07" not in reason and "\n" not in reason
    assert "PWNED" in reason


# -- bounded -----------------------------------------------------------------------------------


def test_a_dead_endpoint_is_retried_and_its_message_said_when_given_up() -> None:
    m = manager(max_idle_retries=1)
    refused = "API Error: Connection refused (ECONNREFUSED)"
    assert retried(m.observe(api_error(10.0, refused, None, "server_error")))
    outcome = m.observe(api_error(20.0, refused, None, "server_error"))
    assert m.phase is Phase.FAILED
    assert ended_with(outcome).reason == (
        f"api_error (no HTTP status): {refused}: max retries (1) exceeded"
    )


def test_a_dead_endpoint_fails_once_its_failures_outlast_the_bound() -> None:
    m = manager(max_idle_retries=10, api_failure_seconds=60.0)
    m.observe(ApiRetrying(5.0, status=None, error="unknown", attempt=1))
    assert retried(
        m.observe(api_error(30.0, "API Error: Connection refused", None, "server_error"))
    )
    assert m.observe(ApiRetrying(50.0, status=None, error="unknown", attempt=1)).actions == ()
    outcome = m.observe(ApiRetrying(66.0, status=None, error="unknown", attempt=2))
    assert m.phase is Phase.FAILED
    assert ended_with(outcome).reason == (
        "the model endpoint failed every call for 61 s (bound: 60 s): API Error: Connection refused"
    )


def test_a_call_that_succeeds_starts_the_bound_again() -> None:
    m = manager(max_idle_retries=10, api_failure_seconds=60.0)
    m.observe(ApiRetrying(5.0, status=529, error="server_error", attempt=1))
    m.observe(UsageObserved(40.0, CallUsage(input_tokens=1_000), starts_call=True))
    assert m.observe(ApiRetrying(90.0, status=529, error="server_error", attempt=1)).actions == ()
    assert m.phase is Phase.RUNNING


def test_before_claude_code_says_anything_the_retries_are_named() -> None:
    m = manager(api_failure_seconds=10.0)
    m.observe(ApiRetrying(1.0, status=None, error="unknown", attempt=1))
    outcome = m.observe(ApiRetrying(12.0, status=503, error="server_error", attempt=4))
    assert ended_with(outcome).reason == (
        "the model endpoint failed every call for 11 s (bound: 10 s): "
        "Claude Code's retries failed (server_error, HTTP 503)"
    )


def test_without_a_bound_only_the_retry_count_ends_it() -> None:
    m = manager(max_idle_retries=10, api_failure_seconds=None)
    m.observe(ApiRetrying(5.0, status=None, error="unknown", attempt=1))
    assert m.observe(ApiRetrying(5_000.0, status=None, error="unknown", attempt=2)).actions == ()
    assert m.phase is Phase.RUNNING
