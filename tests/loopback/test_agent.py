"""The scripted agent's decision rule, fed request bodies directly (no server, no CLI)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from mala_tui.loopback.agent import ScriptedAgent
from mala_tui.loopback.request_view import parse_request
from mala_tui.loopback.scenario import Scenario
from mala_tui.resources import shipped_folder
from tests.loopback.loopback_bodies import WORKSPACE, Conversation, read_input

SCENARIO = Scenario.model_validate(
    {
        "name": "unit",
        "task": "Review and fix the service.",
        "final_answer": "All done.",
        "wind_down_notes": "NOTES.md",
        "steps": [
            {"tool": "Read", "path": "src/mod_{i}.py", "count": 3},
            {"tool": "Bash", "command": "pytest -q"},
            {"tool": "Edit", "path": "src/mod_1.py", "old": "VERSION = 1", "new": "VERSION = 2"},
            {"tool": "Write", "path": "REPORT.md", "content": "report\n"},
        ],
    }
)


def prompt(name: str, **values: Any) -> str:
    """A shipped prompt template, filled in the way mala-tui fills it."""
    template = shipped_folder("prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")
    return template.format(**values)


def decide(conversation: Conversation, scenario: Scenario = SCENARIO) -> Any:
    return ScriptedAgent(scenario).reply(parse_request(conversation.body()))


def do_steps(conversation: Conversation, count: int) -> list[str]:
    """Play the first ``count`` steps the way the agent would, returning the call ids."""
    ids = []
    for _ in range(count):
        reply = decide(conversation)
        call = reply.content[-1]
        ids.append(conversation.call(call["name"], call["input"], result="line\n" * 5))
    return ids


def test_first_request_plays_the_first_step_with_an_absolute_path() -> None:
    reply = decide(Conversation(SCENARIO.task))
    assert reply.kind == "tool_use"
    assert reply.stop_reason == "tool_use"
    assert reply.step.id == "s001"
    assert reply.content[-1]["name"] == "Read"
    assert reply.content[-1]["input"] == {"file_path": str(WORKSPACE / "src/mod_1.py")}


def test_visible_calls_count_as_done_and_the_next_step_follows() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 3)
    reply = decide(conversation)
    assert reply.step.id == "s004"
    assert reply.content[-1]["input"]["command"] == "pytest -q"
    assert reply.done_count == 3


def test_a_masked_result_still_counts_as_done() -> None:
    conversation = Conversation(SCENARIO.task)
    first, *_ = do_steps(conversation, 2)
    conversation.mask(first, "[Read result masked -- src/mod_1.py, 5 lines]")
    request = parse_request(conversation.body())
    assert request.masked_placeholders == 1
    step = ScriptedAgent(SCENARIO).reply(request).step
    assert step is not None
    assert step.id == "s003"


def test_an_error_result_is_not_done_and_the_step_is_tried_again() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.call(
        "Read", read_input("src/mod_1.py"), "<tool_use_error>boom</tool_use_error>", is_error=True
    )
    assert decide(conversation).step.id == "s001"


def test_a_step_failing_three_times_is_given_up() -> None:
    conversation = Conversation(SCENARIO.task)
    for _ in range(3):
        conversation.call("Read", read_input("src/mod_1.py"), "boom", is_error=True)
    assert decide(conversation).step.id == "s002"


def test_paths_are_compared_relative_to_the_workspace() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.call("Read", {"file_path": "src/./mod_1.py"})
    conversation.call("Read", {"file_path": str(WORKSPACE / "src/mod_2.py")})
    assert decide(conversation).step.id == "s003"


def test_the_workspace_falls_back_to_the_configured_one() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.messages[0]["content"] = [{"type": "text", "text": SCENARIO.task}]
    fallback = Path("/elsewhere")
    reply = ScriptedAgent(SCENARIO, fallback_workspace=fallback).reply(
        parse_request(conversation.body())
    )
    assert reply.content[-1]["input"]["file_path"] == "/elsewhere/src/mod_1.py"


@pytest.mark.parametrize(
    ("line", "done"),
    [
        ("- Read src/mod_1.py", True),
        (f"Called Read on {WORKSPACE}/src/mod_1.py", True),
        ("* read `src/mod_1.py` (done)", True),
        ("- Read src/mod_1.pyc", False),
        ("- Read other/src/mod_1.py", False),
        ("- Edit src/mod_1.py", False),
        ("src/mod_1.py", False),
        ("Next: read src/mod_1.py again before edit src/mod_1.py.", False),
        ("Agent: Next: read src/mod_1.py.", False),
    ],
)
def test_one_line_naming_tool_and_argument_records_a_step(line: str, done: bool) -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(f"Notes from before:\n{line}\n")
    assert (decide(conversation).step.id != "s001") is done


def test_bash_steps_are_recorded_by_their_command() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(
        "- Read src/mod_1.py\n- Read src/mod_2.py\n- Read src/mod_3.py\nBash: pytest -q\n"
    )
    reply = decide(conversation)
    assert reply.content[-1]["name"] == "Read"  # the Edit needs its file read first
    assert reply.note.startswith("read src/mod_1.py again")
    assert reply.step.id == "s001"


def test_plan_sections_do_not_record_steps() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(
        "## Completed Work\n- Read src/mod_1.py\n\n## Remaining Tasks\n1. Read src/mod_2.py\n"
        "Pending Tasks:\n- Bash: pytest -q\n"
    )
    assert decide(conversation).step.id == "s002"


def test_an_edit_is_preceded_by_a_read_of_its_file_when_none_is_visible() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(
        "- Read src/mod_1.py\n- Read src/mod_2.py\n- Read src/mod_3.py\n- Bash: pytest -q"
    )
    reread = decide(conversation)
    assert reread.content[-1]["name"] == "Read"
    conversation.call("Read", reread.content[-1]["input"], "1\tVERSION = 1\n")
    edit = decide(conversation)
    assert edit.step.id == "s005"
    assert edit.content[-1]["input"]["old_string"] == "VERSION = 1"


def test_an_edit_already_visible_in_the_file_is_not_made_again() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.user_text("- Read src/mod_2.py\n- Read src/mod_3.py\n- Bash: pytest -q")
    conversation.call("Read", read_input("src/mod_1.py"), "1\tVERSION = 2\n")
    assert decide(conversation).step.id == "s006"


def test_a_write_refused_for_an_unread_file_is_retried_after_reading_it() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 5)
    write = decide(conversation)
    assert write.step.id == "s006"
    conversation.call(
        "Write",
        write.content[-1]["input"],
        "<tool_use_error>File has not been read yet.</tool_use_error>",
        is_error=True,
    )
    read = decide(conversation)
    assert read.content[-1]["name"] == "Read"
    assert read.content[-1]["input"]["file_path"] == str(WORKSPACE / "REPORT.md")
    conversation.call("Read", read.content[-1]["input"], "1\treport\n")
    assert decide(conversation).step.id == "s006"


def test_all_steps_visible_gives_the_final_answer() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 6)
    reply = decide(conversation)
    assert reply.kind == "final"
    assert reply.stop_reason == "end_turn"
    assert reply.content == ({"type": "text", "text": "All done."},)


def checkpoint_request() -> str:
    return prompt("checkpoint_request", percent=91, tokens_used=182000, window=200000)


def test_the_checkpoint_request_gets_a_checkpoint_of_what_is_visible() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 2)
    conversation.assistant_text("Working.")
    conversation.user_text(checkpoint_request())
    reply = decide(conversation)
    assert reply.kind == "checkpoint"
    assert reply.stop_reason == "end_turn"
    assert all(block["type"] == "text" for block in reply.content)
    text = reply.content[0]["text"]
    assert text.startswith("<checkpoint>\n") and text.endswith("\n</checkpoint>")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Goal",
        "## Completed Work",
        "## Remaining Tasks",
        "## Do Not Redo",
        "## Key Decisions",
    ]
    completed = text.split("## Completed Work\n")[1].split("\n\n")[0]
    assert completed == "- Read src/mod_1.py\n- Read src/mod_2.py"


@pytest.mark.parametrize(
    ("style", "pattern"),
    [
        ("untagged", r"^## Goal\n"),
        ("code_fence", r"^```xml\n<checkpoint>\n[\s\S]*</checkpoint>\n```$"),
    ],
)
def test_checkpoint_misbehaviour_switches(style: str, pattern: str) -> None:
    scenario = SCENARIO.model_copy(update={"checkpoint_style": style})
    conversation = Conversation(SCENARIO.task)
    conversation.user_text(checkpoint_request())
    text = decide(conversation, scenario).content[0]["text"]
    assert re.search(pattern, text)
    if style == "untagged":
        assert "<checkpoint>" not in text


def test_a_fresh_session_seeded_with_the_agents_checkpoint_skips_done_work() -> None:
    old = Conversation(SCENARIO.task)
    do_steps(old, 4)
    old.user_text(checkpoint_request())
    checkpoint = decide(old).content[0]["text"]
    fresh = Conversation(
        prompt("continuation", continuation_number=1, checkpoint=checkpoint, carryover="(none)")
    )
    reply = decide(fresh)
    assert reply.content[-1]["name"] == "Read"  # re-read before the Edit (s005)
    assert reply.step.id == "s001"
    assert reply.kind == "tool_use"


def test_a_fresh_session_without_a_checkpoint_starts_over() -> None:
    assert decide(Conversation(SCENARIO.task)).step.id == "s001"


def test_wind_down_writes_notes_then_answers_briefly() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 2)
    conversation.assistant_text("Working.")
    conversation.user_text(prompt("wind_down", percent=91, tokens_left=18000))
    notes = decide(conversation)
    assert notes.kind == "wind_down"
    assert notes.content[-1]["name"] == "Write"
    assert notes.content[-1]["input"]["file_path"] == str(WORKSPACE / "NOTES.md")
    assert "- Read src/mod_2.py" in notes.content[-1]["input"]["content"]
    conversation.call("Write", notes.content[-1]["input"], "File created successfully")
    answer = decide(conversation)
    assert answer.kind == "wind_down"
    assert answer.stop_reason == "end_turn"
    assert "2 of 6 steps are done" in answer.content[0]["text"]


def test_resume_prompts_continue_with_the_next_step() -> None:
    conversation = Conversation(SCENARIO.task)
    ids = do_steps(conversation, 3)
    for call_id in ids:
        conversation.mask(call_id, "[Read result masked -- src/mod.py, 5 lines]")
    conversation.assistant_text("Reading.")
    conversation.user_text(prompt("mask_resume", masked_count=3))
    assert decide(conversation).step.id == "s004"
    conversation.user_text(prompt("idle_resume", session_name="unit"))
    assert decide(conversation).step.id == "s004"


COMPACTION_REQUEST = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n"
    "- Your entire response must be plain text: an <analysis> block followed by a <summary> "
    "block.\n\nYour task is to create a detailed summary of the conversation so far."
)


def test_the_clis_compaction_request_gets_analysis_and_summary() -> None:
    conversation = Conversation(SCENARIO.task)
    do_steps(conversation, 3)
    conversation.messages[-1]["content"].append({"type": "text", "text": COMPACTION_REQUEST})
    reply = decide(conversation)
    assert reply.kind == "compaction_summary"
    text = reply.content[0]["text"]
    assert re.fullmatch(r"<analysis>\n[\s\S]+\n</analysis>\n\n<summary>\n[\s\S]+\n</summary>", text)
    summary = text.split("<summary>")[1]
    after = Conversation(
        "This session is being continued from a previous conversation that ran out of context."
        f"\n\nSummary:\n{summary}"
    )
    assert decide(after).step.id == "s004"


def test_recognition_is_case_insensitive_and_ignores_system_reminders() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.messages[0]["content"].append(
        {"type": "text", "text": "<system-reminder>Please wrap up.</system-reminder>"}
    )
    assert decide(conversation).kind == "tool_use"
    conversation.user_text("please WRAP UP now")
    assert decide(conversation).kind == "wind_down"


def test_the_workspace_is_found_in_a_tool_result_after_the_clis_compaction() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "This session continues from a summary."}],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Read",
                        "input": {"file_path": f"{WORKSPACE}/src/mod_1.py"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [
                            {"type": "text", "text": "1\tcode"},
                            {
                                "type": "text",
                                "text": f"<system-reminder>\nPrimary working directory: {WORKSPACE}\n</system-reminder>",
                            },
                        ],
                    }
                ],
            },
        ],
    }
    view = parse_request(body)
    assert view.workspace == WORKSPACE
    # The absolute path of the Read is now the scenario's src/mod_1.py: step 1 is done.
    step = ScriptedAgent(SCENARIO).reply(view).step
    assert step is not None
    assert step.id == "s002"
