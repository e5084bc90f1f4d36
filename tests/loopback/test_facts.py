"""Facts a step needs from earlier results: re-read when not visible, logged and priced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mala_tui.core.prompts import PromptKind
from mala_tui.loopback import LoopbackServer, Scenario, ScenarioError, load_scenario, summarize
from mala_tui.loopback.agent import ScriptedAgent, asked_to_restate
from mala_tui.loopback.request_view import CLEARED_PLACEHOLDER, parse_request
from mala_tui.loopback.tokens import text_tokens
from mala_tui.prompt_files import load_prompts
from tests.loopback.loopback_bodies import Conversation, read_input

SIGNATURE = "def charge_card(order_id: str, amount_cents: int) -> Receipt:"
TIMEOUT = "request_timeout_ms = 7350"

SCENARIO = Scenario.model_validate(
    {
        "name": "facts",
        "task": "Wire the billing call.",
        "final_answer": "Wired.",
        "workspace": {
            "files": [
                {"path": "src/billing.py", "size": 4000, "kind": "python"},
                {"path": "conf/service.toml", "content": f"[http]\n{TIMEOUT}\n"},
                {"path": "src/other_{i}.py", "count": 2, "size": 2000, "kind": "python"},
            ]
        },
        "facts": [
            {"id": "charge-signature", "path": "src/billing.py", "text": SIGNATURE, "at": 0.25},
            {"id": "timeout", "path": "conf/service.toml", "text": TIMEOUT, "source": "config"},
        ],
        "steps": [
            {"tool": "Read", "path": "src/billing.py"},
            {"tool": "Bash", "command": "cat conf/service.toml", "id": "config"},
            {"tool": "Read", "path": "src/other_{i}.py", "count": 2},
            {
                "tool": "Write",
                "path": "src/checkout.py",
                "content": "charge_card(order.id, order.total_cents)\n",
                "needs": ["charge-signature", "timeout"],
            },
        ],
    }
)


def decide(conversation: Conversation, scenario: Scenario = SCENARIO) -> Any:
    return ScriptedAgent(scenario).reply(parse_request(conversation.body()))


def files() -> dict[str, str]:
    return dict(SCENARIO.workspace_files())


def read_results() -> list[str]:
    """The results of the four steps before the Write: each file's real content."""
    content = files()
    return [
        content["src/billing.py"],
        content["conf/service.toml"],
        content["src/other_1.py"],
        content["src/other_2.py"],
    ]


def play_reads(conversation: Conversation) -> list[str]:
    """The four steps before the Write, each with the file's real content as its result."""
    ids = []
    for result in read_results():
        call = decide(conversation).content[-1]
        ids.append(conversation.call(call["name"], call["input"], result=result))
    return ids


def test_a_generated_file_holds_its_fact_line_and_keeps_its_size() -> None:
    content = files()["src/billing.py"]
    assert len(content) == 4000
    lines = content.splitlines()
    assert lines.count(SIGNATURE) == 1
    assert abs(lines.index(SIGNATURE) - len(lines) // 4) <= 1


def test_with_every_fact_visible_the_step_is_played() -> None:
    talk = Conversation(SCENARIO.task)
    play_reads(talk)
    reply = decide(talk)
    assert (reply.step.tool, reply.reread) == ("Write", None)


@pytest.mark.parametrize("hide", ["masked", "cleared"])
def test_a_fact_hidden_in_its_result_is_re_read_first(hide: str) -> None:
    talk = Conversation(SCENARIO.task)
    ids = play_reads(talk)
    placeholder = (
        "[Read result masked -- src/billing.py, 120 lines]"
        if hide == "masked"
        else CLEARED_PLACEHOLDER
    )
    talk.mask(ids[0], placeholder)
    reply = decide(talk)
    assert reply.reread == "charge-signature"
    assert reply.content[-1]["name"] == "Read"
    assert reply.content[-1]["input"] == read_input("src/billing.py")
    # Its result brings the line back: the Write goes ahead.
    talk.call("Read", reply.content[-1]["input"], result=files()["src/billing.py"])
    assert decide(talk).step.tool == "Write"


def test_the_re_read_replays_the_source_step_whatever_its_tool() -> None:
    talk = Conversation(SCENARIO.task)
    ids = play_reads(talk)
    talk.mask(ids[1], "[Bash result masked -- cat conf/service.toml, 2 lines]")
    reply = decide(talk)
    assert reply.reread == "timeout"
    assert reply.content[-1]["input"]["command"] == "cat conf/service.toml"


def test_a_fact_kept_in_a_summary_needs_no_re_read() -> None:
    talk = Conversation(SCENARIO.task)
    ids = play_reads(talk)
    talk.mask(ids[0], CLEARED_PLACEHOLDER)
    talk.user_text(f"Key facts so far:\n- {SIGNATURE}")
    assert decide(talk).step.tool == "Write"


def test_a_source_seen_in_full_without_the_line_is_not_re_read_forever() -> None:
    talk = Conversation(SCENARIO.task)
    content = files()
    for path in ("src/billing.py", "conf/service.toml", "src/other_1.py", "src/other_2.py"):
        call = decide(talk).content[-1]
        shown = "output cut short" if path == "src/billing.py" else content[path]
        talk.call(call["name"], call["input"], result=shown)
    assert decide(talk).step.tool == "Write"


COMPACTION_REQUEST = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n<summary> tags please."
)


def test_a_compaction_summary_keeps_current_work_and_loses_older_details() -> None:
    talk = Conversation(SCENARIO.task)
    play_reads(talk)
    talk.messages[-1]["content"].append({"type": "text", "text": COMPACTION_REQUEST})
    summary = decide(talk).content[0]["text"].split("<summary>")[1]
    # The signature (first result) and the timeout (second) are older than the two latest
    # results and no done step has used them yet: the summary does not carry them.
    assert SIGNATURE not in summary
    assert TIMEOUT not in summary
    after = Conversation(f"Continued from a summary.\n\nSummary:\n{summary}")
    reply = decide(after)
    assert reply.reread == "charge-signature"


def test_a_summary_keeps_a_fact_a_done_step_used() -> None:
    scenario = Scenario.model_validate(
        {
            **SCENARIO.model_dump(exclude={"steps"}),
            "steps": [
                *SCENARIO.model_dump()["steps"],
                {"tool": "Read", "path": "src/other_{i}.py", "count": 2, "start": 3},
            ],
        }
    )
    talk = Conversation(scenario.task)
    play_reads(talk)
    call = decide(talk, scenario).content[-1]
    talk.call(call["name"], call["input"], result="written")
    for _ in range(2):
        call = decide(talk, scenario).content[-1]
        talk.call(call["name"], call["input"], result="other\n" * 20)
    talk.messages[-1]["content"].append({"type": "text", "text": COMPACTION_REQUEST})
    summary = decide(talk, scenario).content[0]["text"]
    assert SIGNATURE in summary
    assert TIMEOUT in summary


def test_a_checkpoint_follows_the_same_rule() -> None:
    talk = Conversation(SCENARIO.task)
    play_reads(talk)
    talk.user_text("Write a checkpoint now: wrap it in <checkpoint> tags.")
    text = decide(talk).content[0]["text"]
    assert "<checkpoint>" in text
    assert SIGNATURE not in text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"facts": [{"id": "x", "path": "nope.txt", "text": "a line of text"}]}, "not a workspace"),
        (
            {"facts": [{"id": "x", "path": "conf/service.toml", "text": "not in the file"}]},
            "not in the given content",
        ),
        (
            {
                "facts": [
                    {"id": "x", "path": "src/other_1.py", "text": "a fact line", "source": "zz"}
                ]
            },
            "no step has id 'zz'",
        ),
        (
            {
                "facts": [
                    {"id": "x", "path": "src/other_1.py", "text": "a fact line", "source": "s005"}
                ]
            },
            "shows no file content",
        ),
        ({"steps_needs": ["nope"]}, "needs 'nope', which no fact has as id"),
        ({"first_needs": ["timeout"]}, "does not come before it"),
    ],
)
def test_bad_facts_are_refused_naming_what_is_wrong(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    data = json.loads(SCENARIO.model_dump_json())
    if "steps_needs" in change:
        data["steps"][-1]["needs"] = change["steps_needs"]
    elif "first_needs" in change:
        data["steps"][0]["needs"] = change["first_needs"]
    else:
        data.update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match=message):
        load_scenario(path)


async def test_the_server_logs_and_prices_each_re_read() -> None:
    talk = Conversation(SCENARIO.task)
    ids = play_reads(talk)
    talk.mask(ids[0], CLEARED_PLACEHOLDER)
    async with (
        LoopbackServer(SCENARIO, response_delay_s=0, token_ratio=2.0) as server,
        aiohttp.ClientSession() as http,
    ):
        url = server.base_url + "/v1/messages"
        async with http.post(url, json=talk.body(stream=False)) as response:
            call = (await response.json())["content"][-1]
        billing = files()["src/billing.py"]
        # Answered under the id the server gave the call, as the CLI answers it.
        talk.messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": billing}
        talk.messages.append({"role": "user", "content": [result]})
        async with http.post(url, json=talk.body(stream=False)) as response:
            assert (await response.json())["content"][-1]["name"] == "Write"
    first, second = server.request_log
    assert (first.reread, first.redone, first.step_id) == ("charge-signature", False, "s001")
    assert (second.reread, second.reread_tokens) == (None, text_tokens(billing, 2.0))
    totals = summarize(server.request_log)
    assert (totals.rereads, totals.reread_tokens) == (1, text_tokens(billing, 2.0))


def test_a_re_read_fact_is_noted_so_clearing_it_again_costs_no_second_re_read() -> None:
    talk = Conversation(SCENARIO.task)
    ids = play_reads(talk)
    talk.mask(ids[0], CLEARED_PLACEHOLDER)
    talk.mask(ids[1], CLEARED_PLACEHOLDER)
    first = decide(talk)
    assert first.reread == "charge-signature"
    reread_id = talk.call("Read", first.content[-1]["input"], result=files()["src/billing.py"])
    second = decide(talk)
    assert second.reread == "timeout"
    assert f"Noted (charge-signature): {SIGNATURE}" in second.content[0]["text"]
    talk.messages.append({"role": "assistant", "content": list(second.content)})
    talk.messages.append(
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": second.content[-1]["id"],
                    "content": files()["conf/service.toml"],
                }
            ],
        }
    )
    # The API clears the first re-read's result too: the agent has the line in its own words.
    talk.mask(reread_id, CLEARED_PLACEHOLDER)
    assert decide(talk).step.tool == "Write"


def test_a_fact_fetched_again_three_times_is_not_fetched_a_fourth() -> None:
    talk = Conversation(SCENARIO.task)
    ids = play_reads(talk)
    talk.mask(ids[0], CLEARED_PLACEHOLDER)
    for _ in range(3):
        reply = decide(talk)
        assert reply.reread == "charge-signature"
        talk.call("Read", reply.content[-1]["input"], result=CLEARED_PLACEHOLDER)
    assert decide(talk).step.tool == "Write"


def test_an_agent_told_of_masking_restates_what_it_sees_and_re_reads_nothing() -> None:
    notice = load_prompts().render(PromptKind.MASKING_NOTICE)
    talk = Conversation(f"{SCENARIO.task}\n\n{notice}")
    assert asked_to_restate(parse_request(talk.body()))
    ids, said = [], []
    for result in read_results():
        reply = decide(talk)
        said.append(reply.content[0]["text"])
        talk.assistant_text(reply.content[0]["text"])
        ids.append(talk.call(reply.content[-1]["name"], reply.content[-1]["input"], result=result))
    # Each fact in the reply after the result that showed it, once: the signature after
    # the billing module, the timeout after the config; nothing after the other modules.
    write = decide(talk)
    said.append(write.content[0]["text"])
    noted = [[line for line in text.splitlines() if line.startswith("Noted")] for text in said]
    assert noted == [
        [],
        [f"Noted (charge-signature): {SIGNATURE}"],
        [f"Noted (timeout): {TIMEOUT}"],
        [],
        [],
    ]
    # Masked, the results no longer show the facts; the agent's words still do.
    talk.mask(ids[0], CLEARED_PLACEHOLDER)
    talk.mask(ids[1], CLEARED_PLACEHOLDER)
    assert (write.step.tool, write.reread) == ("Write", None)
    after = decide(talk)
    assert (after.step.tool, after.reread) == ("Write", None)


def test_a_prompt_that_asks_nothing_is_not_taken_as_the_notice() -> None:
    talk = Conversation(f"{SCENARIO.task} Use placeholders in the template.")
    assert not asked_to_restate(parse_request(talk.body()))
