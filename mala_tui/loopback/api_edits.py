"""The API's edits to a request before the model reads it, as the loopback applies them.

Server-side compaction (compaction.py) puts a conversation's latest summary in place of
what it covered, and summarises the conversation first when a request passes its
trigger; tool-result clearing (clearing.py) replaces old results. Each changes the prompt
the model reads and is billed for, while the client keeps sending its whole transcript.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from mala_tui.loopback.cache import PromptCache
from mala_tui.loopback.clearing import ClearToolUses, clear_tool_results, first_changed_block
from mala_tui.loopback.compaction import (
    Compacted,
    apply_compaction,
    compacted,
    summarised_body,
)
from mala_tui.loopback.exchange import CompactionStep, Exchange
from mala_tui.loopback.request_view import parse_request
from mala_tui.loopback.tokens import PromptBlock, output_tokens, prompt_blocks, text_tokens


@dataclass(frozen=True)
class EditedPrompt:
    """A request's prompt after the API's edits."""

    body: Mapping[str, Any]
    blocks: list[PromptBlock]
    invalid_from: int | None
    """No cached prefix reaching this block is read: the clearing changed the prompt there."""
    cleared: int
    """Tool results the clearing replaced."""


def edited_prompt(
    body: Mapping[str, Any],
    ratio: float,
    *,
    earlier: Compacted | None,
    clearing: ClearToolUses | None,
) -> EditedPrompt:
    """The prompt the model reads: the conversation's earlier server-side summary in place
    of what it covered, then the tool-result clearing, when each is on."""
    if earlier is not None:
        body = apply_compaction(body, earlier) or body
    blocks = prompt_blocks(body, ratio)
    if clearing is None:
        return EditedPrompt(body, blocks, None, 0)
    edited = clear_tool_results(
        clearing, body, sum(b.tokens for b in blocks), lambda text: text_tokens(text, ratio)
    )
    if not edited.cleared_results:
        return EditedPrompt(body, blocks, None, 0)
    cleared = prompt_blocks(edited.body, ratio)
    return EditedPrompt(
        edited.body, cleared, first_changed_block(blocks, cleared), edited.cleared_results
    )


def summarise_first(
    exchange: Exchange,
    blocks: list[PromptBlock],
    client_body: Mapping[str, Any],
    cache: PromptCache,
    now: float,
) -> tuple[Exchange, list[PromptBlock], Compacted]:
    """Past the compaction's trigger: the conversation summarised in a step of its own
    (billed as a read of the prompt and the summary as output), and the exchange made on
    the summary alone. Returns it, its blocks, and the compaction to apply from now on."""
    ratio = exchange.route.token_ratio
    summary = exchange.player.agent.compaction_summary(exchange.view)
    step = CompactionStep(
        exchange.prompt,
        cache.peek(blocks, now),
        output_tokens(({"type": "text", "text": summary},), ratio),
    )
    body = summarised_body(exchange.body, summary)
    blocks = prompt_blocks(body, ratio)
    exchange = replace(
        exchange,
        view=parse_request(body, exchange.request.headers),
        body=body,
        prompt=sum(block.tokens for block in blocks),
        compaction=step,
    )
    return exchange, blocks, compacted(client_body, summary)
