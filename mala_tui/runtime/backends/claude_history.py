"""A Claude Code transcript read back as the conversation the manager would have seen live.

When `mala-tui resume` picks an agent session up by its id, the agent's window still
holds everything it did before the interruption; the manager, a new object, knows
none of it. Read from the session's transcript (`<config>/projects/<project>/<id>.jsonl`),
the conversation gives it back what masking decides on: the tool calls and their results.
Only the main thread's `user` and `assistant` entries count (not subagents' sidechains,
not the CLI's own bookkeeping lines); a line that cannot be read is passed over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mala_tui.core.transcript import Block, Message, Role, TextBlock, ToolCall, ToolResult


def read_conversation(path: Path) -> list[Message]:
    """The main thread's messages, in order; [] when the file cannot be read.

    Every user text is a prompt mala-tui sent (the agent's own words are assistant
    messages, tools answer with results), so it is marked as the harness's.
    """
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    messages = []
    for line in lines:
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        message = _message(entry)
        if message is not None:
            messages.append(message)
    return _without_open_calls(messages)


def _without_open_calls(messages: list[Message]) -> list[Message]:
    """Tool calls that never got their result (the process died mid-tool) are left out:
    the CLI does not send them on either, and the manager must not wait for them."""
    answered = {
        block.tool_use_id
        for message in messages
        for block in message.blocks
        if isinstance(block, ToolResult)
    }
    kept = []
    for message in messages:
        blocks = tuple(b for b in message.blocks if not isinstance(b, ToolCall) or b.id in answered)
        if len(blocks) == len(message.blocks):
            kept.append(message)
        elif blocks:
            kept.append(Message(message.role, blocks, message.from_harness))
    return kept


def _message(entry: Any) -> Message | None:
    if not isinstance(entry, dict) or entry.get("isSidechain") or entry.get("isMeta"):
        return None
    kind, body = entry.get("type"), entry.get("message")
    if kind not in ("user", "assistant") or not isinstance(body, dict):
        return None
    content = body.get("content")
    if kind == "user" and isinstance(content, str):
        return Message.harness_prompt(content) if content.strip() else None
    if not isinstance(content, list):
        return None
    blocks = [block for part in content if (block := _block(part)) is not None]
    if not blocks:
        return None
    if kind == "assistant":
        # An error Claude Code wrote in the agent's place (Prompt is too long): not its words.
        return Message(Role.ASSISTANT, tuple(blocks), bool(entry.get("isApiErrorMessage")))
    prompt = all(isinstance(block, TextBlock) for block in blocks)
    return Message(Role.USER, tuple(blocks), from_harness=prompt)


def _block(part: Any) -> Block | None:
    if not isinstance(part, dict):
        return None
    match part.get("type"):
        case "text" if isinstance(part.get("text"), str):
            return TextBlock(part["text"])
        case "tool_use" if isinstance(part.get("id"), str):
            tool_input = part.get("input")
            return ToolCall(
                part["id"],
                str(part.get("name", "")),
                dict(tool_input) if isinstance(tool_input, dict) else {},
            )
        case "tool_result" if isinstance(part.get("tool_use_id"), str):
            content = part.get("content")
            if not isinstance(content, str | list):
                content = None
            elif isinstance(content, list):
                content = [c for c in content if isinstance(c, dict)]
            return ToolResult(
                part["tool_use_id"], flatten_content(content), bool(part.get("is_error"))
            )
    return None


def flatten_content(content: str | list[dict[str, Any]] | None) -> str:
    """A tool result's content as text: text parts joined, other parts named."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        else:
            parts.append(f"[{part.get('type', 'part')}]")
    return "\n".join(parts)
