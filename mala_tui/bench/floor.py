"""The floor: what any way of handling the window pays on a scenario, read off raw's log.

Whatever manages the window, the CLI writes every block the task produces into the prompt
cache at least once (the system prompt and tools, the task, each call, each result, the
agent's words), reads its system prompt and tools from the cache on every later request,
and pays for what the model writes. Raw (nothing managed, the 1M window) does exactly
that and nothing less: its last prompt holds every block once. So the floor of a
scenario at a density is

    write price x raw's last prompt + 0.1 x head x (raw's requests - 1) + 5 x raw's output

with the head the tools and system prompt. A wait that outlasts the cache's lifetime
(``waits``) empties it for every arm alike: the request after it writes the head again
instead of reading it, so each request raw's log shows reading nothing from the cache
moves its head from the read price to the write price. What an arm pays above it is what its way of
handling the window adds: reads of whatever it holds between requests, rewrites after a
mask or a clearing, summaries, re-reads. An arm can go slightly under it only by never
caching a block at all: a result that arrives in a request the server-side compaction
summarises is summarised before it is ever written.

Raw past its window (the reader at 2x) has the whole scenario projected (raw_projection):
its last prompt is the projected peak and its output the mean output of a request times
the projected requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mala_tui.bench.raw_projection import Projection, step_increments
from mala_tui.loopback.request_log import (
    CACHE_READ_COST,
    CACHE_WRITE_COST,
    OUTPUT_COST,
    RequestRecord,
)


@dataclass(frozen=True)
class Floor:
    """The least a scenario costs at one density, in cache-adjusted input-token units."""

    head_tokens: int
    """The tools and the system prompt: read from the cache on every request but the first."""
    requests: int
    written_tokens: int
    """Every block of the task once: raw's last prompt."""
    output_tokens: int
    write_price: float = CACHE_WRITE_COST
    cold_requests: int = 0
    """Requests after the first that found the cache cold (a wait outlasted it): they
    write the head again."""
    computed: bool = False
    """From raw's projection past its window, not from a finished run."""

    @property
    def write_cost(self) -> float:
        return self.write_price * self.written_tokens

    @property
    def head_read_cost(self) -> float:
        warm = max(0, self.requests - 1 - self.cold_requests)
        return CACHE_READ_COST * self.head_tokens * warm

    @property
    def head_rewrite_cost(self) -> float:
        return self.write_price * self.head_tokens * self.cold_requests

    @property
    def output_cost(self) -> float:
        return OUTPUT_COST * self.output_tokens

    @property
    def cost_units(self) -> float:
        head = self.head_read_cost + self.head_rewrite_cost
        return round(self.write_cost + head + self.output_cost, 1)

    def to_json(self) -> dict[str, float | int | bool]:
        return {
            "head_tokens": self.head_tokens,
            "requests": self.requests,
            "written_tokens": self.written_tokens,
            "output_tokens": self.output_tokens,
            "write_price": self.write_price,
            "cold_requests": self.cold_requests,
            "computed": self.computed,
            "write_cost": round(self.write_cost, 1),
            "head_read_cost": round(self.head_read_cost, 1),
            "head_rewrite_cost": round(self.head_rewrite_cost, 1),
            "output_cost": round(self.output_cost, 1),
            "cost_units": self.cost_units,
        }


def _main_answered(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """The main agent's answered requests: a subagent's conversation has a head of its own."""
    return [r for r in records if r.status == 200 and r.agent_id is None]


def floor_of_raw(records: Sequence[RequestRecord]) -> Floor:
    """The floor from a finished raw run's request log; ValueError when it has no answer
    or does not say its head (a log written before ``head_tokens`` was kept)."""
    answered = _main_answered(records)
    if not answered:
        raise ValueError("raw answered no request: no floor to read")
    head = answered[0].head_tokens
    if head <= 0:
        raise ValueError("the log does not say its head (tools and system prompt)")
    return Floor(
        head_tokens=head,
        requests=len(answered),
        written_tokens=max(r.prompt_tokens for r in answered),
        output_tokens=sum(r.output_tokens for r in answered),
        write_price=answered[0].cache_write_price,
        cold_requests=sum(1 for r in answered[1:] if r.cache_read_input_tokens == 0),
    )


def floor_of_projection(records: Sequence[RequestRecord], projection: Projection) -> Floor:
    """The floor of raw past its window: the projection's whole scenario, the head and
    the mean output of a request from what raw ran before it stopped."""
    measured = floor_of_raw(records)
    output = step_increments(_main_answered(records)).output
    return Floor(
        head_tokens=measured.head_tokens,
        requests=projection.requests,
        written_tokens=projection.peak,
        output_tokens=output * projection.requests,
        write_price=measured.write_price,
        cold_requests=measured.cold_requests,
        computed=True,
    )
