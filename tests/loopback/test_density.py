"""Token density (``token_ratio``) and the 1M window, over real HTTP without the CLI."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mala_tui.cli import main
from mala_tui.loopback import LoopbackServer, Scenario, ScenarioError, load_scenario
from mala_tui.loopback.tokens import prompt_blocks, text_tokens
from tests.loopback.loopback_bodies import Conversation

SCENARIO = Scenario.model_validate(
    {
        "name": "dense",
        "task": "Read, then write.",
        "final_answer": "Done.",
        "steps": [
            {"tool": "Read", "path": "a.txt"},
            {"tool": "Write", "path": "out.txt", "content": "y" * 3000},
        ],
    }
)


def conversation(result: str = "x" * 40_001) -> Conversation:
    talk = Conversation(SCENARIO.task)
    talk.call("Read", {"file_path": "/work/ws/a.txt"}, result=result)
    return talk


async def ask(server: LoopbackServer, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        url = server.base_url + "/v1/messages"
        async with http.post(url, json=body, headers=headers) as response:
            answer: dict[str, Any] = await response.json()
            return answer


async def count(server: LoopbackServer, body: dict[str, Any]) -> int:
    async with aiohttp.ClientSession() as http:
        url = server.base_url + "/v1/messages/count_tokens"
        async with http.post(url, json=body) as response:
            return int((await response.json())["input_tokens"])


def test_a_blocks_count_is_ratio_times_chars_over_4_rounded_up() -> None:
    for ratio in (1.0, 2.0, 4.0, 0.5):
        for chars in (1, 3, 4, 5, 40_001):
            assert text_tokens("x" * chars, ratio) == max(1, math.ceil(chars * ratio / 4))


@pytest.mark.parametrize("ratio", [1.0, 2.0, 4.0])
async def test_every_reported_count_is_at_the_servers_density(ratio: float) -> None:
    body = conversation().body(stream=False)
    empty = conversation(result="").body(stream=False)
    async with LoopbackServer(SCENARIO, response_delay_s=0, token_ratio=ratio) as server:
        counted, counted_empty = await count(server, body), await count(server, empty)
        first = await ask(server, body)
        second = await ask(server, body)
    # The 40,001-character result alone: ceil(40,001 * ratio / 4) tokens instead of 1.
    assert counted - counted_empty == math.ceil(40_001 * ratio / 4) - 1
    record = server.request_log[0]
    assert counted == record.prompt_tokens == sum(b.tokens for b in prompt_blocks(body, ratio))
    usage = first["usage"]
    assert usage["input_tokens"] + usage["cache_creation_input_tokens"] == record.prompt_tokens
    assert second["usage"]["cache_read_input_tokens"] == usage["cache_creation_input_tokens"]
    write = first["content"][-1]
    assert write["name"] == "Write"
    expected_output = text_tokens(first["content"][0]["text"], ratio) + text_tokens(
        "Write\n" + json.dumps(write["input"], sort_keys=True, separators=(",", ":")), ratio
    )
    assert usage["output_tokens"] == record.output_tokens == expected_output
    assert record.token_ratio == ratio


async def test_a_scenarios_own_ratio_applies_and_the_server_option_overrides_it() -> None:
    dense = SCENARIO.model_copy(update={"token_ratio": 2.0})
    body = conversation().body(stream=False)
    async with LoopbackServer(dense, response_delay_s=0) as server:
        own = await count(server, body)
    async with LoopbackServer(dense, response_delay_s=0, token_ratio=4.0) as server:
        overridden = await count(server, body)
    assert own == sum(b.tokens for b in prompt_blocks(body, 2.0))
    assert overridden == sum(b.tokens for b in prompt_blocks(body, 4.0))
    assert own > 20_000 > sum(b.tokens for b in prompt_blocks(body))


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), 65.0])
def test_a_bad_ratio_is_refused_with_what_is_allowed(bad: float) -> None:
    with pytest.raises(ValueError, match="token ratio must be a finite number above 0"):
        LoopbackServer(SCENARIO, token_ratio=bad)
    data = SCENARIO.model_dump()
    data["token_ratio"] = bad
    with pytest.raises(ValueError, match="token_ratio"):
        Scenario.model_validate(data)


def test_a_bad_ratio_in_a_scenario_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "dense.json"
    data = SCENARIO.model_dump()
    data["token_ratio"] = -2
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match=rf"{path}: token_ratio: .*greater than 0"):
        load_scenario(path)


@pytest.mark.parametrize("bad", ["0", "-2", "inf", "nan", "two", "100"])
def test_serve_refuses_a_bad_token_ratio_with_a_usage_error(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["loopback", "serve", "--scenario", "quickstart", "--token-ratio", bad])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "argument --token-ratio" in err
    assert "Traceback" not in err


async def test_serve_reports_at_the_density_it_was_given(tmp_path: Path) -> None:
    import asyncio
    import re
    import signal

    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "mala_tui", "loopback", "serve", "--scenario", "quickstart"],
        *["--token-ratio", "4", "--delay", "0", "--home", str(tmp_path / "home")],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(20):
            banner = (await process.stdout.readuntil(b"--allowedTools")).decode()
            assert "token density: 4x chars/4" in banner
            found = re.search(r"loopback model server: (http://127\.0\.0\.1:\d+)", banner)
            assert found is not None
            body = conversation().body(stream=False)
            async with aiohttp.ClientSession() as http:
                url = found.group(1) + "/v1/messages/count_tokens"
                async with http.post(url, json=body) as response:
                    counted = (await response.json())["input_tokens"]
            process.send_signal(signal.SIGINT)
            await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert counted == sum(b.tokens for b in prompt_blocks(body, 4.0))


@pytest.mark.parametrize(
    ("model", "headers", "window"),
    [
        ("claude-sonnet-4-5", {}, 200_000),
        ("claude-sonnet-4-5[1m]", {}, 1_000_000),
        ("claude-sonnet-4-5", {"anthropic-beta": "context-1m-2025-08-07"}, 1_000_000),
    ],
)
async def test_the_1m_window_comes_with_the_beta_or_a_1m_model_name(
    model: str, headers: dict[str, str], window: int
) -> None:
    talk = Conversation(SCENARIO.task)
    talk.call("Read", {"file_path": "/work/ws/a.txt"}, result="x" * 1_000_000)
    body = talk.body(stream=False)
    body["model"] = model
    async with LoopbackServer(SCENARIO, response_delay_s=0) as server:
        answer = await ask(server, body, **headers)
    record = server.request_log[0]
    assert record.window == window
    assert record.prompt_tokens > 250_000
    if window == 200_000:
        assert record.status == 400
        assert answer["error"]["message"].endswith("> 200000 maximum")
    else:
        assert (record.status, answer["model"]) == (200, model)


def test_the_shipped_1m_scenario_outgrows_200k_and_fits_1m() -> None:
    scenario = load_scenario("million-window")
    chars = sum(len(content) for _, content in scenario.workspace_files())
    tokens = chars * scenario.token_ratio / 4
    assert 0.4 * 1_000_000 < tokens < 0.8 * 1_000_000
