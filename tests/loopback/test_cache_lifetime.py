"""The prompt cache's lifetime on the loopback: 5 minutes or an hour, in scaled time."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from mala_tui.cli import main
from mala_tui.loopback import LoopbackServer, Scenario
from mala_tui.loopback.request_log import cost_units
from tests.loopback.loopback_bodies import Conversation, read_input

SCENARIO = Scenario.model_validate(
    {
        "name": "waiting",
        "task": "Read three files.",
        "final_answer": "Read.",
        "time_scale": 60,
        "steps": [{"tool": "Read", "path": "f{i}.txt", "count": 3}],
    }
)


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def three_requests(server: LoopbackServer, clock: Clock, gaps: list[float]) -> None:
    """The same growing conversation, `gaps` real seconds apart."""
    talk = Conversation(SCENARIO.task)
    async with aiohttp.ClientSession() as http:
        url = server.base_url + "/v1/messages"
        for number, gap in enumerate([0.0, *gaps], start=1):
            clock.now += gap
            talk.call("Read", read_input(f"f{number}.txt"), result="x" * 20_000)
            async with http.post(url, json=talk.body(stream=False)) as response:
                assert response.status == 200


def new_server(clock: Clock, **options: Any) -> LoopbackServer:
    return LoopbackServer(SCENARIO, response_delay_s=0, clock=clock, **options)


async def test_a_wait_past_the_lifetime_in_scaled_time_rewrites_the_whole_prompt() -> None:
    clock = Clock()
    async with new_server(clock) as server:
        # At 60x: 4 s are 4 simulated minutes (warm); 6 s more are 6 minutes (cold).
        await three_requests(server, clock, [4.0, 6.0])
    first, warm, cold = server.request_log
    assert warm.cache_read_input_tokens == first.prompt_tokens
    assert cold.cache_read_input_tokens == 0
    assert cold.cache_creation_input_tokens == cold.prompt_tokens
    assert server.time_scale == 60 and server.cache_ttl_s == 300


async def test_the_hour_cache_stays_warm_and_its_writes_cost_twice_the_input() -> None:
    clock = Clock()
    async with new_server(clock, cache_ttl_s=3600) as server:
        await three_requests(server, clock, [4.0, 6.0])
    first, _, later = server.request_log
    assert later.cache_read_input_tokens > first.prompt_tokens
    assert later.cache_write_price == 2.0
    written = later.cache_creation_input_tokens
    assert cost_units(later) == pytest.approx(
        0.1 * later.cache_read_input_tokens + 2.0 * written + 5 * later.output_tokens
    )


async def test_the_server_time_scale_wins_over_the_scenarios() -> None:
    clock = Clock()
    async with new_server(clock, time_scale=1.0) as server:
        await three_requests(server, clock, [4.0, 6.0])
    assert server.request_log[-1].cache_read_input_tokens > 0


def test_scenarios_that_scale_time_differently_need_one_scale_for_the_server() -> None:
    other = SCENARIO.model_copy(update={"name": "other", "time_scale": 1.0})
    with pytest.raises(ValueError, match="scale time differently"):
        LoopbackServer([SCENARIO, other])
    assert LoopbackServer([SCENARIO, other], time_scale=10).time_scale == 10
    with pytest.raises(ValueError, match="lifetime"):
        LoopbackServer(SCENARIO, cache_ttl_s=0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cache-ttl", "0"], "--cache-ttl: 0: must be above 0"),
        (["--cache-ttl", "soon"], "is not a number of seconds"),
        (["--time-scale", "-1"], "--time-scale: -1: must be above 0"),
        (["--compact-at", "1000"], "compacts at 50000 input tokens at the least"),
    ],
)
def test_bad_cache_options_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["loopback", "serve", "--scenario", "quickstart", *argv])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
