"""Small builders for conversations, shared by the core tests."""

from __future__ import annotations

from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult, Transcript


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
