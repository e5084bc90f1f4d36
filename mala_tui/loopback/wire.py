"""The Messages API wire format: SSE events, message bodies, error bodies.

Shapes follow the real API as the CLI parses them: ``message_start`` carries the prompt's
usage (``output_tokens`` is provisional there), text arrives as ``text_delta``s, tool calls
as ``content_block_start`` with an empty input and then ``input_json_delta`` fragments, and
``message_delta`` carries the stop reason with the final usage.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mala_tui.loopback.cache import CacheSplit

# Characters per delta event: small enough to look like streaming, large enough that a
# 100 KB Write does not turn into tens of thousands of events.
TEXT_CHUNK_CHARS = 64
JSON_CHUNK_CHARS = 512


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event; ``tokens`` is what it carries, for rate-limited streaming."""

    name: str
    data: Mapping[str, Any]
    tokens: int = 0

    def encode(self) -> bytes:
        return f"event: {self.name}\ndata: {json.dumps(self.data)}\n\n".encode()


def usage_body(split: CacheSplit, output_tokens: int) -> dict[str, Any]:
    """The usage object as the API sends it."""
    return {
        "input_tokens": split.input_tokens,
        "cache_creation_input_tokens": split.cache_creation_input_tokens,
        "cache_read_input_tokens": split.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": split.cache_creation_input_tokens,
            "ephemeral_1h_input_tokens": 0,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def message_body(
    message_id: str,
    model: str,
    content: tuple[Mapping[str, Any], ...],
    *,
    stop_reason: str,
    split: CacheSplit,
    output_tokens: int,
) -> dict[str, Any]:
    """A complete non-streaming response."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [dict(block) for block in content],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage_body(split, output_tokens),
    }


def message_start(message_id: str, model: str, split: CacheSplit) -> SseEvent:
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage_body(split, 1),
    }
    return SseEvent("message_start", {"type": "message_start", "message": message})


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def content_events(index: int, block: Mapping[str, Any]) -> Iterator[SseEvent]:
    """content_block_start, its deltas, content_block_stop for one block."""
    if block.get("type") == "tool_use":
        start_block = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        yield SseEvent(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start_block},
        )
        payload = json.dumps(block.get("input", {}))
        for piece in _chunks(payload, JSON_CHUNK_CHARS):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield SseEvent(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
                tokens=max(1, len(piece) // 4),
            )
    else:
        yield SseEvent(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
        for piece in _chunks(str(block.get("text", "")), TEXT_CHUNK_CHARS):
            delta = {"type": "text_delta", "text": piece}
            yield SseEvent(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
                tokens=max(1, len(piece) // 4),
            )
    yield SseEvent("content_block_stop", {"type": "content_block_stop", "index": index})


def message_end(stop_reason: str, split: CacheSplit, output_tokens: int) -> list[SseEvent]:
    """message_delta with the final usage, then message_stop."""
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": usage_body(split, output_tokens),
    }
    return [SseEvent("message_delta", delta), SseEvent("message_stop", {"type": "message_stop"})]


PING = SseEvent("ping", {"type": "ping"})


def error_body(error_type: str, message: str) -> dict[str, Any]:
    """The API's JSON error body."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


def prompt_too_long_message(tokens: int, maximum: int) -> str:
    return f"prompt is too long: {tokens} tokens > {maximum} maximum"
