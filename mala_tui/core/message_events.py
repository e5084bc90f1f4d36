"""Event-log lines for what the agent sent: messages (said, called, returned), compactions."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.observations import CompactionObserved
from mala_tui.core.text import excerpt
from mala_tui.core.transcript import Message, TextBlock, ToolCall, ToolResult


def message_events(at: float, session: str, message: Message) -> tuple[ev.MessageRecorded, ...]:
    """One line per tool call, tool result and non-empty text block, shortened."""
    role = message.role
    found: list[ev.MessageRecorded] = []
    for block in message.blocks:
        if isinstance(block, ToolCall):
            found.append(
                ev.MessageRecorded(
                    at=at,
                    session=session,
                    role=role,
                    kind="tool_call",
                    tool=block.name,
                    excerpt=excerpt(_describe_input(block)),
                )
            )
        elif isinstance(block, ToolResult):
            found.append(
                ev.MessageRecorded(
                    at=at,
                    session=session,
                    role=role,
                    kind="tool_result",
                    excerpt=excerpt(block.content),
                    size=len(block.content),
                    is_error=block.is_error,
                )
            )
        elif isinstance(block, TextBlock) and block.text.strip():
            found.append(
                ev.MessageRecorded(
                    at=at,
                    session=session,
                    role=role,
                    kind="text",
                    excerpt=excerpt(block.text),
                    size=len(block.text),
                )
            )
    return tuple(found)


def _describe_input(call: ToolCall) -> str:
    return ", ".join(f"{key}={value!s}" for key, value in call.input.items())


def compaction_event(name: str, obs: CompactionObserved) -> ev.CompactionSeen:
    """The CLI compacted, or tried to and was blocked."""
    return ev.CompactionSeen(
        at=obs.at,
        session=name,
        trigger=obs.trigger,
        blocked=obs.blocked,
        pre_tokens=obs.pre_tokens,
        post_tokens=obs.post_tokens,
    )
