"""The Claude backend's reading of SDK messages into stream items (no CLI started)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, TextBlock

from mala_tui.core import events as ev
from mala_tui.core.observations import ApiRetrying, SessionIdentified, TurnEnded
from mala_tui.runtime.backends.base import ActivityItem, ProblemItem, SessionSpec
from mala_tui.runtime.backends.claude import ClaudeClient


def client() -> ClaudeClient:
    """A client whose observations are all timed 0 (as the expected ones are written)."""
    return ClaudeClient(
        SessionSpec(name="s1", task="t", cwd=Path("/ws")), resume=None, clock=lambda: 0.0
    )


def test_the_clis_api_retries_say_the_status_and_the_kind_of_error() -> None:
    retry = SystemMessage(
        subtype="api_retry",
        data={
            "type": "system",
            "subtype": "api_retry",
            "attempt": 1,
            "max_retries": 2,
            "error_status": 401,
            "error": "authentication_failed",
        },
    )
    (item,) = client()._convert(retry)
    assert item == ApiRetrying(0, status=401, error="authentication_failed", attempt=1, of=2)
    assert isinstance(item, ApiRetrying)
    assert item.line == (
        "API call failed with 401 (authentication_failed); the CLI retries (attempt 1 of 2)"
    )
    closed = SystemMessage(subtype="api_retry", data={"error_status": None, "error": "unknown"})
    (item,) = client()._convert(closed)
    assert isinstance(item, ApiRetrying)
    assert (item.status, item.line) == (None, "API call failed (unknown); the CLI retries")


def test_a_failed_turn_carries_the_kind_of_error_claude_code_wrote_in_its_place() -> None:
    c = client()
    said = AssistantMessage(
        content=[TextBlock("Not logged in · Please run /login")],
        model="<synthetic>",
        error="authentication_failed",
    )
    c._convert(said)
    (result,) = c._convert(
        ResultMessage(
            subtype="success",
            duration_ms=1,
            duration_api_ms=0,
            is_error=True,
            num_turns=1,
            session_id="s",
            result="Not logged in · Please run /login",
        )
    )
    assert isinstance(result, TurnEnded)
    assert (result.api_error_kind, result.result_text) == (
        "authentication_failed",
        "Not logged in · Please run /login",
    )
    (next_result,) = c._convert(
        ResultMessage(
            subtype="success",
            duration_ms=1,
            duration_api_ms=0,
            is_error=False,
            num_turns=1,
            session_id="s",
        )
    )
    assert isinstance(next_result, TurnEnded) and next_result.api_error_kind is None


def test_init_gives_the_session_id_and_subagent_messages_are_only_signs_of_life() -> None:
    init = SystemMessage(subtype="init", data={"session_id": "abc"})
    assert client()._convert(init) == [SessionIdentified(0, "abc")]
    sub = AssistantMessage(
        content=[TextBlock("from a subagent")], model="m", parent_tool_use_id="toolu_1"
    )
    assert client()._convert(sub) == [ActivityItem("subagent")]


def test_a_stop_asked_for_is_answered_once_at_the_next_main_thread_tool() -> None:
    c = client()
    assert asyncio.run(c._after_tool({"agent_id": "sub"}, None, {"signal": None})) == {}  # type: ignore[arg-type]
    assert c.stop_after_tools()
    assert asyncio.run(c._after_tool({"agent_id": "sub"}, None, {"signal": None})) == {}  # type: ignore[arg-type]
    stopped = asyncio.run(c._after_tool({}, None, {"signal": None}))  # type: ignore[arg-type]
    assert stopped == {"continue_": False, "stopReason": "mala-tui is managing the context window"}
    assert asyncio.run(c._after_tool({}, None, {"signal": None})) == {}  # type: ignore[arg-type]


def test_a_stop_asked_for_as_a_turn_ended_does_not_stop_the_next_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    c = client()
    sent: list[str] = []

    async def query(prompt: str) -> None:
        sent.append(prompt)

    monkeypatch.setattr(c._client, "query", query)
    assert c.stop_after_tools()
    asyncio.run(c.query("Wrap up."))
    assert sent == ["Wrap up."]
    assert asyncio.run(c._after_tool({}, None, {"signal": None})) == {}  # type: ignore[arg-type]


def hook_input(**fields: object) -> dict[str, object]:
    """A PostToolUse hook's input as the CLI sends it (only the fields the hook reads)."""
    return {"hook_event_name": "PostToolUse", "tool_use_id": "toolu_1", **fields}


def test_the_post_tool_hook_asks_the_gate_and_stops_when_it_says_so() -> None:
    c = client()
    asked: list[tuple[str, str, int]] = []

    def gate(tool_id: str, tool: str, size: int) -> bool:
        asked.append((tool_id, tool, size))
        return size > 100

    c.set_tool_gate(gate)
    small = {"stdout": "ok", "stderr": "", "interrupted": False}
    large = {"stdout": "x" * 200, "stderr": "", "interrupted": False}
    after = c._after_tool
    # The hook inputs carry only the fields the hook reads, not a whole PostToolUseHookInput.
    ok = hook_input(tool_name="Bash", tool_response=small)
    assert asyncio.run(after(ok, "toolu_1", {"signal": None})) == {}  # type: ignore[arg-type]
    big = hook_input(tool_name="Bash", tool_response=large)
    stopped = asyncio.run(after(big, "toolu_2", {"signal": None}))  # type: ignore[arg-type]
    assert stopped == {"continue_": False, "stopReason": "mala-tui is managing the context window"}
    assert asked == [
        ("toolu_1", "Bash", len(json.dumps(small))),
        ("toolu_2", "Bash", len(json.dumps(large))),
    ]
    # A subagent's tool is not the main conversation's clean point: the gate is not asked.
    sub = hook_input(tool_name="Read", tool_response=large, agent_id="sub")
    assert asyncio.run(after(sub, "toolu_3", {"signal": None})) == {}  # type: ignore[arg-type]
    assert len(asked) == 2


def test_a_failing_gate_or_an_odd_response_does_not_break_the_hook() -> None:
    c = client()
    sizes: list[int] = []

    def gate(tool_id: str, tool: str, size: int) -> bool:
        sizes.append(size)
        return False

    c.set_tool_gate(gate)
    circular: dict[str, object] = {}
    circular["self"] = circular
    odd = hook_input(tool_name="Read", tool_response={"when": object(), "loop": circular})
    assert asyncio.run(c._after_tool(odd, "toolu_1", {"signal": None})) == {}  # type: ignore[arg-type]
    assert sizes and sizes[0] > 0

    def broken(tool_id: str, tool: str, size: int) -> bool:
        raise RuntimeError("the projection broke")

    c.set_tool_gate(broken)
    plain = hook_input(tool_name="Read", tool_response="text")
    assert asyncio.run(c._after_tool(plain, "toolu_2", {"signal": None})) == {}  # type: ignore[arg-type]
    (problem,) = [c._side.get_nowait() for _ in range(c._side.qsize())]
    assert problem == ProblemItem(
        ev.Where.HOOK, "the tool gate failed: RuntimeError('the projection broke')"
    )
    # A stop asked for by the runner still takes, gate or no gate.
    assert c.stop_after_tools()
    assert asyncio.run(c._after_tool(plain, "toolu_3", {"signal": None}))["continue_"] is False  # type: ignore[arg-type,typeddict-item]


def test_the_model_an_answer_names_is_said_before_its_usage_and_once() -> None:
    from claude_agent_sdk import StreamEvent

    from mala_tui.core.observations import UsageObserved
    from mala_tui.runtime.backends.base import ModelItem

    def start(message_id: str, model: str) -> StreamEvent:
        body = {"id": message_id, "model": model, "usage": {"input_tokens": 10}}
        return StreamEvent(
            uuid=message_id, session_id="s", event={"type": "message_start", "message": body}
        )

    c = client()
    first = c._convert(start("m1", "claude-opus-5-5"))
    assert [type(item) for item in first] == [ModelItem, UsageObserved]
    assert first[0] == ModelItem("claude-opus-5-5")
    assert [type(item) for item in c._convert(start("m2", "claude-opus-5-5"))] == [UsageObserved]
    assert c._convert(start("m3", "claude-haiku-5-5"))[0] == ModelItem("claude-haiku-5-5")
    synthetic = AssistantMessage(
        content=[TextBlock("Prompt is too long")],
        model="<synthetic>",
        message_id="m4",
        usage={"input_tokens": 0},
        error="invalid_request",
    )
    assert not [item for item in c._convert(synthetic) if isinstance(item, ModelItem)]


def test_each_observation_is_timed_by_the_clock_the_client_was_made_with() -> None:
    times = iter([41.0, 42.0])
    timed = ClaudeClient(
        SessionSpec(name="s1", task="t", cwd=Path("/ws")), resume=None, clock=lambda: next(times)
    )
    init = SystemMessage(subtype="init", data={"session_id": "abc"})
    assert timed._convert(init) == [SessionIdentified(41.0, "abc")]
    assert timed._convert(init) == [SessionIdentified(42.0, "abc")]


def test_model_usage_is_summed_over_models_or_not_said_at_all() -> None:
    from mala_tui.runtime.backends.claude_stream import model_usage_totals

    one = {"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3}
    both = {
        "m1": {**one, "cacheCreationInputTokens": 4},
        "m2": {**one, "cacheCreationInputTokens": 0},
    }
    assert model_usage_totals(both) == {
        "input_tokens": 2,
        "cache_creation_input_tokens": 4,
        "cache_read_input_tokens": 6,
        "output_tokens": 4,
    }
    assert model_usage_totals({"m1": one}) == {}  # a count missing: no wrong sum
    assert model_usage_totals({"m1": {**one, "cacheCreationInputTokens": "4"}}) == {}
    assert model_usage_totals(None) == {}
