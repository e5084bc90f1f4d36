"""What a scripted agent can see in one Messages API request, pulled out of the raw body.

Everything the agent decides comes from here, as a real model decides only from its
prompt: the tool calls in the conversation with their results (intact, masked or failed),
the user texts (the task, checkpoints, continuation and compaction prompts), and the
working directory the CLI states in its environment block.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from mala_tui.loopback.scenario_steps import SUBAGENT_TAG
from mala_tui.loopback.tokens import tool_result_text

MASKED_PLACEHOLDER = re.compile(r"^\[(\w+) result masked -- (.*)\]$", re.MULTILINE)
# What the API's server-side tool-result clearing (clear_tool_uses_20250919) leaves.
CLEARED_PLACEHOLDER = "[Old tool result content cleared]"
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
# The CLI states its cwd in an environment block, in the first user message in current
# versions ("Primary working directory: /x") and in the system prompt in older ones.
_WORKING_DIRECTORY = re.compile(r"(?:Primary working directory|Working directory):\s*(/[^\n<]*)")
_CLOSING_TAGS = re.compile(r"(?:</[A-Za-z][\w-]*>\s*)+$")
_FILE_TOOLS = frozenset({"Read", "Write", "Edit", "NotebookEdit"})
# What the CLI puts in the result of a tool call it did not run because the turn was interrupted.
_REJECTED_PREFIXES = ("The user doesn't want to proceed with this tool use", "[Request interrupted")


@dataclass(frozen=True)
class RequestedCall:
    """A tool_use in an assistant message, with its result if the request carries one."""

    message_index: int
    id: str
    name: str
    input: Mapping[str, Any]
    result_text: str | None
    result_is_error: bool
    result_masked: bool

    @property
    def result_cleared(self) -> bool:
        """The API's tool-result clearing replaced the result with its placeholder."""
        return (self.result_text or "").strip() == CLEARED_PLACEHOLDER

    @property
    def result_intact(self) -> bool:
        """Its result is here in full: present, not an error, not masked, not cleared."""
        return self.succeeded and not self.result_masked and not self.result_cleared

    @property
    def succeeded(self) -> bool:
        """Its result is present and not an error (a masked result counts as present)."""
        return self.result_text is not None and not self.result_is_error

    @property
    def rejected(self) -> bool:
        """The call never ran: the turn was interrupted and the CLI answered it with a refusal."""
        text = self.result_text or ""
        return self.result_is_error and text.startswith(_REJECTED_PREFIXES)

    @property
    def failed(self) -> bool:
        """It ran and went wrong (an interrupted call did not run: it is not a failure)."""
        return self.result_is_error and not self.rejected

    @property
    def found_nothing(self) -> bool:
        """A Read of a file that does not exist: nothing to read, so a Write may go ahead."""
        return self.result_is_error and "does not exist" in (self.result_text or "")[:200]


@dataclass(frozen=True)
class UserText:
    """The text blocks of one user message (tool results excluded)."""

    message_index: int
    text: str
    """Everything, system reminders included."""
    own_text: str
    """With ``<system-reminder>`` blocks removed: what a person or harness typed."""


@dataclass(frozen=True)
class RequestView:
    """One request as the scripted agent reads it."""

    model: str
    stream: bool
    message_count: int
    workspace: Path | None
    calls: tuple[RequestedCall, ...]
    user_texts: tuple[UserText, ...]
    last_message_role: str
    masked_placeholders: int
    session_id: str | None
    assistant_texts: tuple[str, ...] = ()
    """Text the assistant wrote, and the inputs of its tool calls, as JSON."""

    def shows(self, fragment: str) -> bool:
        """Whether ``fragment`` is visible anywhere in the conversation: a tool result, a
        user text (summaries, checkpoints, the CLI's reminders) or the assistant's own words."""
        return (
            any(fragment in (call.result_text or "") for call in self.calls)
            or any(fragment in entry.text for entry in self.user_texts)
            or any(fragment in text for text in self.assistant_texts)
        )

    @property
    def latest_user_text(self) -> UserText | None:
        """The most recent user message that has text of its own (not only tool results)."""
        for entry in reversed(self.user_texts):
            if entry.own_text.strip():
                return entry
        return None

    @property
    def final_user_text(self) -> str:
        """The own text of the request's last message, if that is a user message."""
        if self.last_message_role != "user" or not self.user_texts:
            return ""
        last = self.user_texts[-1]
        return last.own_text if last.message_index == self.message_count - 1 else ""

    def relative_path(self, value: str) -> str:
        """A tool's path argument relative to the workspace, in posix form."""
        path = PurePosixPath(value)
        if path.is_absolute() and self.workspace is not None:
            try:
                return str(path.relative_to(PurePosixPath(str(self.workspace))))
            except ValueError:
                return str(path)
        return str(PurePosixPath(*[part for part in path.parts if part != "."]))

    def primary_argument(self, call: RequestedCall) -> str:
        """The argument that identifies a call: path, command, pattern, or for an Agent
        call the subagent its prompt names (``[subagent NAME]``)."""
        if call.name in _FILE_TOOLS:
            return self.relative_path(str(call.input.get("file_path", "")))
        if call.name == "Bash":
            return str(call.input.get("command", ""))
        if call.name == "Agent":
            return subagent_named(str(call.input.get("prompt", ""))) or ""
        return str(call.input.get("pattern", ""))

    def line_from(self, fragment: str) -> str | None:
        """The first line of the conversation holding ``fragment`` (a subagent's report
        marker), from the fragment to the line's end; None when it is nowhere.

        Tool results come first (a foreground subagent's report is its call's result),
        then user texts (a background one's arrives in a task notification); the
        assistant's own words are not looked in: they report nothing.
        """
        texts = [call.result_text or "" for call in self.calls]
        texts += [entry.text for entry in self.user_texts]
        for text in texts:
            start = text.find(fragment)
            if start >= 0:
                end = text.find("\n", start)
                line = text[start : end if end >= 0 else len(text)]
                # A task notification wraps the report: <result>REPORT A: ...</result>.
                return _CLOSING_TAGS.sub("", line).rstrip()
        return None

    @property
    def first_user_text(self) -> str:
        """All the text of the conversation's first message, if it is the user's."""
        if self.user_texts and self.user_texts[0].message_index == 0:
            return self.user_texts[0].text
        return ""


def subagent_named(text: str) -> str | None:
    """The subagent a prompt names with its ``[subagent NAME]`` tag, if any."""
    match = SUBAGENT_TAG.search(text)
    return match.group(1) if match else None


def session_id_of(body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """The client's session id: a Claude Code header, or its metadata's ``user_id``."""
    for name, value in headers.items():
        if name.lower() == "x-claude-code-session-id" and value:
            return value
    # Also carried in metadata.user_id, a JSON string: {"session_id": ...}.
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    if isinstance(user_id, str):
        try:
            decoded = json.loads(user_id)
        except json.JSONDecodeError:
            return None
        if isinstance(decoded, Mapping) and isinstance(decoded.get("session_id"), str):
            return str(decoded["session_id"])
    return None


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _find_workspace(body: Mapping[str, Any]) -> Path | None:
    texts: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts.extend(str(block.get("text", "")) for block in system if isinstance(block, Mapping))
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for block in content:
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "text":
                    texts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    # After its own compaction the CLI restates the environment block
                    # as a system reminder inside the first tool result, not as text.
                    texts.append(_result_text(block.get("content")))
        if len(texts) > 64:
            break
    for text in texts:
        match = _WORKING_DIRECTORY.search(text)
        if match:
            return Path(match.group(1).strip())
    return None


def _strings(value: object) -> list[str]:
    """Every string inside a tool call's input (a Write's content, an Edit's new text)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def parse_request(body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> RequestView:
    """Read a request body (and its headers, for the session id) into a RequestView."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    results: dict[str, tuple[str, bool, bool]] = {}
    user_texts: list[UserText] = []
    masked = 0
    pending: list[tuple[int, Mapping[str, Any]]] = []
    assistant_texts: list[str] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks: list[Mapping[str, Any]] = (
            [{"type": "text", "text": content}]
            if isinstance(content, str)
            else [b for b in content or [] if isinstance(b, Mapping)]
        )
        if message.get("role") == "assistant":
            pending.extend((index, b) for b in blocks if b.get("type") == "tool_use")
            for b in blocks:
                if b.get("type") == "text":
                    assistant_texts.append(str(b.get("text", "")))
                elif b.get("type") == "tool_use":
                    assistant_texts.extend(_strings(b.get("input")))
            continue
        texts: list[str] = []
        for block in blocks:
            if block.get("type") == "tool_result":
                text = tool_result_text(block.get("content"))
                found = len(MASKED_PLACEHOLDER.findall(text))
                masked += found
                results[str(block.get("tool_use_id"))] = (
                    text,
                    bool(block.get("is_error")),
                    found > 0,
                )
            elif block.get("type") == "text":
                texts.append(str(block.get("text", "")))
        if texts:
            joined = "\n".join(texts)
            user_texts.append(UserText(index, joined, _SYSTEM_REMINDER.sub("", joined)))
    calls = []
    for index, block in pending:
        call_id = str(block.get("id", ""))
        result = results.get(call_id)
        raw_input = block.get("input")
        calls.append(
            RequestedCall(
                message_index=index,
                id=call_id,
                name=str(block.get("name", "")),
                input=raw_input if isinstance(raw_input, Mapping) else {},
                result_text=result[0] if result else None,
                result_is_error=result[1] if result else False,
                result_masked=result[2] if result else False,
            )
        )
    return RequestView(
        model=str(body.get("model", "")),
        stream=bool(body.get("stream", False)),
        message_count=len(messages),
        workspace=_find_workspace(body),
        calls=tuple(calls),
        user_texts=tuple(user_texts),
        last_message_role=str(messages[-1].get("role", "")) if messages else "",
        masked_placeholders=masked,
        session_id=session_id_of(body, headers or {}),
        assistant_texts=tuple(assistant_texts),
    )
