"""Small builders for conversations, limits and request logs, shared by every tier."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mala_tui.config import Settings
from mala_tui.core.limits import Limits
from mala_tui.core.masking import placeholder
from mala_tui.core.prompts import PromptKind
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult, Transcript
from mala_tui.loopback import MODEL
from mala_tui.loopback.request_log import RequestRecord
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.run.session_limits import limits_from, runner_limits_from
from mala_tui.runtime.session.runner_limits import RunnerLimits


def default_limits(**changes: Any) -> Limits:
    """A manager's limits: the config's defaults for the loopback's model (a 200,000
    window), with these changes."""
    return replace(limits_from(Settings(), MODEL), **changes)


def with_notice(prompt: str) -> str:
    """A new agent session's first prompt as mala-tui sends it when it may mask: the
    prompt, then the shipped masking notice."""
    return f"{prompt}\n\n{load_prompts().render(PromptKind.MASKING_NOTICE)}"


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


def sample_session() -> Transcript:
    """A session's conversation with a masked result, a read, a write and a command in it."""
    read = ToolCall("r1", "Read", {"file_path": "/ws/src/app.py"})
    write = ToolCall("w1", "Write", {"file_path": "/ws/NOTES.md", "content": "n" * 4_000})
    bash = ToolCall("b1", "Bash", {"command": "pytest -q"})
    old = ToolCall("r0", "Read", {"file_path": "/ws/src/old.py"})
    old_result = ToolResult("r0", "o" * 40_000)
    return Transcript(
        [
            Message.user_text("p" * 400),
            Message(Role.ASSISTANT, (TextBlock("t" * 200), old)),
            Message(Role.USER, (ToolResult("r0", placeholder(old, old_result)),)),
            Message(Role.ASSISTANT, (read,)),
            result("r1", "a" * 8_000),
            Message(Role.ASSISTANT, (write,)),
            result("w1", "ok"),
            Message(Role.ASSISTANT, (bash,)),
            result("b1", "x" * 2_000),
            say("done"),
        ]
    )


def request_record(index: int, prompt: int, label: str | None, output: int = 40) -> RequestRecord:
    """One answered request of a model server's log, as a benchmark reads it."""
    return RequestRecord(
        index=index,
        route_request=index,
        time=float(index),
        route="r",
        scenario="s",
        session_id=None,
        stream=True,
        message_count=index,
        prompt_tokens=prompt,
        input_tokens=0,
        cache_creation_input_tokens=0,
        cache_read_input_tokens=0,
        output_tokens=output,
        masked_placeholders=0,
        step_id=None,
        step_label=label,
        redone=False,
        response_kind="tool_use" if label else "final",
        status=200,
        fault=None,
        error=None,
        window=1_000_000,
        done_steps=0,
    )
