"""What a session host sends its driver, and back: batches of events, and the questions.

A session host (runtime.cluster.session_host) runs one session away from the driver, the
process that writes the run's journal. What it sends goes in batches, never one
event at a time (one event a message tops out near 2,000 events a second; batches of
dozens reach tens of thousands):

- the session's events, as journal lines, numbered by their position in the host's
  outbox, so a driver that reconnects asks for what follows the last one it wrote;
- the session's transcript as the host's manager holds it, as deltas (redacted, long
  blocks shortened): what the driver builds a checkpoint from when the host is lost;
- the questions the session waits on, which the driver's desk puts to a person or a
  rule (runtime.questions.desk): a restart approval, a permission request, or one withdrawn;
- once, at the end, how the session ended.

Everything here is plain data that pickles across processes and hosts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mala_tui.core.actions import EndStatus
from mala_tui.core.transcript import Block, Message, Role, TextBlock, ToolCall, ToolResult
from mala_tui.runtime.private.redaction import redact

#: Longest text of one block a host sends for the driver's copy of the transcript: a
#: checkpoint built from it quotes a few hundred characters of each step at most.
BLOCK_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class ApprovalAsk:
    """The session waits for a restart approval of this checkpoint."""

    number: int


@dataclass(frozen=True, slots=True)
class PermissionAskWire:
    """The agent waits for permission to use a tool outside its allowed tools."""

    key: int
    """The host's number for it (the answer names it)."""
    tool_use_id: str
    tool: str
    tool_input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PermissionWithdrawn:
    """The agent stopped waiting for that permission (its turn or process ended)."""

    key: int


Ask = ApprovalAsk | PermissionAskWire | PermissionWithdrawn


@dataclass(frozen=True, slots=True)
class HostEnd:
    """How the session ended on its host."""

    status: EndStatus
    reason: str
    pids: tuple[int, ...] = ()
    """Every agent process the host started for it."""
    sent: int = 0
    """How many events the host produced in all: the driver checks it journaled as many."""


@dataclass(frozen=True, slots=True)
class Batch:
    first: int
    """The outbox position of `events[0]` (positions start at 1); with no events, the
    position after the last one sent."""
    events: tuple[str, ...] = ()
    """Each a journal line (`core.events.event_json`), in order."""
    transcript_reset: bool = False
    """The host's transcript starts afresh before `messages` (a restart, or the first
    batch of a connection, which carries the whole of it)."""
    messages: tuple[dict[str, Any], ...] = ()
    """Transcript messages appended since the last batch (`message_json`)."""
    asks: tuple[Ask, ...] = ()
    """Questions asked, or withdrawn, since the last batch (on a new connection: every
    one still waiting)."""
    end: HostEnd | None = None
    """Set on the last batch: the session is over and nothing follows."""
    pids: tuple[int, ...] = field(default=())
    """Agent processes the host has started so far (every batch: the driver's count)."""

    @property
    def last(self) -> int:
        """The outbox position of the last event in this batch (`first - 1` if none)."""
        return self.first + len(self.events) - 1


def _short(text: str) -> str:
    text = redact(text)
    if len(text) <= BLOCK_CHARS:
        return text
    return text[:BLOCK_CHARS] + f"\n[{len(text) - BLOCK_CHARS} characters left out]"


def _value(value: object) -> object:
    """A tool input's value as sent: strings shortened and redacted, the rest as it is."""
    if isinstance(value, str):
        return _short(value)
    if isinstance(value, Mapping):
        return {str(key): _value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_value(item) for item in value]
    return value


def message_json(message: Message) -> dict[str, Any]:
    """A transcript message as the host sends it: redacted, each block shortened."""
    blocks: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            blocks.append({"text": _short(block.text)})
        elif isinstance(block, ToolCall):
            blocks.append({"call": block.id, "name": block.name, "input": _value(block.input)})
        else:
            content, error = _short(block.content), block.is_error
            blocks.append({"result": block.tool_use_id, "content": content, "error": error})
    return {"role": message.role.value, "harness": message.from_harness, "blocks": blocks}


def message_from_json(data: Mapping[str, Any]) -> Message:
    """The message `message_json` made (a block of a shape it does not know is left out)."""
    blocks: list[Block] = []
    for raw in data.get("blocks", ()):
        if "text" in raw:
            blocks.append(TextBlock(str(raw["text"])))
        elif "call" in raw:
            blocks.append(ToolCall(str(raw["call"]), str(raw["name"]), dict(raw.get("input", {}))))
        elif "result" in raw:
            blocks.append(
                ToolResult(str(raw["result"]), str(raw["content"]), bool(raw.get("error")))
            )
    return Message(Role(data["role"]), tuple(blocks), from_harness=bool(data.get("harness")))
