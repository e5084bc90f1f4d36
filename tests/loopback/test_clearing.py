"""The API's tool-result clearing (clear_tool_uses_20250919) as the loopback applies it."""

from __future__ import annotations

from typing import Any, TypedDict

import aiohttp
import pytest

from mala_tui.loopback import LoopbackServer, Scenario
from mala_tui.loopback.clearing import ClearToolUses, clear_tool_results
from mala_tui.loopback.request_view import CLEARED_PLACEHOLDER
from mala_tui.loopback.tokens import prompt_blocks, prompt_tokens, text_tokens
from tests.loopback.loopback_bodies import Conversation

SCENARIO = Scenario.model_validate(
    {
        "name": "clearing",
        "task": "Read six files.",
        "final_answer": "Read.",
        "steps": [{"tool": "Read", "path": "f{i}.txt", "count": 8}],
    }
)
RESULT = "r" * 120_000  # 30,000 tokens at 1x


def six_reads() -> Conversation:
    talk = Conversation(SCENARIO.task)
    for i in range(1, 7):
        talk.call("Read", {"file_path": f"/work/ws/f{i}.txt"}, result=f"{i}:" + RESULT)
    return talk


def results(body: dict[str, Any]) -> list[str]:
    return [
        block["content"]
        for message in body["messages"]
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_below_the_trigger_nothing_is_cleared() -> None:
    talk = Conversation(SCENARIO.task)
    talk.call("Read", {"file_path": "/work/ws/f1.txt"}, result=RESULT)
    body = talk.body()
    cleared = clear_tool_results(ClearToolUses(), body, prompt_tokens(body), text_tokens)
    assert (cleared.cleared_results, cleared.body) == (0, body)


def test_above_the_trigger_all_but_the_three_newest_results_are_cleared() -> None:
    body = six_reads().body()
    original = results(body)
    cleared = clear_tool_results(ClearToolUses(), body, prompt_tokens(body), text_tokens)
    assert cleared.cleared_results == 3
    after = results(dict(cleared.body))
    assert after[:3] == [CLEARED_PLACEHOLDER] * 3
    assert after[3:] == original[3:]
    assert results(body) == original  # the client's body is left alone
    # The tool calls stay: only results are cleared.
    calls = [b for m in cleared.body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert len(calls) == 6


def test_the_edit_can_be_tuned_and_excluded_tools_are_kept() -> None:
    talk = six_reads()
    talk.call("Bash", {"command": "ls"}, result="b" * 40)
    body = talk.body()
    edit = ClearToolUses(trigger_input_tokens=50_000, keep_tool_uses=1, exclude_tools=("Bash",))
    after = results(dict(clear_tool_results(edit, body, prompt_tokens(body), text_tokens).body))
    assert after[:5] == [CLEARED_PLACEHOLDER] * 5
    assert after[5].startswith("6:")
    # clear_at_least: not worth a cache miss unless that much goes.
    greedy = ClearToolUses(clear_at_least_tokens=10**6)
    assert clear_tool_results(greedy, body, prompt_tokens(body), text_tokens).cleared_results == 0


def test_a_requests_own_context_management_is_read() -> None:
    body = {
        "context_management": {
            "edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": 30_000},
                    "keep": {"type": "tool_uses", "value": 5},
                    "exclude_tools": ["Grep"],
                }
            ]
        }
    }
    assert ClearToolUses.from_request(body) == ClearToolUses(30_000, 5, 0, ("Grep",))
    by_uses = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 4}}
    edit = ClearToolUses.from_request({"context_management": {"edits": [by_uses]}})
    assert edit == ClearToolUses(trigger_tool_uses=4)
    talk = six_reads()
    small = talk.body()
    # Six tool uses, more than four: cleared whatever the token count.
    assert clear_tool_results(edit, small, 10, text_tokens).cleared_results == 3
    assert ClearToolUses.from_request({"context_management": {"edits": [{"type": "x"}]}}) is None
    assert ClearToolUses.from_request({}) is None


class CountFields(TypedDict, total=False):
    trigger_input_tokens: int
    keep_tool_uses: int


@pytest.mark.parametrize("bad", [{"trigger_input_tokens": 0}, {"keep_tool_uses": -1}])
def test_a_bad_edit_is_refused(bad: CountFields) -> None:
    with pytest.raises(ValueError, match="clear_tool_uses"):
        ClearToolUses(**bad)


async def test_the_server_clears_bills_the_edited_prompt_and_misses_the_cache_from_there() -> None:
    talk = six_reads()
    async with (
        LoopbackServer(SCENARIO, response_delay_s=0, clear_tool_uses=ClearToolUses()) as server,
        aiohttp.ClientSession() as http,
    ):
        url = server.base_url + "/v1/messages"
        for _ in range(2):
            async with http.post(url, json=talk.body(stream=False)) as response:
                answer = await response.json()
            call = answer["content"][-1]
            talk.messages.append({"role": "assistant", "content": [call]})
            result = {"type": "tool_result", "tool_use_id": call["id"], "content": "7:" + RESULT}
            talk.messages.append({"role": "user", "content": [result]})
    first, second = server.request_log
    # What the model saw: the edited prompt; the agent saw the calls done, not their content.
    assert first.cleared_results == 3
    assert first.step_id == "s007"
    assert second.cleared_results == 4
    assert first.prompt_tokens < prompt_tokens(six_reads().body()) - 3 * 30_000 + 100
    # Every prefix reaching a cleared block is a miss: only tools and system are read.
    head = sum(b.tokens for b in prompt_blocks(talk.body()) if b.section != "messages")
    assert second.cache_read_input_tokens <= head
    assert second.cache_creation_input_tokens > 60_000


async def test_without_clearing_the_same_requests_read_the_cache() -> None:
    talk = six_reads()
    async with (
        LoopbackServer(SCENARIO, response_delay_s=0, window=10**6) as server,
        aiohttp.ClientSession() as http,
    ):
        url = server.base_url + "/v1/messages"
        for _ in range(2):
            async with http.post(url, json=talk.body(stream=False)) as response:
                await response.json()
    assert server.request_log[-1].cleared_results == 0
    assert server.request_log[-1].cache_read_input_tokens > 180_000
