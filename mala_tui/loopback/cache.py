"""Prompt caching, simulated the way the Messages API bills it.

The API caches prompt prefixes ending at ``cache_control`` breakpoints. For a request it
finds the longest prefix it has cached (reads bill as ``cache_read_input_tokens``), writes
the prefix up to the request's last breakpoint (the new part bills as
``cache_creation_input_tokens``), and charges everything after the last breakpoint as plain
``input_tokens``. A prefix is identified by its content, so rewriting an old block (masking
a tool result) changes every prefix from that block on: a cache miss from there, as for real.

Entries expire after a TTL that every hit refreshes: the API's 5-minute default, or the
1-hour cache (``--cache-ttl 3600``, whose writes cost 2x the input price instead of 1.25x).
The server reads the time off its clock scaled by the scenario's ``time_scale``, so a wait
of simulated minutes expires entries in seconds.

The API's rules for breakpoints are kept: a request has at most four (the server refuses
a fifth, api_errors.py), and a cached prefix is found only at a breakpoint or at one of the
blocks just before it, ``LOOKBACK_BLOCKS`` in all: a prefix cached further back is not read,
even though it is still there. A block written into the conversation with its own
``cache_control`` marker is a breakpoint like the CLI's own.

Simplification, on purpose: the cache is shared by all routes of one server (the API's is
shared by an organisation).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from mala_tui.loopback.tokens import PromptBlock

DEFAULT_TTL_S = 300.0
#: The 1-hour cache's lifetime; its writes cost more (see ``write_price``).
HOUR_TTL_S = 3600.0
# The API does not cache prefixes shorter than this (1,024 tokens for Sonnet models).
MIN_CACHEABLE_TOKENS = 1024
#: How many blocks, ending at a breakpoint, the API checks for a cached prefix.
LOOKBACK_BLOCKS = 20


@dataclass(frozen=True)
class CacheSplit:
    """How one request's prompt tokens are billed."""

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt: what the context holds before the reply."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


def prefix_keys(blocks: Sequence[PromptBlock]) -> list[bytes]:
    """Key of each prefix: entry i identifies blocks[0..i] by content."""
    keys: list[bytes] = []
    running = b""
    for block in blocks:
        running = hashlib.sha256(running + block.digest).digest()
        keys.append(running)
    return keys


def write_price(ttl_s: float) -> float:
    """A cache write's price, input = 1: 1.25 for the 5-minute cache, 2 for a longer one."""
    return 1.25 if ttl_s <= DEFAULT_TTL_S else 2.0


class PromptCache:
    """Cached prefixes with their expiry times; ``bill`` reads and updates it per request."""

    def __init__(
        self, *, ttl_s: float = DEFAULT_TTL_S, min_cacheable_tokens: int = MIN_CACHEABLE_TOKENS
    ) -> None:
        self._ttl_s = ttl_s
        self._min_cacheable_tokens = min_cacheable_tokens
        self._expiry: dict[bytes, float] = {}

    @property
    def ttl_s(self) -> float:
        return self._ttl_s

    def __len__(self) -> int:
        return len(self._expiry)

    def bill(
        self, blocks: Sequence[PromptBlock], now: float, *, invalid_from: int | None = None
    ) -> CacheSplit:
        """Split a request's prompt into cache read / cache write / input, and cache it.

        ``invalid_from``: no cached prefix reaching this block index or past it is read
        (the server's context editing changed the prompt there).
        """
        self._expire(now)
        total = sum(block.tokens for block in blocks)
        breakpoints = [index for index, block in enumerate(blocks) if block.breakpoint]
        if not breakpoints:
            return CacheSplit(
                input_tokens=total, cache_creation_input_tokens=0, cache_read_input_tokens=0
            )
        keys = prefix_keys(blocks)
        cumulative: list[int] = []
        running = 0
        for block in blocks:
            running += block.tokens
            cumulative.append(running)

        hit = self._longest_hit(keys, breakpoints, invalid_from)
        read = cumulative[hit] if hit >= 0 else 0
        if hit >= 0:
            self._expiry[keys[hit]] = now + self._ttl_s

        written_to = hit
        for index in breakpoints:
            if index <= hit or cumulative[index] < self._min_cacheable_tokens:
                continue
            self._expiry[keys[index]] = now + self._ttl_s
            written_to = index
        created = cumulative[written_to] - read if written_to > hit else 0
        return CacheSplit(
            input_tokens=total - read - created,
            cache_creation_input_tokens=created,
            cache_read_input_tokens=read,
        )

    def peek(self, blocks: Sequence[PromptBlock], now: float) -> CacheSplit:
        """How a read of this prompt is billed when nothing of it is written: the longest
        cached prefix as cache reads (its entry refreshed, as any hit refreshes it), the
        rest as input. The server-side compaction's summarising step reads a prompt so."""
        self._expire(now)
        keys = prefix_keys(blocks)
        breakpoints = [index for index, block in enumerate(blocks) if block.breakpoint]
        hit = self._longest_hit(keys, breakpoints, None)
        total = sum(block.tokens for block in blocks)
        read = sum(block.tokens for block in blocks[: hit + 1])
        if hit >= 0:
            self._expiry[keys[hit]] = now + self._ttl_s
        return CacheSplit(
            input_tokens=total - read, cache_creation_input_tokens=0, cache_read_input_tokens=read
        )

    def _longest_hit(
        self, keys: Sequence[bytes], breakpoints: Sequence[int], invalid_from: int | None
    ) -> int:
        """The last block of the longest cached prefix the API finds: at a breakpoint or
        within ``LOOKBACK_BLOCKS`` blocks ending at one, never reaching ``invalid_from``;
        -1 when there is none."""
        newest = len(keys) - 1 if invalid_from is None else invalid_from - 1
        for index in range(newest, -1, -1):
            near = any(0 <= b - index < LOOKBACK_BLOCKS for b in breakpoints)
            if near and keys[index] in self._expiry:
                return index
        return -1

    def _expire(self, now: float) -> None:
        stale = [key for key, expiry in self._expiry.items() if expiry <= now]
        for key in stale:
            del self._expiry[key]
