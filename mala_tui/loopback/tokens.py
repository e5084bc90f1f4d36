"""The loopback server's token estimator: one deterministic rule for every count it reports.

A request is cut into blocks in the order the API reads a prompt: each tool definition,
each system text block, then each content block of each message. A block's token count is
``ceil(characters / 4)`` of its canonical text (at least 1). Counting per block keeps prefix
sums consistent across requests: the same leading blocks always add up to the same number,
which is what the prompt-cache simulation and "context grows as the conversation grows"
both need. ``count_tokens`` answers with the same sum, so the CLI's own checks (it asks
``count_tokens`` before letting a large Read through) agree with what ``/v1/messages`` bills.

Not modelled: per-message role overhead and the real tokenizer; the ratio of 4 characters
a token is close enough for English text and code to keep the numbers plausible. Real
tokenizers count denser text (logs, numbers, JSON, CJK) at up to several times that, so
every count takes a ``ratio``: a block of ``ratio = 2.0`` counts ``ceil(characters / 4 * 2)``
tokens. The ratio applies per block, so prefix sums stay consistent at any density.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4
# Largest density accepted: far past any real tokenizer, small enough to keep counts sane.
MAX_TOKEN_RATIO = 64.0

# The CLI sends a per-session attribution line as the first system block. The real API reads
# it as a header, not as prompt; counting it would make every session's prompt differ from
# the second block on and defeat the shared tools/system cache.
BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"


def check_token_ratio(ratio: float) -> float:
    """The ratio itself, or ValueError saying what is allowed."""
    if not isinstance(ratio, int | float) or isinstance(ratio, bool):
        raise ValueError(f"token ratio must be a number, got {ratio!r}")
    if not math.isfinite(ratio) or ratio <= 0 or ratio > MAX_TOKEN_RATIO:
        raise ValueError(
            f"token ratio must be a finite number above 0 and at most {MAX_TOKEN_RATIO:g}, "
            f"got {ratio!r}"
        )
    return float(ratio)


def text_tokens(text: str, ratio: float = 1.0) -> int:
    """Tokens of one block's canonical text: ceil(characters / 4 * ratio), at least 1."""
    if ratio == 1.0:
        return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))
    return max(1, math.ceil(len(text) * ratio / CHARS_PER_TOKEN))


@dataclass(frozen=True)
class PromptBlock:
    """One unit of a prompt as the cache sees it.

    ``digest`` identifies the block's content (cache_control removed, role included for
    message blocks), ``tokens`` is its estimate, ``breakpoint`` says the request put a
    ``cache_control`` marker on it.
    """

    section: str
    digest: bytes
    tokens: int
    breakpoint: bool


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _without_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in block.items() if key != "cache_control"}


def tool_result_text(content: Any) -> str:
    """The text of a tool_result's content, whether a string or a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for item in content:
            if isinstance(item, Mapping) and item.get("type") == "text":
                parts.append(str(item.get("text", "")))
            else:
                parts.append(_canonical_json(item))
        return "\n".join(parts)
    if content is None:
        return ""
    return _canonical_json(content)


def block_text(block: Mapping[str, Any]) -> str:
    """The canonical text of one message content block, the thing the estimator measures."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"{block.get('name', '')}\n{_canonical_json(block.get('input', {}))}"
    if kind == "tool_result":
        return tool_result_text(block.get("content"))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "redacted_thinking":
        return str(block.get("data", ""))
    return _canonical_json(_without_cache_control(block))


def _digest(section: str, payload: Any) -> bytes:
    return hashlib.sha256(f"{section}\0{_canonical_json(payload)}".encode()).digest()


def _system_blocks(system: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(system, str):
        yield {"type": "text", "text": system}
    elif isinstance(system, list):
        for block in system:
            if isinstance(block, Mapping):
                yield block


def _message_blocks(message: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        yield {"type": "text", "text": content}
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping):
                yield block


def prompt_blocks(body: Mapping[str, Any], ratio: float = 1.0) -> list[PromptBlock]:
    """Cut a Messages API request body into blocks: tools, then system, then messages."""
    blocks: list[PromptBlock] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, Mapping):
            continue
        payload = _without_cache_control(tool)
        blocks.append(
            PromptBlock(
                section="tools",
                digest=_digest("tool", payload),
                tokens=text_tokens(_canonical_json(payload), ratio),
                breakpoint="cache_control" in tool,
            )
        )
    for block in _system_blocks(body.get("system")):
        text = str(block.get("text", ""))
        if text.startswith(BILLING_HEADER_PREFIX):
            continue
        blocks.append(
            PromptBlock(
                section="system",
                digest=_digest("system", text),
                tokens=text_tokens(text, ratio),
                breakpoint="cache_control" in block,
            )
        )
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        role = str(message.get("role", ""))
        for block in _message_blocks(message):
            blocks.append(
                PromptBlock(
                    section="messages",
                    digest=_digest(role, _without_cache_control(block)),
                    tokens=text_tokens(block_text(block), ratio),
                    breakpoint="cache_control" in block,
                )
            )
    return blocks


def prompt_tokens(body: Mapping[str, Any], ratio: float = 1.0) -> int:
    """The whole prompt's estimate (system + tools + messages); what count_tokens answers."""
    return sum(block.tokens for block in prompt_blocks(body, ratio))


def output_tokens(content: Sequence[Mapping[str, Any]], ratio: float = 1.0) -> int:
    """Tokens of a reply's content blocks, by the same per-block rule."""
    return max(1, sum(text_tokens(block_text(block), ratio) for block in content))
