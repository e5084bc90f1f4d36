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
