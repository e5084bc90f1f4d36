"""The floor: every block written once, the head read on each later request, the output."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest

from mala_tui.bench.arms import ArmResult
from mala_tui.bench.economy_report import ScenarioRun, floor_line, floor_table
from mala_tui.bench.floor import Floor, floor_of_projection, floor_of_raw
from mala_tui.bench.raw_projection import Projection
from mala_tui.loopback import LoopbackServer, Scenario, load_scenario, summarize
from mala_tui.loopback.request_log import RequestRecord
from mala_tui.loopback.tokens import prompt_tokens
from tests.bench.test_economy_gates import arm
from tests.loopback.loopback_bodies import SYSTEM, TOOLS, Conversation
from tests.support.factories import request_record

HEAD = 1_000


def raw_request(index: int, prompt: int, previous: int, output: int = 40) -> RequestRecord:
    """A raw request billed as the cache bills it: the previous prompt read, the rest written."""
    return replace(
        request_record(index, prompt, "read x", output=output),
        head_tokens=HEAD,
        cache_read_input_tokens=previous,
        cache_creation_input_tokens=prompt - previous,
    )


def hand_built_raw_log() -> list[RequestRecord]:
    """Raw on a four-request task: the head and the task, then three results."""
    prompts = [1_200, 3_200, 5_300, 5_400]
    return [
        raw_request(index + 1, prompt, prompts[index - 1] if index else 0)
        for index, prompt in enumerate(prompts)
    ]


def test_the_floor_writes_every_block_once_and_reads_only_the_head_again() -> None:
    floor = floor_of_raw(hand_built_raw_log())
    assert (floor.head_tokens, floor.requests, floor.written_tokens) == (1_000, 4, 5_400)
    # 1.25 x 5,400 written + 0.1 x 1,000 on each of the 3 later requests + 5 x 160 output.
    assert floor.write_cost == 6_750
    assert floor.head_read_cost == pytest.approx(300)
    assert floor.output_cost == 800
    assert floor.cost_units == 7_850


def test_raw_pays_the_floor_plus_reading_its_conversation_again() -> None:
    records = hand_built_raw_log()
    floor = floor_of_raw(records)
    # Raw reads on every request the whole prompt before it: above the head, that is
    # (1,200 - 1,000) + (3,200 - 1,000) + (5,300 - 1,000) at 0.1.
    again = 0.1 * (200 + 2_200 + 4_300)
    assert summarize(records).cost_units == pytest.approx(floor.cost_units + again)


def test_a_wait_that_outlasts_the_cache_writes_the_head_again() -> None:
    records = hand_built_raw_log()
    # The third request came after a long wait: nothing of the cache was left to read.
    records[2] = replace(records[2], cache_read_input_tokens=0, cache_creation_input_tokens=5_300)
    floor = floor_of_raw(records)
    assert floor.cold_requests == 1
    # The head is read on two requests and written again on the third.
    assert floor.head_read_cost == pytest.approx(0.1 * 1_000 * 2)
    assert floor.head_rewrite_cost == 1.25 * 1_000
    assert floor.cost_units == 6_750 + 200 + 1_250 + 800
    assert "written again after 1 wait that outlasted the cache (1,250)" in floor_line(floor)


def test_refused_and_subagent_requests_are_not_the_main_conversations_floor() -> None:
    records = hand_built_raw_log()
    refused = replace(records[-1], index=5, status=529, prompt_tokens=9_999, output_tokens=0)
    subagent = replace(records[1], index=6, agent_id="a1", head_tokens=700, output_tokens=999)
    assert floor_of_raw([*records, refused, subagent]) == floor_of_raw(records)


def test_a_log_that_does_not_say_its_head_has_no_floor() -> None:
    records = [replace(record, head_tokens=0) for record in hand_built_raw_log()]
    with pytest.raises(ValueError, match="head"):
        floor_of_raw(records)
    with pytest.raises(ValueError, match="no request"):
        floor_of_raw([])


def test_raw_past_its_window_has_the_projected_scenario_as_its_floor() -> None:
    projection = Projection(requests=10, prompt_tokens=0, cost_units=0.0, peak=40_000)
    floor = floor_of_projection(hand_built_raw_log(), projection)
    assert floor.computed
    assert (floor.requests, floor.written_tokens, floor.output_tokens) == (10, 40_000, 400)
    assert floor.cost_units == 1.25 * 40_000 + 0.1 * 1_000 * 9 + 5 * 400


def test_the_report_gives_each_arms_overhead_and_mala_tuis_against_server_compactions() -> None:
    floor = Floor(head_tokens=1_000, requests=11, written_tokens=400_000, output_tokens=1_000)
    assert floor.cost_units == 506_000
    arms: dict[str, ArmResult] = {
        "raw": arm("raw", cost=900_000),
        "unmanaged": arm("unmanaged", finished=False, cost=300_000),
        "server-compaction": arm("server-compaction", cost=706_000, compact_trigger=100_000),
        "managed": arm("managed", cost=606_000),
    }
    run = ScenarioRun(load_scenario("quickstart"), arms, token_ratio=2.0, floor=floor)
    table = floor_table([run]).splitlines()
    assert table[0].startswith("| scenario | density | floor | raw (1M window) above it |")
    assert table[2] == (
        "| quickstart | 2x | 506K | +394K (1.78x) | did not finish | +200K (1.40x) "
        "| +100K (1.20x) | 0.50 |"
    )
    assert floor_line(floor).startswith("Floor: 506,000 = every block once (400,000 tokens")


SCENARIO = Scenario.model_validate(
    {
        "name": "unit",
        "task": "Read it.",
        "final_answer": "Done.",
        "steps": [{"tool": "Read", "path": "a.txt"}],
    }
)


async def test_the_server_logs_each_requests_head_the_tools_and_system_prompt(
    tmp_path: Path,
) -> None:
    body = Conversation(SCENARIO.task).body()
    assert body["tools"] == TOOLS and body["system"] == SYSTEM
    async with (
        LoopbackServer(SCENARIO, response_delay_s=0, workspace=tmp_path) as server,
        aiohttp.ClientSession() as http,
    ):
        async with http.post(server.base_url + "/v1/messages", json=body) as response:
            assert response.status == 200
        (record,) = server.request_log
    # Without the messages the prompt is the head (the billing header is not counted).
    assert record.head_tokens == prompt_tokens({**body, "messages": []})
    assert 0 < record.head_tokens < record.prompt_tokens
