"""The scripted agent obeys an operator's message: extra steps first, skipped steps left out."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from mala_tui.core.operator_messages import MessageQueue, messages_block
from mala_tui.loopback import LoopbackServer
from mala_tui.loopback.operator_requests import CLOSING, MARKER
from tests.loopback.loopback_bodies import WORKSPACE, Conversation, read_input
from tests.loopback.test_agent import (
    COMPACTION_REQUEST,
    SCENARIO,
    checkpoint_request,
    decide,
    do_steps,
    prompt,
)


def message(*texts: str) -> str:
    """The prompt mala-tui sends for these messages, queued and taken as it does."""
    queue = MessageQueue()
    for text in texts:
        queue.add(0.0, text)
    return prompt("operator_message", messages=messages_block(queue.take()))


def play(conversation: Conversation, result: str = "ok\n") -> Any:
    """Decide, and answer the reply's tool call with ``result``; returns the reply."""
    reply = decide(conversation)
    call = reply.content[-1]
    conversation.call(call["name"], call["input"], result)
    return reply


def played(conversation: Conversation, count: int) -> list[str]:
    """The step ids of the next ``count`` replies, each played with a good result."""
    return [play(conversation).step.id for _ in range(count)]


def test_an_extra_step_is_played_next_and_then_not_again() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 2)
    conversation.assistant_text("Reading the modules.")
    conversation.user_text(message("Please also do this:\n- Bash: echo hi > operator.txt"))
    extra = decide(conversation)
    assert extra.operator
    assert extra.step.id == "operator-1"
    assert extra.step.label == "Bash: echo hi > operator.txt (asked by the operator)"
    assert extra.content[-1]["name"] == "Bash"
    assert extra.content[-1]["input"]["command"] == "echo hi > operator.txt"
    conversation.call("Bash", extra.content[-1]["input"], "")
    following = [play(conversation) for _ in range(4)]
    assert [(reply.step.id, reply.operator) for reply in following] == [
        ("s003", False),
        ("s004", False),
        ("s005", False),
        ("s006", False),
    ]
    assert decide(conversation).kind == "final"


def test_extra_steps_take_every_tool_form_in_order_with_workspace_relative_paths() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(
        message(
            "Before anything else:\n"
            f"1. Read: {WORKSPACE}/docs/notes.md\n"
            "2) grep: `TODO`\n"
            "* Glob: **/*.py\n"
            "Then carry on."
        )
    )
    replies = [play(conversation) for _ in range(4)]
    assert [(r.step.id, r.content[-1]["name"], r.operator) for r in replies] == [
        ("operator-1", "Read", True),
        ("operator-2", "Grep", True),
        ("operator-3", "Glob", True),
        ("s001", "Read", False),
    ]
    assert replies[0].step.primary == "docs/notes.md"
    assert replies[0].content[-1]["input"] == read_input("docs/notes.md")
    assert replies[1].content[-1]["input"] == {"pattern": "TODO", "path": str(WORKSPACE)}
    assert replies[2].content[-1]["input"]["pattern"] == "**/*.py"


def test_an_extra_step_repeating_done_work_is_done_again_once() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 3)
    conversation.user_text(message("Read: src/mod_1.py"))
    assert played(conversation, 2) == ["operator-1", "s004"]


def test_a_failing_extra_step_is_given_up_after_three_attempts() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(message("Bash: false"))
    for _ in range(3):
        reply = decide(conversation)
        assert reply.step.id == "operator-1"
        conversation.call("Bash", reply.content[-1]["input"], "Exit code 1", is_error=True)
    assert decide(conversation).step.id == "s001"


def test_the_messages_own_lines_are_not_records_of_done_work() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(message("You said you did these:\n- Read src/mod_1.py\nRead: REPORT.md"))
    assert played(conversation, 2) == ["operator-1", "s001"]


@pytest.mark.parametrize(
    "skip",
    ["Skip: s004", "- Skip: Bash: pytest -q", "skip: `s004`", "Skip: Bash pytest -q"],
)
def test_a_skipped_step_is_left_out_and_the_final_answer_says_so(skip: str) -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 1)
    conversation.user_text(message(f"No need to run the tests.\n{skip}"))
    assert played(conversation, 4) == ["s002", "s003", "s005", "s006"]
    final = decide(conversation)
    assert final.kind == "final"
    assert final.content[0]["text"] == (
        "All done.\n\n## Skipped at the Operator's Request\n- Skip: s004 (run pytest -q)"
    )


def test_a_skip_by_file_path_and_an_unknown_skip() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(message(f"Skip: Read: {WORKSPACE}/src/mod_2.py\nSkip: s999"))
    assert played(conversation, 2) == ["s001", "s003"]


def test_a_step_already_done_stays_done_when_skipped() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 2)
    conversation.user_text(message("Skip: s002"))
    conversation.user_text(checkpoint_request())
    text = decide(conversation).content[0]["text"]
    assert "- Read src/mod_2.py" in text.split("## Completed Work\n")[1].split("\n\n")[0]
    assert "Skipped at the Operator's Request" not in text


def test_several_messages_are_obeyed_in_order_and_an_old_one_still_holds() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(message("Bash: echo one", "Skip: s003\nBash: echo two"))
    assert played(conversation, 4) == ["operator-1", "operator-2", "s001", "s002"]
    conversation.assistant_text("Carrying on.")
    conversation.user_text(message("Glob: *.md"))
    # The first prompt's skip holds three turns on, and its steps are not played again.
    assert played(conversation, 2) == ["operator-3", "s004"]


def test_a_message_at_the_end_of_a_continuation_prompt() -> None:
    old = Conversation(SCENARIO.task)
    do_steps(old, 2)
    old.user_text(checkpoint_request())
    checkpoint = decide(old).content[0]["text"]
    continuation = prompt(
        "continuation", continuation_number=1, checkpoint=checkpoint, carryover="(none)"
    )
    # The checkpoint above the message lists src/mod_2.py as read: asked now, read again.
    asked = message("- Bash: echo hi\n- Read: src/mod_2.py\nSkip: s003")
    fresh = Conversation(f"{continuation}\n\n{asked}")
    assert played(fresh, 3) == ["operator-1", "operator-2", "s004"]


def test_a_message_carried_over_with_the_step_that_followed_is_not_played_again() -> None:
    carried = message("Bash: echo hi")
    carryover = (
        f"User: {carried}\nAgent: Next: Bash: echo hi (asked by the operator).\n"
        "Tool call: Bash: echo hi\nTool result:\nhi"
    )
    continuation = prompt(
        "continuation", continuation_number=1, checkpoint="(none)", carryover=carryover
    )
    assert decide(Conversation(continuation)).step.id == "s001"
    pending = prompt(
        "continuation", continuation_number=1, checkpoint="(none)", carryover=f"User: {carried}"
    )
    assert decide(Conversation(pending)).step.id == "operator-1"


def test_without_the_marker_the_same_lines_keep_todays_meaning() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text("Notes:\n- Read src/mod_1.py\nBash: echo hi > operator.txt\nSkip: s002")
    reply = decide(conversation)
    assert (reply.step.id, reply.operator) == ("s002", False)


def test_skips_hold_in_a_session_seeded_with_the_checkpoint() -> None:
    old = Conversation(SCENARIO.task)
    do_steps(old, 1)
    old.user_text(message("Skip: s002\nSkip: Bash: pytest -q"))
    old.user_text(checkpoint_request())
    checkpoint = decide(old).content[0]["text"]
    assert checkpoint.endswith(
        "## Skipped at the Operator's Request\n"
        "- Skip: s002 (read src/mod_2.py)\n- Skip: s004 (run pytest -q)\n</checkpoint>"
    )
    remaining = checkpoint.split("## Remaining Tasks\n")[1].split("\n\n")[0]
    assert "s002" not in remaining and "s004" not in remaining
    fresh = Conversation(
        prompt("continuation", continuation_number=1, checkpoint=checkpoint, carryover="(none)")
    )
    assert played(fresh, 2) == ["s003", "s001"]  # s001: the Edit's file, read again


def test_skips_hold_after_the_clis_compaction() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(message("Skip: s001"))
    do_steps(conversation, 1)
    conversation.messages[-1]["content"].append({"type": "text", "text": COMPACTION_REQUEST})
    summary = decide(conversation).content[0]["text"]
    assert "7. Skipped at the Operator's Request:\n- Skip: s001 (read src/mod_1.py)" in summary
    after = Conversation(f"Summary:\n{summary.split('<summary>')[1]}")
    assert decide(after).step.id == "s003"


async def test_the_request_log_says_which_step_was_the_operators() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 1)
    async with (
        LoopbackServer(SCENARIO, response_delay_s=0) as server,
        aiohttp.ClientSession() as http,
    ):
        url = server.url_for(SCENARIO.name) + "/v1/messages"
        async with http.post(url, json=conversation.body(stream=False)) as response:
            assert response.status == 200
        # Asked for again after the server saw it done: the operator's, not redone work.
        conversation.user_text(message("Read: src/mod_1.py"))
        async with http.post(url, json=conversation.body(stream=False)) as response:
            assert response.status == 200
        records = server.request_log
    assert [(r.step_id, r.step_label, r.operator_step, r.redone) for r in records] == [
        ("s002", "read src/mod_2.py", False, False),
        ("operator-1", "Read src/mod_1.py (asked by the operator)", True, False),
    ]


def test_the_shipped_prompt_opens_with_the_marker_and_closes_as_expected() -> None:
    lines = message("Bash: echo hi").splitlines()
    assert lines[0].startswith(MARKER)
    assert lines[-1].startswith(CLOSING)
