"""A subagent's window from the stream, and the hook's answer inside it (shapes observed
with the bundled CLI 2.1.330: tests/integration/test_subagent_wind_down.py runs it)."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import AssistantMessage, ToolUseBlock

from mala_tui.core import events as ev
from mala_tui.core.subagent_window import SubagentLimits
from mala_tui.runtime.backends.subagent_windows import SubagentWindows, replaced_output

LIMITS = SubagentLimits(window=200_000, soft_threshold=0.85, hard_threshold=0.95)
FILE: dict[str, Any] = {
    "filePath": "/w/a.py",
    "content": "x" * 80_000,
    "numLines": 9,
    "startLine": 1,
    "totalLines": 9,
}
READ: dict[str, Any] = {"type": "text", "file": FILE}
BASH = {
    "stdout": "y" * 80_000,
    "stderr": "e",
    "interrupted": False,
    "isImage": False,
    "noOutputExpected": False,
}


def call(parent: str, prompt: int, tool_use: str) -> AssistantMessage:
    return AssistantMessage(
        content=[ToolUseBlock(id=tool_use, name="Read", input={})],
        model="claude-sonnet-4-5",
        parent_tool_use_id=parent,
        usage={"input_tokens": 10, "cache_read_input_tokens": prompt - 10, "output_tokens": 1},
        message_id=f"m-{tool_use}",
    )


def after(tool: str, response: object, tool_use: str, agent: str = "ag1") -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "agent_id": agent,
        "agent_type": "general-purpose",
        "tool_name": tool,
        "tool_input": {},
        "tool_response": response,
        "tool_use_id": tool_use,
    }


def test_read_and_bash_results_are_replaced_in_their_own_shape_and_others_not() -> None:
    read = replaced_output("Read", READ, "gone")
    assert read == {**READ, "file": {**FILE, "content": "gone"}}
    assert FILE["content"] == "x" * 80_000, "the hook's input is left as it was"
    assert replaced_output("Bash", BASH, "gone") == {**BASH, "stdout": "gone", "stderr": ""}
    # Shapes not checked against the CLI would be ignored by it: not tried.
    assert replaced_output("Grep", {"content": "z" * 10}, "gone") is None
    assert replaced_output("Read", {"type": "image", "file": {}}, "gone") is None
    assert replaced_output("Read", "plain text", "gone") is None


def test_the_asking_calls_prompt_decides_then_the_subagents_latest_stands_in() -> None:
    windows = SubagentWindows("s1", LIMITS, lambda: 5.0)
    windows.seen(call("agent-call-1", 150_000, "tu1"))
    # 150,000 + 80,000 chars of JSON / 4 > 170,000: told to wind down, with the result.
    output, events = windows.after_tool(after("Read", READ, "tu1"))
    assert "Wrap up now" in output["hookSpecificOutput"]["additionalContext"]
    assert "updatedToolOutput" not in output["hookSpecificOutput"]
    (wound,) = events
    assert isinstance(wound, ev.SubagentWoundDown)
    assert (wound.session, wound.agent_id, wound.tokens, wound.window) == (
        "s1",
        "ag1",
        150_000,
        200_000,
    )
    # Once only: the next result that fits says nothing.
    windows.seen(call("agent-call-1", 172_000, "tu2"))
    assert windows.after_tool(after("Read", {"type": "text", "file": {"content": "s"}}, "tu2")) == (
        {},
        [],
    )
    # The call that asked for tu3 not read yet: its latest known (172,000) stands in, and
    # 172,000 + 20,000 is past 190,000: the Bash output is withheld.
    output, events = windows.after_tool(after("Bash", BASH, "tu3"))
    replaced = output["hookSpecificOutput"]["updatedToolOutput"]
    assert replaced["stdout"].startswith("[mala-tui withheld this Bash result")
    (kept,) = events
    assert isinstance(kept, ev.SubagentResultWithheld) and kept.tokens == 172_000


def test_a_result_too_big_from_a_tool_whose_shape_is_unknown_winds_the_subagent_down() -> None:
    windows = SubagentWindows("s1", LIMITS, lambda: 5.0)
    output, events = windows.after_tool(after("Grep", {"content": "z" * 900_000}, "tu9", "nested"))
    assert "additionalContext" in output["hookSpecificOutput"]
    assert [type(e) for e in events] == [ev.SubagentWoundDown]
    # A failed tool's error can only be answered with context, never replaced.
    failure = {
        "hook_event_name": "PostToolUseFailure",
        "agent_id": "b",
        "tool_name": "Bash",
        "tool_input": {},
        "tool_use_id": "tu8",
        "error": "e" * 900_000,
    }
    output, events = windows.after_tool(failure)
    assert output["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    assert [type(e) for e in events] == [ev.SubagentWoundDown]
