"""What to do when an agent goes silent or its turn fails on the API: the recovery rules.

After a hang the stuck process is always disconnected first. Then, while
retries are left: resume the session by its id when there is one; start afresh
with the same prompt when there is none and nothing has happened that a fresh
start would repeat (no tool call yet); otherwise fail fast, since a fresh start
would redo tool calls with no record of them. Past the last retry, give up.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

#: Terminal reasons of a turn worth retrying; any other error ends the session.
RETRYABLE_RESULTS: Final = frozenset({"api_error", "aborted_streaming"})

AUTH_STATUSES: Final = frozenset({401, 403})
AUTH_KINDS: Final = frozenset({"authentication_failed", "billing_error"})
"""Claude Code's names for a call refused for who is calling: a wrong, revoked or missing
key, no login, no credit. Sending it again changes nothing."""
RETRYABLE_STATUSES: Final = frozenset({408, 409, 429})
"""Statuses under 500 that may pass (a timeout, a conflict, a rate limit); any other 4xx
refuses the request itself, and the same request would be refused again."""
CLI_BACKOFF: Final = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
"""Claude Code's wait before each of its retries of a failed call (the last repeats)."""
CLI_MAX_RETRIES: Final = 10
"""Claude Code's own default number of retries."""


class ApiFailure(StrEnum):
    """What a failed API call says about calling again."""

    AUTHENTICATION = "authentication"
    """Who calls is refused: fail at once, saying so."""
    REFUSED = "refused"
    """The request itself is refused: the same one would be too."""
    TRANSIENT = "transient"
    """The endpoint failed (no answer, 5xx, overloaded): worth retrying, for a while."""


def classify_api_error(status: int | None, kind: str | None) -> ApiFailure:
    """A failed call's meaning, from its HTTP status and Claude Code's kind of error."""
    if status in AUTH_STATUSES or kind in AUTH_KINDS:
        return ApiFailure.AUTHENTICATION
    if kind == "invalid_request" or (
        status is not None and 400 <= status < 500 and status not in RETRYABLE_STATUSES
    ):
        return ApiFailure.REFUSED
    return ApiFailure.TRANSIENT


def cli_retries_within(seconds: float) -> int:
    """How many retries Claude Code may make of one call so that their waits take no
    more than a third of `seconds`: the bound on a failing endpoint then leaves room
    for mala-tui's own retries, each of which lets Claude Code retry again."""
    waited, retries = 0.0, 0
    while retries < CLI_MAX_RETRIES:
        wait = CLI_BACKOFF[min(retries, len(CLI_BACKOFF) - 1)]
        if waited + wait > seconds / 3:
            break
        waited, retries = waited + wait, retries + 1
    return retries


class RetryDecision(StrEnum):
    RESUME = "resume"
    FRESH = "fresh"
    FAIL_FAST = "fail_fast"
    """Tool calls happened and there is no session to resume: a fresh start would redo them."""
    GIVE_UP = "give_up"
    """Every retry is used."""
    NONE = "none"
    """Nothing was decided (the turn was not retried)."""

    @property
    def retries(self) -> bool:
        return self in (RetryDecision.RESUME, RetryDecision.FRESH)


def decide_retry(
    *, retries_done: int, max_retries: int, has_session_id: bool, tool_calls: int
) -> RetryDecision:
    if retries_done >= max_retries:
        return RetryDecision.GIVE_UP
    if has_session_id:
        return RetryDecision.RESUME
    if tool_calls == 0:
        return RetryDecision.FRESH
    return RetryDecision.FAIL_FAST


def backoff_delay(backoff: tuple[float, ...], retry: int) -> float:
    """Seconds before retry number `retry` (1-based); the last value repeats."""
    if not backoff:
        return 0.0
    return backoff[min(max(retry, 1) - 1, len(backoff) - 1)]
