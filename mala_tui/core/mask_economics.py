"""Whether a mask pays for itself: the prompt cache's price of a rewrite against what it saves.

With prompt caching, a request pays 0.1x the input price for the prefix it shares with
the one before and 1.25x for what it writes anew. A mask changes the prompt at its first
changed block (the oldest result it masks), so the request after it writes again all it
keeps from there on. What it does not write again is the warm head: the system prompt and
tools, and anything before the first changed block that the cache still holds and the
API can find (a breakpoint kept there). The kept conversation past the warm head costs
1.25x once instead of 0.1x; what the mask frees is then not read again, 0.1x per request,
until the window has grown back. A cache gone cold costs nothing to rewrite: the next
request writes the whole prompt whatever is done.

Masking whenever the window reaches a level T and leaves it at W_f repeats every
(T - W_f) / g requests for a growth of g tokens per request. The cost per request,
reads of the average window plus the rewrite spread over the cycle, is least when

    (T - W_f)^2 = 2 x (1.25 - 0.1) / 0.1 x (W_f - warm head) x g

so a mask that frees F = T - W_f pays for itself once F reaches the square root of the
right-hand side; before that, waiting one more request is cheaper. Dense text grows the
window faster and keeps more after each mask, so the point moves with the session's own
figures rather than with a fixed threshold tuned to one model; a longer warm head moves
it down, since less is written again.
"""

from __future__ import annotations

import math
from typing import Final

#: The API's prompt-cache prices as multiples of the input price (5-minute cache).
CACHE_WRITE: Final = 1.25
CACHE_READ: Final = 0.1
#: A write to the 1-hour cache.
CACHE_WRITE_HOUR: Final = 2.0
#: The 5-minute cache's lifetime, in seconds: longer lifetimes are the 1-hour cache's.
FIVE_MINUTES: Final = 300.0


def write_price(cache_ttl_seconds: float) -> float:
    """A cache write's price for a cache of this lifetime (the 1-hour cache's costs more)."""
    return CACHE_WRITE if cache_ttl_seconds <= FIVE_MINUTES else CACHE_WRITE_HOUR


def warm_head(head: int, kept_prefix: int = 0) -> int:
    """What the request after a mask still reads from the cache: the head (system prompt
    and tools), or all the prompt up to a breakpoint kept before the mask's first changed
    block (`kept_prefix`, the head included; 0 when there is none), whichever is longer.
    Without such a breakpoint the API finds no longer prefix: it looks for one only at a
    breakpoint or within 20 blocks before it, and the CLI's own are on the system prompt
    and on the request's last block."""
    return max(head, kept_prefix)


def rewritten(after: int, warm: int) -> int:
    """Tokens a mask leaving `after` makes the next request write again: all but the warm
    head."""
    return max(0, after - warm)


def worthwhile_batch(after: int, warm: int, growth: float, write: float = CACHE_WRITE) -> int:
    """The least a mask leaving `after` tokens, `warm` of them still cached, should free
    to pay for its rewrite; 0 when it rewrites nothing."""
    spread = 2 * (write - CACHE_READ) / CACHE_READ
    return math.isqrt(round(spread * rewritten(after, warm) * growth))


def pays_for_itself(
    freed: int,
    after: int,
    warm: int,
    growth: float | None,
    write: float = CACHE_WRITE,
    *,
    cold: bool = False,
) -> bool:
    """True when masking `freed` tokens now costs less than waiting. Unknown growth: True.
    A cold cache: True, since the next request writes everything either way."""
    if cold or growth is None or growth <= 0:
        return True
    return freed >= worthwhile_batch(after, warm, growth, write)


def cache_cold(last_request_at: float | None, now: float, ttl_seconds: float) -> bool:
    """Whether the prompt cache has expired: no request for at least its lifetime (every
    request that reads it keeps it warm). Unknown (no request yet): not cold."""
    return last_request_at is not None and now - last_request_at >= ttl_seconds


class GrowthRate:
    """Tokens the window grows by per request, smoothed; masks and restarts are not growth."""

    __slots__ = ("_last", "rate")

    #: Weight of the newest request: recent steps say most about the next ones.
    ALPHA: Final = 0.3

    def __init__(self) -> None:
        self._last: int | None = None
        self.rate: float | None = None

    def observe(self, tokens: int) -> None:
        """A new request's prompt size."""
        last, self._last = self._last, tokens
        if last is None or tokens <= last:
            return
        step = tokens - last
        self.rate = step if self.rate is None else self.ALPHA * step + (1 - self.ALPHA) * self.rate

    def restart(self) -> None:
        """A fresh session: its first request is not growth over the last one."""
        self._last = None
