"""Small builders for conversations and limits, shared by the core and runtime tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mala_tui.config import Settings
from mala_tui.core.limits import Limits
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult, Transcript
from mala_tui.runtime.session import RunnerLimits
from mala_tui.runtime.session_limits import limits_from, runner_limits_from


def default_limits(**changes: Any) -> Limits:
    """A manager's limits: the config's defaults, with these changes."""
    return replace(limits_from(Settings()), **changes)


def default_runner_limits(**changes: Any) -> RunnerLimits:
    """A runner's limits: the config's defaults, with these changes."""
    return replace(runner_limits_from(Settings()), **changes)


def call(tool_id: str, name: str = "Read", **tool_input: object) -> Message:
    if not tool_input:
        tool_input = {"file_path": f"/ws/src/{tool_id}.py"}
    return Message(
        Role.ASSISTANT, (TextBlock(f"Looking at {tool_id}."), ToolCall(tool_id, name, tool_input))
    )


def result(tool_id: str, content: str, *, is_error: bool = False) -> Message:
    return Message(Role.USER, (ToolResult(tool_id, content, is_error),))


def say(text: str) -> Message:
    return Message(Role.ASSISTANT, (TextBlock(text),))


def reads(count: int, size: int = 4000, prompt: str = "Fix the bug.") -> Transcript:
    """A prompt, then `count` Read cycles of `size` characters each."""
    transcript = Transcript([Message.user_text(prompt)])
    for index in range(count):
        tool_id = f"t{index:04d}"
        transcript.append(call(tool_id))
        transcript.append(result(tool_id, "\n".join(["x" * 79] * (size // 80))))
    return transcript
