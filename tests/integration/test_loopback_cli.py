"""The real Claude Code CLI (through claude-agent-sdk) against the loopback model server.

One server serves every test here, each test on its own route (so faults, request counts
and the record of results seen stay separate); only the window test needs a server of its
own. Every read from the SDK is bounded, and each test ends by showing no CLI process of
ours is left.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
)

from mala_tui.loopback import (
    MODEL,
    FaultSpec,
    LoopbackServer,
    RequestRecord,
    Scenario,
    load_scenario,
    materialize_workspace,
    offline_cli_env,
    summarize,
)
from mala_tui.resources import shipped_folder
from tests.integration.harness import cli_options

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

READ_TIMEOUT_S = 60.0
DISCONNECT_TIMEOUT_S = 15.0

# Reads, a command and a new file: no Edit, so a fresh session has nothing to re-read
# before it can carry on, and "redone" counts only work that was truly lost.
REDO = Scenario.model_validate(
    {
        "name": "redo",
        "task": "Read the three notes, count their lines, and write a digest.",
        "final_answer": "The digest is in DIGEST.md.",
        "workspace": {"files": [{"path": "notes/n{i}.txt", "count": 3, "size": 2000}]},
        "steps": [
            {"tool": "Read", "path": "notes/n{i}.txt", "count": 3},
            {"tool": "Bash", "command": "wc -l notes/n1.txt notes/n2.txt notes/n3.txt"},
            {"tool": "Grep", "pattern": "line 0001", "path": "notes", "output_mode": "count"},
            {"tool": "Write", "path": "DIGEST.md", "content": "# Digest\n\nThree notes.\n"},
        ],
    }
)
# Large Writes fill the context with the agent's own output, fast.
FILL = Scenario.model_validate(
    {
        "name": "fill",
        "task": "Write the forty data files.",
        "final_answer": "All forty files are written.",
        "steps": [{"tool": "Write", "path": "out/f{i:02d}.txt", "size": 8000, "count": 40}],
    }
)
ROUTES = {
    "run": load_scenario("quickstart"),
    "retry": load_scenario("quickstart"),
    "stall": load_scenario("quickstart"),
    "fresh": REDO,
    "seeded": REDO,
    "compact": FILL,
}


def claude_children() -> set[int]:
    """PIDs of this process's children named claude, zombies included."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 1 :].split()[1])
        if ppid == os.getpid() and comm == "claude":
            found.add(int(entry.name))
    return found


@pytest.fixture(autouse=True)
def no_cli_left_behind() -> Iterator[None]:
    assert claude_children() == set()
    yield
    assert claude_children() == set()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer(ROUTES, response_delay_s=0) as running:
        yield running


def options(base_url: str, tmp_path: Path, scenario: Scenario, **extra: Any) -> ClaudeAgentOptions:
    workspace = tmp_path / "ws"
    materialize_workspace(scenario, workspace)
    env = offline_cli_env(base_url, tmp_path / "home", **extra.pop("env_options", {}))
    return cli_options(scenario, workspace, env, include_partial_messages=True, **extra)


async def one_turn(client: ClaudeSDKClient, prompt: str) -> list[Message]:
    """Send a prompt and collect messages up to its ResultMessage, each read bounded."""
    await client.query(prompt)
    messages: list[Message] = []
    replies = client.receive_response().__aiter__()
    while True:
        try:
            message = await asyncio.wait_for(replies.__anext__(), READ_TIMEOUT_S)
        except StopAsyncIteration:
            return messages
        messages.append(message)


async def run_session(options: ClaudeAgentOptions, *prompts: str) -> list[list[Message]]:
    client = ClaudeSDKClient(options)
    await asyncio.wait_for(client.connect(), READ_TIMEOUT_S)
    try:
        return [await one_turn(client, prompt) for prompt in prompts]
    finally:
        await asyncio.wait_for(client.disconnect(), DISCONNECT_TIMEOUT_S)


def result_of(messages: list[Message]) -> ResultMessage:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1
    return results[0]


def route_log(server: LoopbackServer, route: str) -> list[RequestRecord]:
    return [record for record in server.request_log if record.route == route]


def stream_usage(messages: list[Message]) -> list[tuple[int, int, int, int]]:
    """(input, cache write, cache read, output) per API call, from the raw SSE events."""
    calls: list[list[int]] = []
    for message in messages:
        if not isinstance(message, StreamEvent) or message.parent_tool_use_id is not None:
            continue
        event = message.event
        if event["type"] == "message_start":
            usage = event["message"]["usage"]
            calls.append(
                [
                    usage["input_tokens"],
                    usage["cache_creation_input_tokens"],
                    usage["cache_read_input_tokens"],
                    0,
                ]
            )
        elif event["type"] == "message_delta":
            calls[-1][3] = event["usage"]["output_tokens"]
    return [(a, b, c, d) for a, b, c, d in calls]


async def test_a_scenario_runs_to_its_final_answer_with_real_tools_and_exact_usage(
    server: LoopbackServer, tmp_path: Path
) -> None:
    scenario = ROUTES["run"]
    (turn,) = await run_session(options(server.url_for("run"), tmp_path, scenario), scenario.task)
    result = result_of(turn)
    assert (result.subtype, result.is_error, result.result) == (
        "success",
        False,
        scenario.final_answer,
    )

    workspace = tmp_path / "ws"
    assert (workspace / "REPORT.md").read_text().startswith("# Report")
    assert "VERSION = 2" in (workspace / "src/app.py").read_text()

    log = route_log(server, "run")
    assert [r.step_id for r in log] == [s.id for s in scenario.plan()] + [None]
    assert log[-1].response_kind == "final"
    assert {r.session_id for r in log} == {result.session_id}
    assert stream_usage(turn) == [
        (r.input_tokens, r.cache_creation_input_tokens, r.cache_read_input_tokens, r.output_tokens)
        for r in log
    ]
    totals = summarize(log)
    assert result.usage is not None
    assert result.usage["cache_read_input_tokens"] == totals.cache_read_input_tokens
    assert result.usage["cache_creation_input_tokens"] == totals.cache_creation_input_tokens
    assert result.usage["output_tokens"] == totals.output_tokens
    assert totals.cache_read_input_tokens > totals.cache_creation_input_tokens  # prefix reused
    assert result.model_usage is not None
    assert result.model_usage[MODEL]["contextWindow"] == 200_000


async def test_a_529_is_retried_by_the_cli_and_the_turn_completes(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.add_fault(FaultSpec(kind="overloaded", at_step="s003"), route="retry")
    scenario = ROUTES["retry"]
    (turn,) = await run_session(options(server.url_for("retry"), tmp_path, scenario), scenario.task)
    assert result_of(turn).subtype == "success"
    retries = [m for m in turn if isinstance(m, SystemMessage) and m.subtype == "api_retry"]
    assert [m.data["error_status"] for m in retries] == [529]
    log = route_log(server, "retry")
    assert [(r.status, r.step_id, r.redone) for r in log[2:4]] == [
        (529, None, False),
        (200, "s003", False),
    ]
    assert log[2].fault == "overloaded"
    assert log[-1].response_kind == "final"


async def test_a_stall_leaves_the_stream_silent_until_the_client_gives_up(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.add_fault(FaultSpec(kind="stall_after_message_start", at_step="s002"), route="stall")
    scenario = ROUTES["stall"]
    client = ClaudeSDKClient(options(server.url_for("stall"), tmp_path, scenario))
    await asyncio.wait_for(client.connect(), READ_TIMEOUT_S)
    (cli,) = claude_children()
    await client.query(scenario.task)
    replies = client.receive_response().__aiter__()
    seen: list[Message] = []
    async with asyncio.timeout(READ_TIMEOUT_S):
        await server.wait_for(lambda log: any(r.fault for r in log if r.route == "stall"))
    with pytest.raises(TimeoutError):
        while True:
            seen.append(await asyncio.wait_for(replies.__anext__(), 3.0))
    starts = [m for m in seen if isinstance(m, StreamEvent) and m.event["type"] == "message_start"]
    assert len(starts) == 2  # s001's answer, then the stalled one's message_start: then nothing
    assert not any(isinstance(m, ResultMessage) for m in seen)
    stalled = route_log(server, "stall")[-1]
    assert (stalled.step_id, stalled.fault) == ("s002", "stall_after_message_start(until gone)")

    await asyncio.wait_for(client.disconnect(), DISCONNECT_TIMEOUT_S)
    assert not Path(f"/proc/{cli}").exists()
    async with asyncio.timeout(5):
        await server.wait_for(lambda _: stalled.index in server.abandoned_requests)


async def test_a_prompt_over_the_window_gets_the_400_and_the_sdk_says_prompt_too_long(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("quickstart")
    async with LoopbackServer(scenario, window=8_000, response_delay_s=0) as small:
        # Compaction off, as mala-tui's main thread has it: the refusal ends the turn (with it
        # on, the CLI compacts after the 400 and goes on).
        off = options(small.base_url, tmp_path, scenario, env_options={"auto_compact": False})
        (turn,) = await run_session(off, scenario.task)
    failed = [m for m in turn if isinstance(m, AssistantMessage) and m.error]
    assert [m.error for m in failed] == ["invalid_request"]
    result = result_of(turn)
    assert (result.is_error, result.terminal_reason, result.api_error_status) == (
        True,
        "prompt_too_long",
        400,
    )
    last = small.request_log[-1]
    assert last.status == 400
    assert last.error == f"prompt is too long: {last.prompt_tokens} tokens > 8000 maximum"
    assert all(r.prompt_tokens <= 8_000 for r in small.request_log[:-1])


def prompt(name: str, **values: Any) -> str:
    template = shipped_folder("prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")
    return template.format(**values)


async def test_a_fresh_session_redoes_lost_work_unless_seeded_with_the_agents_checkpoint(
    server: LoopbackServer, tmp_path: Path
) -> None:
    # Both routes: a first session does three steps and is cut off by max_turns.
    for route in ("fresh", "seeded"):
        cut = options(server.url_for(route), tmp_path / route, REDO, max_turns=3)
        prompts = [REDO.task]
        if route == "seeded":
            prompts.append(prompt("checkpoint_request", percent=91, tokens_used=1, window=2))
        turns = await run_session(cut, *prompts)
        assert result_of(turns[0]).subtype == "error_max_turns"
        assert (tmp_path / route / "ws").exists()

    # Fresh session, no checkpoint: the three steps are done again. The server logs as
    # redone the two whose results it had seen; the third ran when max_turns stopped the
    # CLI, which never sent its result, so the server cannot know it was done.
    (turn,) = await run_session(
        options(server.url_for("fresh"), tmp_path / "fresh", REDO), REDO.task
    )
    assert result_of(turn).result == REDO.final_answer
    second = [r for r in route_log(server, "fresh") if r.session_id == result_of(turn).session_id]
    assert [(r.step_id, r.redone) for r in second] == [
        ("s001", True),
        ("s002", True),
        ("s003", False),
        ("s004", False),
        ("s005", False),
        ("s006", False),
        (None, False),
    ]

    # Seeded with the checkpoint the agent wrote: it carries on where it stopped.
    checkpoint_answer = route_log(server, "seeded")[-1]
    assert checkpoint_answer.response_kind == "checkpoint"
    text = result_of(turns[1]).result or ""
    checkpoint = re.search(r"<checkpoint>[\s\S]*</checkpoint>", text)
    assert checkpoint is not None
    continuation = prompt(
        "continuation", continuation_number=1, checkpoint=checkpoint.group(0), carryover="(none)"
    )
    (turn,) = await run_session(
        options(server.url_for("seeded"), tmp_path / "seeded", REDO), continuation
    )
    assert result_of(turn).result == REDO.final_answer
    resumed = [r for r in route_log(server, "seeded") if r.session_id == result_of(turn).session_id]
    assert [(r.step_id, r.redone) for r in resumed] == [
        ("s004", False),
        ("s005", False),
        ("s006", False),
        (None, False),
    ]
    assert (tmp_path / "seeded/ws/DIGEST.md").read_text().startswith("# Digest")


async def test_the_clis_own_compaction_gets_a_summary_and_nothing_is_redone(
    server: LoopbackServer, tmp_path: Path
) -> None:
    settings = options(
        server.url_for("compact"),
        tmp_path,
        FILL,
        env_options={"auto_compact": True, "auto_compact_window": 100_000},
    )
    (turn,) = await run_session(settings, FILL.task)
    assert result_of(turn).result == FILL.final_answer
    boundaries = [
        m for m in turn if isinstance(m, SystemMessage) and m.subtype == "compact_boundary"
    ]
    log = route_log(server, "compact")
    compactions = [r for r in log if r.response_kind == "compaction_summary"]
    assert len(compactions) == len(boundaries) >= 1
    assert all(r.prompt_tokens <= 100_000 - 33_000 + 3_000 for r in log)
    assert summarize(log).redone_steps == 0
    assert len(list((tmp_path / "ws/out").iterdir())) == 40
