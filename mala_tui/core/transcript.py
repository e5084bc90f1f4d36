"""The conversation as mala-tui sees it: messages, tool calls paired with results, cycles.

The model is deliberately smaller than the CLI's: enough to choose what to mask,
to build a checkpoint when the agent cannot, and to carry the last complete
interaction cycles into a fresh session without ever separating a tool call
from its result (the API refuses a tool result whose call is missing).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final

from mala_tui.core.text import flatten, shorten


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool the agent asked for: its id links it to its result."""

    id: str
    name: str
    input: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool gave back; `content` is flattened to text."""

    tool_use_id: str
    content: str
    is_error: bool = False


Block = TextBlock | ToolCall | ToolResult


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    blocks: tuple[Block, ...]
    from_harness: bool = False
    """Not the agent's work: a prompt mala-tui wrote (the task, a wind-down, a resume
    note...) or an error Claude Code put in the agent's place. Never carried into a
    fresh session, nor quoted in a checkpoint as the agent's words."""

    @classmethod
    def user_text(cls, text: str) -> Message:
        return cls(Role.USER, (TextBlock(text),))

    @classmethod
    def harness_prompt(cls, text: str) -> Message:
        return cls(Role.USER, (TextBlock(text),), from_harness=True)

    @property
    def text(self) -> str:
        return "\n".join(block.text for block in self.blocks if isinstance(block, TextBlock))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(block for block in self.blocks if isinstance(block, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(block for block in self.blocks if isinstance(block, ToolResult))

    @property
    def is_prompt(self) -> bool:
        """A user message that is not only tool results: a prompt starts a cycle."""
        return self.role is Role.USER and not all(
            isinstance(block, ToolResult) for block in self.blocks
        )

    @property
    def characters(self) -> int:
        total = 0
        for block in self.blocks:
            if isinstance(block, TextBlock):
                total += len(block.text)
            elif isinstance(block, ToolResult):
                total += len(block.content)
            else:
                total += len(block.name) + sum(len(str(v)) for v in block.input.values())
        return total


@dataclass(frozen=True, slots=True)
class ToolExchange:
    """A tool call and, once it has arrived, its result, with their positions."""

    call: ToolCall
    call_index: int
    result: ToolResult | None = None
    result_index: int | None = None


#: Primary argument shown for a tool call, by tool name (Claude Code's tool inputs).
PRIMARY_ARGUMENT: Final[Mapping[str, str]] = {
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Bash": "command",
    "Grep": "pattern",
    "Glob": "pattern",
    "WebFetch": "url",
    "WebSearch": "query",
    "Task": "description",
}

#: Tools whose calls change files: what a harness-made checkpoint lists as touched.
FILE_WRITING_TOOLS: Final = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})


def primary_argument(call: ToolCall) -> str:
    """The one argument that identifies a call to a reader, e.g. the path or the command."""
    key = PRIMARY_ARGUMENT.get(call.name)
    value = call.input.get(key) if key else None
    if value is None:
        for candidate in ("file_path", "path", "command", "pattern"):
            if candidate in call.input:
                value = call.input[candidate]
                break
    return "" if value is None else str(value)


def describe_call(call: ToolCall, limit: int = 160) -> str:
    """One line naming the tool and its primary argument, e.g. `Read src/app.py`."""
    argument = shorten(flatten(primary_argument(call)), limit)
    return f"{call.name} {argument}".rstrip()


class Transcript:
    """An append-only conversation with its tool calls indexed by id.

    Appending is O(blocks); masking replaces result contents in place of the
    messages (a new Message, same position), never removes one; a fold (core.fold)
    takes steps out, and the conversation is then replaced whole (`refold`).
    """

    __slots__ = ("_calls", "_characters", "_messages", "_open_calls", "_results", "revision")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.revision = 0
        """Bumped by every change: lets callers skip work on an unchanged conversation."""
        self._fill(messages)

    def _fill(self, messages: Iterable[Message]) -> None:
        self._messages: list[Message] = []
        self._calls: dict[str, int] = {}
        self._results: dict[str, int] = {}
        self._open_calls: set[str] = set()
        self._characters = 0
        for message in messages:
            self.append(message)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    @property
    def characters(self) -> int:
        """Total characters: the basis of the rough token estimate."""
        return self._characters

    @property
    def open_calls(self) -> frozenset[str]:
        """Tool calls still waiting for their results."""
        return frozenset(self._open_calls)

    def append(self, message: Message) -> None:
        index = len(self._messages)
        self.revision += 1
        self._messages.append(message)
        self._characters += message.characters
        for block in message.blocks:
            if isinstance(block, ToolCall):
                self._calls[block.id] = index
                self._open_calls.add(block.id)
            elif isinstance(block, ToolResult):
                self._results[block.tool_use_id] = index
                self._open_calls.discard(block.tool_use_id)

    def refold(self, messages: Iterable[Message]) -> None:
        """The conversation is now `messages`: what a fold left of it."""
        self._fill(messages)

    def has_result(self, tool_use_id: str) -> bool:
        return tool_use_id in self._results

    def first_prompt(self) -> str:
        for message in self._messages:
            if message.is_prompt and message.text.strip():
                return message.text
        return ""

    def exchanges(self) -> list[ToolExchange]:
        """Every tool call in order, paired with its result when there is one."""
        results: dict[str, tuple[ToolResult, int]] = {}
        calls: list[tuple[ToolCall, int]] = []
        for index, message in enumerate(self._messages):
            for block in message.blocks:
                if isinstance(block, ToolCall):
                    calls.append((block, index))
                elif isinstance(block, ToolResult):
                    results[block.tool_use_id] = (block, index)
        found = []
        for call, call_index in calls:
            result, result_index = results.get(call.id, (None, None))
            found.append(ToolExchange(call, call_index, result, result_index))
        return found

    def replace_results(self, contents: Mapping[str, str]) -> int:
        """Replace the content of the results with these ids; returns how many changed."""
        changed = 0
        by_message: dict[int, dict[str, str]] = {}
        for tool_use_id, text in contents.items():
            index = self._results.get(tool_use_id)
            if index is not None:
                by_message.setdefault(index, {})[tool_use_id] = text
        for index, replacements in by_message.items():
            old = self._messages[index]
            blocks: list[Block] = []
            for block in old.blocks:
                if isinstance(block, ToolResult) and block.tool_use_id in replacements:
                    new_text = replacements[block.tool_use_id]
                    if new_text != block.content:
                        changed += 1
                    blocks.append(replace(block, content=new_text))
                else:
                    blocks.append(block)
            new = Message(old.role, tuple(blocks), old.from_harness)
            self.revision += 1
            self._characters += new.characters - old.characters
            self._messages[index] = new
        return changed

    def cut_points(self) -> list[int]:
        """Indices where the conversation may be cut without separating a call from its result.

        Index i means "between message i-1 and message i"; 0 is always one. A cut
        never falls just after a prompt, which belongs with the response it asked
        for. A call whose result never came (an interrupted tool) stops blocking
        cuts once the agent has moved on; at the end of the conversation it is an
        unfinished step and no cut falls after it.
        """
        result_at = {
            block.tool_use_id: index
            for index, message in enumerate(self._messages)
            for block in message.blocks
            if isinstance(block, ToolResult)
        }
        count = len(self._messages)
        # For each message: the last index before the agent's next message, i.e. where
        # an unanswered call made here stops counting as open (never, at the end).
        moved_on_at = [count] * count
        next_assistant = count
        for index in range(count - 1, -1, -1):
            moved_on_at[index] = next_assistant - 1 if next_assistant < count else count
            if self._messages[index].role is Role.ASSISTANT:
                next_assistant = index
        points = [0]
        pending: dict[str, int] = {}
        for index, message in enumerate(self._messages):
            for call in message.tool_calls:
                pending[call.id] = result_at.get(call.id, moved_on_at[index])
            pending = {tool_id: until for tool_id, until in pending.items() if until > index}
            if not pending and not message.is_prompt:
                points.append(index + 1)
        return points

    def cycles(self) -> list[tuple[Message, ...]]:
        """Complete interaction cycles, oldest first; an unfinished tail is left out."""
        points = self.cut_points()
        return [
            tuple(self._messages[start:end])
            for start, end in itertools.pairwise(points)
            if end > start
        ]

    def carryover(self, turns: int, *, before: int | None = None) -> tuple[Message, ...]:
        """The agent's work in the last `turns` complete cycles; never splits a call from
        its result, and never includes mala-tui's own prompts.

        With `before`, only cycles that end at or before that message index count
        (the work before a wind-down, say, without the wind-down itself). A cycle's
        prompt from mala-tui (a resume note, the continuation prompt) is left out:
        carried into a fresh session it would tell the agent to wrap up again, or
        nest the previous checkpoint inside the next.
        """
        if turns <= 0:
            return ()
        limit = len(self._messages) if before is None else before
        cycles: list[tuple[Message, ...]] = []
        points = [point for point in self.cut_points() if point <= limit]
        for start, end in itertools.pairwise(points):
            if end > start:
                cycles.append(tuple(self._messages[start:end]))
        return tuple(
            message for cycle in cycles[-turns:] for message in cycle if not message.from_harness
        )


def render_messages(messages: Sequence[Message], *, result_chars: int = 600) -> str:
    """Plain text of some messages for a continuation prompt; long results are shortened."""
    lines: list[str] = []
    for message in messages:
        for block in message.blocks:
            if isinstance(block, TextBlock):
                text = block.text.strip()
                if text:
                    speaker = "Agent" if message.role is Role.ASSISTANT else "User"
                    lines.append(f"{speaker}: {text}")
            elif isinstance(block, ToolCall):
                lines.append(f"Tool call: {describe_call(block)}")
            else:
                content = block.content.strip()
                if len(content) > result_chars:
                    content = (
                        content[:result_chars]
                        + f"\n… ({len(block.content) - result_chars} more characters not shown)"
                    )
                status = "error" if block.is_error else "result"
                lines.append(f"Tool {status}:\n{content}" if content else f"Tool {status}: (empty)")
    return "\n".join(lines)
