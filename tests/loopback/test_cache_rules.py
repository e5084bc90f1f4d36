"""The API's rules for cache breakpoints, as the loopback keeps them: at most four in a
request, and a cached prefix found only within 20 blocks of a breakpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from mala_tui.loopback import LoopbackServer, Scenario
from mala_tui.loopback.api_errors import MAX_BREAKPOINTS, breakpoints_in
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
