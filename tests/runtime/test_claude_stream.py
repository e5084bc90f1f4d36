"""The Claude backend's reading of SDK messages into stream items (no CLI started)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from claude_agent_sdk import AssistantMessage, SystemMessage, TextBlock

from mala_tui.runtime.backends.base import ProblemItem, SessionIdItem, SessionSpec
from mala_tui.runtime.backends.claude import ClaudeClient


def client() -> ClaudeClient:
    return ClaudeClient(SessionSpec(name="s1", task="t", cwd=Path("/ws")), resume=None)


def test_the_clis_api_retries_become_log_lines() -> None:
    retry = SystemMessage(
        subtype="api_retry",
        data={
            "type": "system",
            "subtype": "api_retry",
            "attempt": 1,
            "max_retries": 2,
            "error_status": 529,
        },
    )
    assert client()._convert(retry) == [
        ProblemItem("api", "API call failed with 529; the CLI retries (attempt 1 of 2)")
    ]


def test_init_gives_the_session_id_and_subagent_messages_are_left_out() -> None:
    init = SystemMessage(subtype="init", data={"session_id": "abc"})
    assert client()._convert(init) == [SessionIdItem("abc")]
    sub = AssistantMessage(
        content=[TextBlock("from a subagent")], model="m", parent_tool_use_id="toolu_1"
    )
    assert client()._convert(sub) == []


def test_a_stop_asked_for_is_answered_once_at_the_next_main_thread_tool() -> None:
    c = client()
    assert asyncio.run(c._after_tool({"agent_id": "sub"}, None, {"signal": None})) == {}  # type: ignore[arg-type]
    assert c.stop_after_tools()
    assert asyncio.run(c._after_tool({"agent_id": "sub"}, None, {"signal": None})) == {}  # type: ignore[arg-type]
    stopped = asyncio.run(c._after_tool({}, None, {"signal": None}))  # type: ignore[arg-type]
    assert stopped["continue_"] is False
    assert asyncio.run(c._after_tool({}, None, {"signal": None})) == {}  # type: ignore[arg-type]


def test_a_stop_asked_for_as_a_turn_ended_does_not_stop_the_next_turn() -> None:
    c = client()
    sent: list[str] = []

    async def query(prompt: str) -> None:
        sent.append(prompt)

    c._client.query = query  # type: ignore[method-assign]
    assert c.stop_after_tools()
    asyncio.run(c.query("Wrap up."))
    assert sent == ["Wrap up."]
    assert asyncio.run(c._after_tool({}, None, {"signal": None})) == {}  # type: ignore[arg-type]
