"""The server over real HTTP (aiohttp client), without the CLI."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mala_tui.loopback import (
    FaultSpec,
    LoopbackServer,
    Scenario,
    load_scenario,
    prompt_tokens,
    read_jsonl,
    summarize,
)
from mala_tui.loopback.faults import BROKEN_STREAM_KEY, BROKEN_STREAM_TEXT
from tests.loopback.loopback_bodies import Conversation

SCENARIO = Scenario.model_validate(
    {
        "name": "unit",
        "task": "Do three things.",
        "final_answer": "Done.",
        "steps": [
            {"tool": "Read", "path": "a.txt"},
            {"tool": "Bash", "command": "ls -la"},
            {"tool": "Write", "path": "out.txt", "content": "x" * 3000},
        ],
    }
)
OTHER = SCENARIO.model_copy(update={"name": "other", "final_answer": "Other done."})


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer([SCENARIO, OTHER], response_delay_s=0, keep_bodies=True) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def sse_events(raw: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


async def post(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any], **headers: str
) -> tuple[int, str]:
    async with http.post(url + "/v1/messages?beta=true", json=body, headers=headers) as response:
        return response.status, await response.text()


async def test_a_streamed_answer_has_the_apis_event_sequence_and_usage(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    status, raw = await post(http, server.url_for("unit"), Conversation(SCENARIO.task).body())
    assert status == 200
    events = sse_events(raw)
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    record = server.request_log[-1]
    assert start["usage"]["input_tokens"] == record.input_tokens
    assert start["usage"]["cache_creation_input_tokens"] == record.cache_creation_input_tokens
    assert start["usage"]["cache_read_input_tokens"] == record.cache_read_input_tokens
    assert record.prompt_tokens == prompt_tokens(Conversation(SCENARIO.task).body())
    assert events[-2][1]["usage"]["output_tokens"] == record.output_tokens
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    tool = events[5][1]["content_block"]
    assert (tool["type"], tool["name"], tool["input"]) == ("tool_use", "Read", {})
    assert json.loads(events[6][1]["delta"]["partial_json"]) == {"file_path": "/work/ws/a.txt"}
    assert (record.step_id, record.response_kind, record.redone) == ("s001", "tool_use", False)


async def test_a_large_tool_input_streams_in_several_json_fragments(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.call("Read", {"file_path": "/work/ws/a.txt"})
    conversation.call("Bash", {"command": "ls -la"})
    _, raw = await post(http, server.url_for("unit"), conversation.body())
    fragments = [
        d["delta"]["partial_json"]
        for name, d in sse_events(raw)
        if name == "content_block_delta" and d["index"] == 1
    ]
    assert len(fragments) > 1
    assert json.loads("".join(fragments))["content"] == "x" * 3000


async def test_a_whole_answer_without_streaming(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    conversation = Conversation(SCENARIO.task)
    for step in SCENARIO.plan():
        conversation.call(step.tool, step.tool_input(Path("/work/ws")))
    status, raw = await post(http, server.url_for("unit"), conversation.body(stream=False))
    message = json.loads(raw)
    assert status == 200
    assert message["content"] == [{"type": "text", "text": "Done."}]
    assert message["stop_reason"] == "end_turn"
    assert message["usage"]["output_tokens"] == server.request_log[-1].output_tokens


async def test_count_tokens_uses_the_same_estimate(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    body = Conversation(SCENARIO.task).body()
    async with http.post(
        server.url_for("unit") + "/v1/messages/count_tokens", json=body
    ) as response:
        counted = await response.json()
    await post(http, server.url_for("unit"), body)
    assert counted == {"input_tokens": server.request_log[-1].prompt_tokens}
    assert server.count_tokens_requests == 1
    assert len(server.request_log) == 1


async def test_a_prompt_over_the_window_gets_the_apis_400() -> None:
    body = Conversation("x" * 40_000).body()
    tokens = prompt_tokens(body)
    async with (
        LoopbackServer(SCENARIO, window=tokens - 1) as server,
        aiohttp.ClientSession() as http,
    ):
        status, raw = await post(http, server.base_url, body)
        assert status == 400
        assert json.loads(raw) == {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {tokens} tokens > {tokens - 1} maximum",
            },
        }
        status, _ = await post(
            http, server.base_url, body, **{"anthropic-beta": "context-1m-2025-08-07"}
        )
        assert status == 200
        assert [(r.status, r.window) for r in server.request_log] == [
            (400, tokens - 1),
            (200, 1_000_000),
        ]


@pytest.mark.parametrize(
    ("kind", "status", "error_type"),
    [("overloaded", 529, "overloaded_error"), ("api_error", 500, "api_error")],
)
async def test_http_error_faults_answer_with_the_apis_error_bodies(
    server: LoopbackServer, http: aiohttp.ClientSession, kind: str, status: int, error_type: str
) -> None:
    server.add_fault(FaultSpec.model_validate({"kind": kind, "at_step": "s001"}), route="unit")
    body = Conversation(SCENARIO.task).body()
    got, raw = await post(http, server.url_for("unit"), body)
    assert got == status
    assert json.loads(raw)["type"] == "error"
    assert json.loads(raw)["error"]["type"] == error_type
    retried, _ = await post(http, server.url_for("unit"), body)
    assert retried == 200
    first, second = server.request_log
    assert (first.response_kind, first.fault, first.step_id) == ("error", kind, None)
    assert (first.input_tokens, first.cache_read_input_tokens) == (0, 0)
    assert (second.step_id, second.redone, second.fault) == ("s001", False, None)


async def test_routes_select_scenarios_and_bad_paths_get_json_404s(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    conversation = Conversation(SCENARIO.task)
    for step in SCENARIO.plan():
        conversation.call(step.tool, step.tool_input(Path("/work/ws")))
    _, unit = await post(http, server.url_for("unit"), conversation.body(stream=False))
    _, other = await post(http, server.url_for("other"), conversation.body(stream=False))
    assert json.loads(unit)["content"][0]["text"] == "Done."
    assert json.loads(other)["content"][0]["text"] == "Other done."
    for url in (server.base_url, server.base_url + "/agents/nope"):
        status, raw = await post(http, url, conversation.body())
        assert status == 404
        assert json.loads(raw)["error"]["type"] == "not_found_error"
    async with http.get(server.base_url + "/v1/whatever") as response:
        assert response.status == 404
        assert (await response.json())["error"]["type"] == "not_found_error"
    assert [r.route for r in server.request_log] == ["unit", "other"]


async def test_the_session_id_comes_from_the_header_or_the_metadata(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    body = Conversation(SCENARIO.task).body()
    await post(http, server.url_for("unit"), body, **{"X-Claude-Code-Session-Id": "from-header"})
    await post(http, server.url_for("unit"), body)
    assert [r.session_id for r in server.request_log] == ["from-header", "session-from-metadata"]


async def test_work_seen_done_and_then_lost_is_logged_as_redone(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.call("Read", {"file_path": "/work/ws/a.txt"})
    await post(http, server.url_for("unit"), conversation.body())
    await post(http, server.url_for("unit"), Conversation(SCENARIO.task).body())
    await post(http, server.url_for("other"), Conversation(SCENARIO.task).body())
    assert [(r.route, r.step_id, r.redone) for r in server.request_log] == [
        ("unit", "s002", False),
        ("unit", "s001", True),
        ("other", "s001", False),
    ]
    assert summarize(server.request_log).redone_steps == 1


async def test_a_timed_stall_delays_the_first_byte(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    server.add_fault(FaultSpec(kind="stall_before_bytes", seconds=0.4), route="unit")
    started = time.monotonic()
    status, _ = await post(http, server.url_for("unit"), Conversation(SCENARIO.task).body())
    assert status == 200
    assert time.monotonic() - started >= 0.4


async def test_slow_streaming_paces_the_deltas(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    server.add_fault(
        FaultSpec(kind="slow_stream", at_step="s003", tokens_per_second=2000), route="unit"
    )
    conversation = Conversation(SCENARIO.task)
    conversation.call("Read", {"file_path": "/work/ws/a.txt"})
    conversation.call("Bash", {"command": "ls -la"})
    started = time.monotonic()
    _, raw = await post(http, server.url_for("unit"), conversation.body())
    elapsed = time.monotonic() - started
    deltas = [d["delta"] for n, d in sse_events(raw) if n == "content_block_delta"]
    streamed = sum(len(d.get("text") or d.get("partial_json")) // 4 for d in deltas)
    assert streamed > 750  # the 3,000-character Write
    assert elapsed >= streamed / 2000
    assert server.request_log[-1].fault == "slow_stream(2000 tok/s)"


async def test_a_stall_until_gone_ends_when_the_client_hangs_up(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    server.add_fault(FaultSpec(kind="stall_after_message_start"), route="unit")
    async with http.post(
        server.url_for("unit") + "/v1/messages", json=Conversation(SCENARIO.task).body()
    ) as response:
        first = await response.content.readuntil(b"\n\n")
        assert first.startswith(b"event: message_start")
        assert (await response.content.readuntil(b"\n\n")).startswith(b"event: ping")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(response.content.readuntil(b"\n\n"), 0.3)
        assert response.connection is not None and response.connection.transport is not None
        response.connection.transport.abort()
    async with asyncio.timeout(5):
        await server.wait_for(lambda _: 1 in server.abandoned_requests)


async def test_stopping_the_server_ends_a_stall(http: aiohttp.ClientSession) -> None:
    server = LoopbackServer(SCENARIO, response_delay_s=0)
    await server.start()
    server.add_fault(FaultSpec(kind="stall_before_bytes"))
    request = asyncio.create_task(post(http, server.base_url, Conversation(SCENARIO.task).body()))
    async with asyncio.timeout(5):
        await server.wait_for(lambda log: len(log) == 1)
        await server.stop()
        with pytest.raises(aiohttp.ClientError):
            await request


async def test_a_reset_cuts_the_stream_after_the_first_delta(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    server.add_fault(FaultSpec(kind="connection_reset"), route="unit")
    received = b""
    with pytest.raises(aiohttp.ClientError):
        async with http.post(
            server.url_for("unit") + "/v1/messages", json=Conversation(SCENARIO.task).body()
        ) as response:
            async for chunk in response.content.iter_any():
                received += chunk
    assert b"content_block_delta" in received
    assert b"message_stop" not in received


async def test_the_log_round_trips_through_jsonl(
    server: LoopbackServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    conversation = Conversation(SCENARIO.task)
    await post(http, server.url_for("unit"), conversation.body())
    conversation.call("Read", {"file_path": "/work/ws/a.txt"}, "y" * 8000)
    await post(http, server.url_for("unit"), conversation.body())
    server.write_log(tmp_path / "log.jsonl")
    records = read_jsonl(tmp_path / "log.jsonl")
    assert records == server.request_log
    totals = summarize(records)
    first, second = records
    assert totals.requests == 2
    assert totals.prompt_tokens == first.prompt_tokens + second.prompt_tokens
    assert second.cache_read_input_tokens == first.prompt_tokens
    assert totals.cost_units == pytest.approx(
        0.1 * second.cache_read_input_tokens
        + 1.25 * (first.cache_creation_input_tokens + second.cache_creation_input_tokens)
        + 5 * (first.output_tokens + second.output_tokens)
    )


async def test_one_route_is_also_served_at_the_bare_base_url() -> None:
    async with (
        LoopbackServer(load_scenario("quickstart")) as server,
        aiohttp.ClientSession() as http,
    ):
        status, _ = await post(http, server.base_url, Conversation("review").body(stream=False))
        assert status == 200
        assert server.url_for("quickstart") == server.base_url + "/agents/quickstart"
        async with http.get(server.base_url + "/v1/models") as response:
            assert [m["id"] for m in (await response.json())["data"]] == ["claude-sonnet-4-5"]


async def test_a_broken_stream_answers_an_event_that_is_not_json_with_escapes_and_a_key(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    server.add_fault(FaultSpec(kind="broken_stream"), route="unit")
    async with http.post(
        server.url_for("unit") + "/v1/messages", json=Conversation(SCENARIO.task).body()
    ) as response:
        assert response.status == 200
        raw = await response.text()
    assert raw == f"event: message_start\ndata: {{broken {BROKEN_STREAM_TEXT}\n\n"
    assert "\x1b]52;" in raw and "\x1b]0;" in raw and "\x1b[2J" in raw
    assert BROKEN_STREAM_KEY in raw
    assert server.request_log[-1].fault == "broken_stream"
