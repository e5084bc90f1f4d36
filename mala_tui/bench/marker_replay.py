"""A mask that keeps a cache breakpoint before the newest kept result: measured by replay.

    python -m mala_tui.bench markers                       # the set at 1x and 2x
    python -m mala_tui.bench markers --scenario code-change --densities 2

A ``cache_control`` marker written into a block of Claude Code's transcript reaches every
request of the resumed session (tests/integration/test_cache_marker.py). The CLI sends two
markers of its own (the last system block, the last block of the request), so a mask may
keep two more. The idea: at each mask, mark the block just before the newest result the
mask keeps. Everything up to that block is the structure the mask leaves (calls,
placeholders, the agent's words); at the next mask, which changes the prompt from that
result on, the prefix up to the marker is unchanged and is read from the cache instead of
written again. Each mask keeps its own marker and the one before it, so the next mask
still finds the old one (the API looks for a cached prefix only within 20 blocks of a
breakpoint).

A marker changes no content, so the model sees exactly the same prompts and does the
same steps, re-reads included: the managed arm is run once with its request bodies
kept, and its requests are billed again with the prompt-cache model, without and with
the markers. A request the arm's log shows reading nothing from the cache (the cache
went cold during a wait) starts the replay's cache afresh. The decisions stay those of
the shipped mask; a mask that knew its rewrite were cheaper might mask more often.

The runtime now keeps such a breakpoint itself (runtime/backends/claude_markers.py), so
the requests carry it already: the replay takes every marker but the CLI's own off first
(the one on the request's last block), which gives the cost the same run would have had
without them, and then puts its own on.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mala_tui.bench.arms import REQUEST_LOG, run_managed_arm, settings_with
from mala_tui.bench.economy_options import DENSITIES, SCENARIO_SET
from mala_tui.loopback import Scenario, ScenarioError, load_scenario, read_jsonl
from mala_tui.loopback.api_errors import MAX_BREAKPOINTS
from mala_tui.loopback.cache import PromptCache
from mala_tui.loopback.request_log import (
    CACHE_READ_COST,
    OUTPUT_COST,
    RequestRecord,
)
from mala_tui.loopback.request_view import MASKED_PLACEHOLDER
from mala_tui.loopback.server import KEEP_BODIES_ENV
from mala_tui.loopback.tokens import (
    PromptBlock,
    check_token_ratio,
    prompt_blocks,
    tool_result_text,
)

#: Markers a mask keeps: its own and the one of the mask before it.
KEPT_MARKERS = 2


@dataclass(frozen=True)
class Replay:
    """One arm's requests billed again."""

    cost_units: float
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    masks: int


def _message_blocks(body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The message blocks in the order prompt_blocks cuts them."""
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            yield {"type": "text", "text": content}
        elif isinstance(content, list):
            yield from (block for block in content if isinstance(block, Mapping))


def newest_kept_result(body: Mapping[str, Any], blocks: Sequence[PromptBlock]) -> int | None:
    """The index in `blocks` of the newest tool result that is not a mask's placeholder."""
    offset = sum(1 for block in blocks if block.section != "messages")
    newest = None
    for index, block in enumerate(_message_blocks(body)):
        if block.get("type") != "tool_result":
            continue
        if not MASKED_PLACEHOLDER.search(tool_result_text(block.get("content"))):
            newest = offset + index
    return newest


def with_markers(blocks: Sequence[PromptBlock], markers: Sequence[int]) -> list[PromptBlock]:
    """The blocks with a breakpoint on each marker too, as the API takes them: the newest
    markers first, up to four breakpoints in all."""
    own = sum(1 for block in blocks if block.breakpoint)
    room = max(0, MAX_BREAKPOINTS - own)
    chosen = set(sorted(markers, reverse=True)[:room])
    return [
        replace(block, breakpoint=True) if index in chosen else block
        for index, block in enumerate(blocks)
    ]


def _cli_markers_only(blocks: Sequence[PromptBlock]) -> list[PromptBlock]:
    """The blocks with the breakpoints of the CLI's own only: those outside the messages
    (its system prompt's) and the one on the request's last block."""
    last = len(blocks) - 1
    return [
        replace(block, breakpoint=False)
        if block.breakpoint and block.section == "messages" and index != last
        else block
        for index, block in enumerate(blocks)
    ]


def rebill(records: Sequence[RequestRecord], *, markers: bool) -> Replay:
    """The main agent's answered requests billed again, with the markers or without.

    A mask is seen where a request carries more placeholders than the one before it; its
    marker goes on the block before the newest result it kept, and stays, with the
    previous mask's, on every later request of the same session.
    """
    answered = [r for r in records if r.status == 200 and r.agent_id is None]
    cache = PromptCache()
    kept: list[int] = []
    placeholders, session = 0, None
    cost, read, created, masks = 0.0, 0, 0, 0
    for number, record in enumerate(answered):
        if record.body is None:
            raise ValueError(f"request {record.index} has no body: run with bodies kept")
        if number and record.cache_read_input_tokens == 0:
            cache = PromptCache(ttl_s=cache.ttl_s)  # the cache went cold during a wait
        if record.session_id != session:
            kept, placeholders, session = [], 0, record.session_id
        blocks = _cli_markers_only(prompt_blocks(record.body, record.token_ratio))
        if record.masked_placeholders > placeholders:
            masks += 1
            newest = newest_kept_result(record.body, blocks)
            if newest is not None and newest > 0:
                kept = [*kept, newest - 1][-KEPT_MARKERS:]
        placeholders = record.masked_placeholders
        billed = with_markers(blocks, kept) if markers else blocks
        split = cache.bill(billed, float(number))
        read += split.cache_read_input_tokens
        created += split.cache_creation_input_tokens
        cost += (
            split.input_tokens
            + CACHE_READ_COST * split.cache_read_input_tokens
            + record.cache_write_price * split.cache_creation_input_tokens
            + OUTPUT_COST * record.output_tokens
        )
    return Replay(round(cost, 1), read, created, masks)


@contextmanager
def bodies_kept() -> Iterator[None]:
    """Every loopback server started meanwhile keeps its request bodies in its log."""
    before = os.environ.get(KEEP_BODIES_ENV)
    os.environ[KEEP_BODIES_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[KEEP_BODIES_ENV]
        else:
            os.environ[KEEP_BODIES_ENV] = before


def measure(scenario: Scenario, ratio: float, folder: Path) -> tuple[Any, Replay, Replay]:
    """The managed arm with the shipped settings, and its requests billed again."""
    with bodies_kept():
        arm = asyncio.run(
            run_managed_arm(scenario, folder, settings_with().settings, token_ratio=ratio)
        )
    records = read_jsonl(folder / REQUEST_LOG)
    return arm, rebill(records, markers=False), rebill(records, markers=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench markers")
    parser.add_argument("--scenario", action="append", metavar="NAME_OR_FILE")
    parser.add_argument("--densities", default=",".join(f"{d:g}" for d in DENSITIES))
    parser.add_argument("--out", type=Path, default=Path("marker-results"))
    args = parser.parse_args(argv)
    try:
        ratios = [check_token_ratio(float(x)) for x in args.densities.split(",") if x.strip()]
        scenarios = [load_scenario(name) for name in args.scenario or SCENARIO_SET]
    except (ValueError, ScenarioError) as exc:
        parser.error(str(exc))
    print(
        "| scenario | density | masks | re-reads | cost as run | replayed without markers "
        "| replayed with markers | with / without |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for ratio in ratios:
        for scenario in scenarios:
            folder = args.out / f"{ratio:g}x" / scenario.name
            arm, without, marked = measure(scenario, ratio, folder)
            print(
                f"| {scenario.name} | {ratio:g}x | {without.masks} | {arm.rereads} "
                f"| {arm.cost_units:,.0f} | {without.cost_units:,.0f} "
                f"| {marked.cost_units:,.0f} | {marked.cost_units / without.cost_units:.3f} |",
                flush=True,
            )
            print(f"  {scenario.name} at {ratio:g}x: {arm.ending}", file=sys.stderr)
    return 0
