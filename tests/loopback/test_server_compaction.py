"""The API's server-side compaction (compact_20260112) as the loopback applies it."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from mala_tui.loopback import LoopbackServer, Scenario
from mala_tui.loopback.compaction import (
    SUMMARY_INTRO,
    ServerCompaction,
    apply_compaction,
    compacted,
)
from mala_tui.loopback.request_log import cost_units, summarize
from mala_tui.loopback.tokens import prompt_blocks, prompt_tokens
from tests.loopback.loopback_bodies import Conversation, read_input

RESULT = "r" * 120_000  # 30,000 tokens at 1x
USAGE_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
SCENARIO = Scenario.model_validate(
    {
        "name": "compacting",
        "task": "Read eight files, then edit the last.",
        "final_answer": "Done.",
        "workspace": {"files": [{"path": "f{i}.txt", "count": 8, "size": 100}]},
        "facts": [{"id": "early", "path": "f1.txt", "text": "EARLY DETAIL = 42"}],
        "steps": [
            {"tool": "Read", "path": "f{i}.txt", "count": 7},
            {"tool": "Read", "path": "f8.txt", "needs": ["early"]},
        ],
    }
)


def reads(count: int) -> Conversation:
    talk = Conversation(SCENARIO.task)
    for i in range(1, count + 1):
        extra = "\nEARLY DETAIL = 42\n" if i == 1 else ""
        talk.call("Read", read_input(f"f{i}.txt"), result=f"{i}:" + RESULT + extra)
    return talk


async def post(http: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> dict[str, Any]:
    async with http.post(url, json=body) as response:
        assert response.status == 200, await response.text()
        answer: dict[str, Any] = await response.json()
        return answer


def test_the_edit_is_read_from_a_request_and_its_trigger_has_a_floor() -> None:
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 100_000}}
    body = {"context_management": {"edits": [{"type": "other"}, edit]}}
    assert ServerCompaction.from_request(body) == ServerCompaction(100_000)
    plain = {"context_management": {"edits": [{"type": "compact_20260112"}]}}
    assert ServerCompaction.from_request(plain) == ServerCompaction(150_000)
    assert ServerCompaction.from_request({}) is None
    with pytest.raises(ValueError, match="at least 50,000"):
        ServerCompaction(10_000)


def test_a_summary_stands_for_the_conversation_it_covered_and_for_no_other() -> None:
    talk = reads(2)
    state = compacted(talk.body(), "the summary")
    talk.call("Read", read_input("f3.txt"), result="three")
    # The client moves its cache marker along: that is the same conversation.
    edited = apply_compaction(talk.body(), state)
    assert edited is not None
    messages = edited["messages"]
    assert messages[0]["content"][0]["text"] == f"{SUMMARY_INTRO}\n\nthe summary"
    assert messages[1:] == talk.body()["messages"][5:]
    other = reads(2)
    other.messages[2]["content"][0]["content"] = "rewritten"
    assert apply_compaction(other.body(), state) is None
    assert apply_compaction(reads(1).body(), state) is None


async def test_past_the_trigger_the_conversation_is_summarised_billed_and_replaced() -> None:
    talk = reads(2)
    async with (
        LoopbackServer(
            SCENARIO, response_delay_s=0, server_compaction=ServerCompaction(100_000)
        ) as server,
        aiohttp.ClientSession() as http,
    ):
        url = server.base_url + "/v1/messages"
        await post(http, url, talk.body(stream=False))
        for i in range(3, 6):  # ~150,000 tokens of results in all
            talk.call("Read", read_input(f"f{i}.txt"), result=f"{i}:" + RESULT)
        summarised = prompt_tokens(talk.body())
        answer = await post(http, url, talk.body(stream=False))
        # The answer is made on the summary: the agent goes on with the sixth Read, and
        # the usage the client sees is the answer's, not the summarising step's.
        call = answer["content"][-1]
        assert call["input"]["file_path"].endswith("f6.txt")
        usage = answer["usage"]
        assert sum(usage[key] for key in USAGE_KEYS) < 10_000
        talk.messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": "6:"}
        talk.messages.append({"role": "user", "content": [result]})
        later = await post(http, url, talk.body(stream=False))
    first, compacting, after = server.request_log
    assert not first.compacted
    assert compacting.compacted and not after.compacted
    assert compacting.compaction_prompt_tokens == summarised
    # The summarising step read what the first request cached and paid the rest as input.
    assert compacting.compaction_cache_read_input_tokens == first.prompt_tokens
    assert compacting.compaction_output_tokens > 0
    assert compacting.peak_tokens == summarised
    assert cost_units(compacting) > summarised - first.prompt_tokens
    # The later request reads the summary in place of the five results, from the cache.
    assert after.prompt_tokens < 10_000
    assert after.cache_read_input_tokens >= compacting.prompt_tokens - 100
    # Every step the summary lists as done stays done.
    assert later["content"][-1]["input"]["file_path"].endswith("f7.txt")
    assert not any(r.redone for r in server.request_log)
    totals = summarize(server.request_log)
    assert totals.prompt_tokens == sum(r.prompt_tokens for r in server.request_log) + summarised
    assert totals.peak_prompt_tokens == summarised


async def test_a_needed_detail_dropped_by_the_summary_is_read_again() -> None:
    talk = reads(7)
    async with (
        LoopbackServer(
            SCENARIO, window=10**6, response_delay_s=0, server_compaction=ServerCompaction(100_000)
        ) as server,
        aiohttp.ClientSession() as http,
    ):
        answer = await post(http, server.base_url + "/v1/messages", talk.body(stream=False))
    assert answer["content"][-1]["input"]["file_path"].endswith("f1.txt")
    (record,) = server.request_log
    assert record.compacted and record.reread == "early"


async def test_a_requests_own_edit_turns_it_on_and_nothing_happens_below_the_trigger() -> None:
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 120_000}}
    async with (
        LoopbackServer(SCENARIO, response_delay_s=0) as server,
        aiohttp.ClientSession() as http,
    ):
        url = server.base_url + "/v1/messages"
        below = reads(3).body(stream=False)
        await post(http, url, {**below, "context_management": {"edits": [edit]}})
        above = reads(5).body(stream=False)
        await post(http, url, {**above, "context_management": {"edits": [edit]}})
        await post(http, url, above)  # without the edit: nothing is compacted
    below_record, above_record, plain = server.request_log
    assert not below_record.compacted
    assert above_record.compacted
    assert not plain.compacted and plain.prompt_tokens == prompt_tokens(above)
    head = sum(b.tokens for b in prompt_blocks(above) if b.section != "messages")
    assert above_record.prompt_tokens < head + 2_000
