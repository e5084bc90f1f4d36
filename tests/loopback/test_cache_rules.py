"""The API's rules for cache breakpoints, as the loopback keeps them: at most four in a
request, and a cached prefix found only within 20 blocks of a breakpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from mala_tui.loopback import LoopbackServer, Scenario
from mala_tui.loopback.api_errors import MAX_BREAKPOINTS, breakpoints_in
from mala_tui.loopback.cache import PromptCache
from mala_tui.loopback.tokens import PromptBlock
from tests.loopback.loopback_bodies import Conversation

SCENARIO = Scenario.model_validate(
    {
        "name": "unit",
        "task": "Read it.",
        "final_answer": "Done.",
        "steps": [{"tool": "Read", "path": "a{i}.txt", "count": 6}],
    }
)


def marked(body: dict[str, Any], extra: int) -> dict[str, Any]:
    """The body with `extra` more cache_control markers on its earliest message blocks."""
    messages = [dict(m, content=[dict(b) for b in m["content"]]) for m in body["messages"]]
    blocks = [block for message in messages for block in message["content"]]
    for block in blocks[:extra]:
        block["cache_control"] = {"type": "ephemeral"}
    return {**body, "messages": messages}


async def test_a_request_with_more_than_four_breakpoints_is_refused_as_the_api_does(
    tmp_path: Path,
) -> None:
    conversation = Conversation(SCENARIO.task)
    for index in range(3):
        conversation.call("Read", {"file_path": f"/work/ws/{index}.txt"}, "x" * 400)
    body = conversation.body()
    own = breakpoints_in(body)
    assert own == 3  # the CLI's shape: two system blocks and the last message block
    async with (
        LoopbackServer(SCENARIO, response_delay_s=0, workspace=tmp_path) as server,
        aiohttp.ClientSession() as http,
    ):
        url = server.base_url + "/v1/messages"
        async with http.post(url, json=marked(body, MAX_BREAKPOINTS - own)) as answered:
            assert answered.status == 200
        async with http.post(url, json=marked(body, MAX_BREAKPOINTS - own + 1)) as refused:
            assert refused.status == 400
            error = (await refused.json())["error"]
    assert error == {
        "type": "invalid_request_error",
        "message": "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    }
    # A refused request plays nothing: the scripted agent answered only the first.
    assert len(server.request_log) == 1


def blocks(names: list[str], marked: frozenset[str] = frozenset()) -> list[PromptBlock]:
    """A head of 2,000 tokens (its own breakpoint), then one 100-token block per name, the
    last one a breakpoint as the CLI puts it, and the `marked` ones too."""
    head = PromptBlock("system", b"head", 2_000, breakpoint=True)
    body = [
        PromptBlock("messages", name.encode(), 100, name in marked or i == len(names) - 1)
        for i, name in enumerate(names)
    ]
    return [head, *body]


def test_a_marker_kept_on_a_block_makes_its_prefix_read_after_a_later_change() -> None:
    cache = PromptCache()
    early = [f"step{i}" for i in range(10)]
    cache.bill(blocks(early, marked=frozenset({"step5"})), now=0.0)
    later = [*early[:9], "masked9", *(f"new{i}" for i in range(30))]
    # The marker is still on step 5: the prefix up to it is found there, 30 blocks back.
    split = cache.bill(blocks(later, marked=frozenset({"step5"})), now=1.0)
    assert split.cache_read_input_tokens == 2_000 + 6 * 100
    # Without it, the same prefix is cached but too far from any breakpoint to be found.
    fresh = PromptCache()
    fresh.bill(blocks(early, marked=frozenset({"step5"})), now=0.0)
    assert fresh.bill(blocks(later), now=1.0).cache_read_input_tokens == 2_000


def test_within_20_blocks_of_the_last_breakpoint_the_previous_prompt_is_read() -> None:
    cache = PromptCache()
    first = [f"step{i}" for i in range(10)]
    cache.bill(blocks(first), now=0.0)
    nineteen_more = [*first, *(f"new{i}" for i in range(19))]
    assert cache.bill(blocks(nineteen_more), now=1.0).cache_read_input_tokens == 2_000 + 1_000
    cache = PromptCache()
    cache.bill(blocks(first), now=0.0)
    twenty_more = [*first, *(f"new{i}" for i in range(20))]
    assert cache.bill(blocks(twenty_more), now=1.0).cache_read_input_tokens == 2_000
