"""The API's server-side tool-result clearing (``clear_tool_uses_20250919``), simulated.

With context editing the API rewrites each request before the model sees it; the client
keeps its full, unedited conversation and sends it whole every time. When the request's
input is above the trigger (100,000 tokens by default), every tool result but those of the
newest ``keep`` tool uses (3 by default) is replaced by a placeholder, oldest first; the
tool calls themselves stay. A cleared block changes the prompt from that block on, so the
cached prefix is good only up to the first cleared block: the server bills it that way.

The edit comes from the server (a benchmark arm that stands for an SDK user who turned it
on) or from the request's own ``context_management`` field, which wins when present.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mala_tui.loopback.request_view import CLEARED_PLACEHOLDER
from mala_tui.loopback.tokens import PromptBlock, tool_result_text

EDIT_TYPE = "clear_tool_uses_20250919"
DEFAULT_TRIGGER_INPUT_TOKENS = 100_000
DEFAULT_KEEP_TOOL_USES = 3


@dataclass(frozen=True)
class ClearToolUses:
    """One ``clear_tool_uses_20250919`` edit; the defaults are the API's documented ones."""

    trigger_input_tokens: int = DEFAULT_TRIGGER_INPUT_TOKENS
    keep_tool_uses: int = DEFAULT_KEEP_TOOL_USES
    clear_at_least_tokens: int = 0
    exclude_tools: tuple[str, ...] = ()
    trigger_tool_uses: int | None = None
    """A trigger of ``{"type": "tool_uses"}``: more tool uses than this; replaces the token one."""

    def __post_init__(self) -> None:
        if self.trigger_input_tokens < 1 or (
            self.trigger_tool_uses is not None and self.trigger_tool_uses < 1
        ):
            raise ValueError("clear_tool_uses: the trigger must be at least 1")
        if self.keep_tool_uses < 0 or self.clear_at_least_tokens < 0:
            raise ValueError("clear_tool_uses: keep and clear_at_least cannot be negative")

    @classmethod
    def from_request(cls, body: Mapping[str, Any]) -> ClearToolUses | None:
        """The edit a request asks for in ``context_management.edits``, if any."""
        management = body.get("context_management")
        edits = management.get("edits") if isinstance(management, Mapping) else None
        for edit in edits if isinstance(edits, list) else []:
            if not isinstance(edit, Mapping) or edit.get("type") != EDIT_TYPE:
                continue
            trigger = edit.get("trigger")
            by_uses = isinstance(trigger, Mapping) and trigger.get("type") == "tool_uses"
            return cls(
                trigger_input_tokens=(
                    DEFAULT_TRIGGER_INPUT_TOKENS
                    if by_uses
                    else _value(trigger, DEFAULT_TRIGGER_INPUT_TOKENS)
                ),
                trigger_tool_uses=_value(trigger, 1) if by_uses else None,
                keep_tool_uses=_value(edit.get("keep"), DEFAULT_KEEP_TOOL_USES),
                clear_at_least_tokens=_value(edit.get("clear_at_least"), 0),
                exclude_tools=tuple(str(name) for name in edit.get("exclude_tools") or ()),
            )
        return None


def _value(spec: Any, default: int) -> int:
    if isinstance(spec, Mapping) and isinstance(spec.get("value"), int):
        return int(spec["value"])
    return default


@dataclass(frozen=True)
class Cleared:
    """A request after the edit: the body the model sees and what was cleared."""

    body: Mapping[str, Any]
    cleared_results: int


def clear_tool_results(
    edit: ClearToolUses,
    body: Mapping[str, Any],
    input_tokens: int,
    tokens_of: Callable[[str], int],
) -> Cleared:
    """Apply ``edit`` to ``body`` whose whole prompt is ``input_tokens``.

    ``tokens_of(text)`` counts a result's tokens (for ``clear_at_least``). The body is
    copied where it changes; the caller's body is left alone.
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return Cleared(body, 0)
    if edit.trigger_tool_uses is not None:
        if len(_tool_names(messages)) <= edit.trigger_tool_uses:
            return Cleared(body, 0)
    elif input_tokens <= edit.trigger_input_tokens:
        return Cleared(body, 0)
    names = _tool_names(messages)
    places: list[tuple[int, int]] = []
    for m_index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for b_index, block in enumerate(content):
            is_result = isinstance(block, Mapping) and block.get("type") == "tool_result"
            if is_result and names.get(str(block.get("tool_use_id"))) not in edit.exclude_tools:
                places.append((m_index, b_index))
    older = places[: max(0, len(places) - edit.keep_tool_uses)]
    targets = [place for place in older if not _is_cleared(messages, place)]
    if not targets:
        return Cleared(body, 0)
    if edit.clear_at_least_tokens:
        freed = sum(tokens_of(_result_text(messages, place)) for place in targets)
        if freed < edit.clear_at_least_tokens:
            return Cleared(body, 0)
    edited = [
        {**message, "content": list(message["content"])}
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        else message
        for message in messages
    ]
    for m_index, b_index in targets:
        block = dict(edited[m_index]["content"][b_index])
        block["content"] = CLEARED_PLACEHOLDER
        edited[m_index]["content"][b_index] = block
    return Cleared({**body, "messages": edited}, len(targets))


def first_changed_block(before: Sequence[PromptBlock], after: Sequence[PromptBlock]) -> int | None:
    """Index of the first block that differs between two cuts of the same request."""
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old.digest != new.digest:
            return index
    return None


def _tool_names(messages: list[Any]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
    return names


def _result_text(messages: list[Any], place: tuple[int, int]) -> str:
    return tool_result_text(messages[place[0]]["content"][place[1]].get("content"))


def _is_cleared(messages: list[Any], place: tuple[int, int]) -> bool:
    return _result_text(messages, place).strip() == CLEARED_PLACEHOLDER
