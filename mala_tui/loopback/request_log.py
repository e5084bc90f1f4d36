"""The server's request log: one frozen record per ``/v1/messages`` call, and its totals.

Tests and benchmarks read it: what each request held (tokens and their cache split, masked
placeholders), what the scripted agent played (step, whether it was a redo or an operator's
request), and what went wrong on purpose (faults) or for real (too long). It can be written
as JSONL.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Relative cost of each kind of token, input = 1, as the API prices them.
CACHE_READ_COST = 0.1
CACHE_WRITE_COST = 1.25
OUTPUT_COST = 5.0


@dataclass(frozen=True)
class RequestRecord:
    """One ``/v1/messages`` request and what the server did with it."""

    index: int
    """1-based over the whole server."""
    route_request: int
    """1-based over the route's main agent (what ``at_request`` faults count), or over
    one subagent's requests for a subagent's."""
    time: float
    """Unix time the request arrived."""
    route: str
    scenario: str
    session_id: str | None
    stream: bool
    message_count: int
    prompt_tokens: int
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int
    masked_placeholders: int
    step_id: str | None
    step_label: str | None
    redone: bool
    response_kind: str
    """tool_use, checkpoint, wind_down, final, compaction_summary or error."""
    status: int
    """HTTP status sent (200 for every answer that streamed, even one later cut off)."""
    fault: str | None
    error: str | None
    window: int
    done_steps: int
    """Scenario steps the agent saw as done in this request."""
    reread: str | None = None
    """The fact this request's tool call fetches again (it was not visible), if any."""
    reread_tokens: int = 0
    """Tokens of re-read results that came back in this request: the re-reads' price."""
    cleared_results: int = 0
    """Tool results the server's tool-result clearing replaced in this request."""
    token_ratio: float = 1.0
    """The token density this request was counted at."""
    body: Mapping[str, Any] | None = None
    """The request body, kept only when the server was asked to keep bodies."""
    operator_step: bool = False
    """The step played is an extra one an operator's message asked for (step_id
    ``operator-N``, its label ending "(asked by the operator)")."""
    compaction_prompt_tokens: int = 0
    """The prompt the server-side compaction summarised before this answer (0: none)."""
    compaction_cache_read_input_tokens: int = 0
    """Of that prompt, what was read from the cache; the rest is billed as input."""
    compaction_output_tokens: int = 0
    """The summary the compaction wrote."""
    cache_write_price: float = CACHE_WRITE_COST
    """What a cache write costs here, input = 1: 1.25 for the 5-minute cache, 2 for the
    1-hour one."""
    model: str = ""
    """The model the request named, which the answer names too."""
    agent_id: str | None = None
    """A subagent's request: the agent id Claude Code sent (``x-claude-code-agent-id``);
    None for the main agent's. Its ``route_request`` counts that subagent's requests."""
    parent_agent_id: str | None = None
    """The agent that started this subagent, when Claude Code says (a nested one)."""
    subagent: str | None = None
    """The scenario's name for the subagent that answered (``[[subagents]]``)."""
    head_tokens: int = 0
    """Of the prompt, the tools and the system prompt: what every request of the
    conversation carries before its first message (0 in logs written before it was kept)."""

    @property
    def from_subagent(self) -> bool:
        return self.agent_id is not None

    @property
    def compacted(self) -> bool:
        """The server-side compaction summarised the conversation before this answer."""
        return self.compaction_prompt_tokens > 0

    @property
    def peak_tokens(self) -> int:
        """The largest prompt the model read for this request (the summarised one, when
        a compaction came first)."""
        return max(self.prompt_tokens, self.compaction_prompt_tokens)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class LogSummary:
    """Totals over a run's records."""

    requests: int
    errors: int
    redone_steps: int
    rereads: int
    """Tool calls made only to see a needed fact again."""
    reread_tokens: int
    """Tokens those re-reads brought back into the context."""
    prompt_tokens: int
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int
    cost_units: float
    """Cost in input-token units: cache reads 0.1x, cache writes 1.25x (2x for the
    1-hour cache), output 5x; server-side compaction steps included."""
    peak_prompt_tokens: int


def cost_units(record: RequestRecord) -> float:
    """The request's cost in input-token units, its compaction step included."""
    compaction = (
        record.compaction_prompt_tokens
        - record.compaction_cache_read_input_tokens
        + CACHE_READ_COST * record.compaction_cache_read_input_tokens
        + OUTPUT_COST * record.compaction_output_tokens
    )
    return (
        record.input_tokens
        + CACHE_READ_COST * record.cache_read_input_tokens
        + record.cache_write_price * record.cache_creation_input_tokens
        + OUTPUT_COST * record.output_tokens
        + compaction
    )


def summarize(records: Iterable[RequestRecord]) -> LogSummary:
    """Sum a run's records (errors answered before any token was billed count as requests)."""
    items = list(records)
    return LogSummary(
        requests=len(items),
        errors=sum(1 for r in items if r.response_kind == "error"),
        redone_steps=sum(1 for r in items if r.redone),
        rereads=sum(1 for r in items if r.reread is not None and r.status == 200),
        reread_tokens=sum(r.reread_tokens for r in items),
        # A compaction step reads a whole prompt too: what a provider without caching bills.
        prompt_tokens=sum(
            r.prompt_tokens + r.compaction_prompt_tokens for r in items if r.status == 200
        ),
        input_tokens=sum(
            r.input_tokens + r.compaction_prompt_tokens - r.compaction_cache_read_input_tokens
            for r in items
        ),
        cache_creation_input_tokens=sum(r.cache_creation_input_tokens for r in items),
        cache_read_input_tokens=sum(
            r.cache_read_input_tokens + r.compaction_cache_read_input_tokens for r in items
        ),
        output_tokens=sum(r.output_tokens + r.compaction_output_tokens for r in items),
        cost_units=round(sum(cost_units(r) for r in items), 2),
        peak_prompt_tokens=max((r.peak_tokens for r in items if r.status == 200), default=0),
    )


def write_jsonl(records: Iterable[RequestRecord], path: Path) -> None:
    """One record a line, in request order."""
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record.to_json()) + "\n")


def read_jsonl(path: Path) -> list[RequestRecord]:
    """Records written by ``write_jsonl``."""
    with path.open(encoding="utf-8") as source:
        return [RequestRecord(**json.loads(line)) for line in source if line.strip()]
