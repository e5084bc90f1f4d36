"""Delegation: Agent steps, [[subagents]], the main agent waiting for reports, and the
server playing each subagent by its agent id (no CLI here: bodies built as the CLI's)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mala_tui.loopback import LoopbackServer, Scenario, ScenarioError, load_scenario
from mala_tui.loopback.agent import ScriptedAgent, ScriptedReply
from mala_tui.loopback.request_view import parse_request
from mala_tui.loopback.server import AGENT_ID_HEADER, PARENT_AGENT_ID_HEADER
from tests.loopback.loopback_bodies import WORKSPACE, Conversation, read_input

LAUNCHED = (
    "Async agent launched successfully.\nagentId: a123 (internal ID - do not mention to user.)"
)

SCENARIO = Scenario.model_validate(
    {
        "name": "deleg",
        "task": "Split the logs between two helpers.",
        "final_answer": "Summary: both helpers reported.",
        "steps": [
            {"tool": "Read", "path": "NOTES.md"},
            {"tool": "Agent", "subagent": "A", "description": "Logs 1-2"},
            {"tool": "Agent", "subagent": "B"},
        ],
        "subagents": [
            {
                "name": "A",
                "task": "Read logs 1-2.",
                "steps": [{"tool": "Read", "path": "logs/app-{i}.log", "count": 2}],
                "final_answer": "logs 1-2 are clean.\nDetails follow.",
            },
            {
                "name": "B",
                "task": "Count the lines of log 3.",
                "steps": [{"tool": "Bash", "command": "wc -l logs/app-3.log"}],
                "final_answer": "REPORT B: log 3 has 30 lines.",
                "fail": True,
            },
        ],
    }
)


def notification(report: str) -> str:
    """What Claude Code adds to the main agent's request when a background agent ends."""
    return (
        "<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n<task-notification>\n"
        "<task-id>a123</task-id>\n<status>completed</status>\n"
        f"<result>{report}</result>\n</task-notification>\n</system-reminder>"
    )


def decide(conversation: Conversation, scenario: Scenario = SCENARIO) -> ScriptedReply:
    return ScriptedAgent(scenario).reply(parse_request(conversation.body()))


def tool_call(reply: ScriptedReply) -> dict[str, Any]:
    call = reply.content[-1]
    assert call["type"] == "tool_use"
    return dict(call)


def launched_both() -> Conversation:
    """The main agent has read its notes and started both subagents in the background."""
    conversation = Conversation(SCENARIO.task)
    conversation.call("Read", read_input("NOTES.md"), result="notes")
    for _ in range(2):
        call = tool_call(decide(conversation))
        conversation.call(call["name"], call["input"], result=LAUNCHED)
    return conversation


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    return path


# -- the scenario file --------------------------------------------------------------------


def test_an_agent_step_calls_the_agent_tool_with_its_subagents_task() -> None:
    conversation = Conversation(SCENARIO.task)
    conversation.call("Read", read_input("NOTES.md"), result="notes")
    reply = decide(conversation)
    call = tool_call(reply)
    assert (reply.kind, reply.stop_reason, call["name"]) == ("tool_use", "tool_use", "Agent")
    assert call["input"] == {
        "description": "Logs 1-2",
        "prompt": "[subagent A] Read logs 1-2.",
        "subagent_type": "general-purpose",
        "run_in_background": True,
    }
    conversation.call("Agent", call["input"], result=LAUNCHED)
    view = parse_request(conversation.body())
    assert (view.calls[-1].name, view.primary_argument(view.calls[-1])) == ("Agent", "A")
    assert decide(conversation).content[-1]["input"]["prompt"].startswith("[subagent B] ")


def test_a_foreground_step_and_the_default_description() -> None:
    scenario = load_scenario("delegation-foreground")
    (agent_step,) = [step for step in scenario.plan() if step.tool == "Agent"]
    assert agent_step.tool_input(WORKSPACE)["run_in_background"] is False
    b_step = SCENARIO.plan()[2]
    assert b_step.tool_input(None)["description"] == "subagent B"
    assert b_step.done_line == "Agent B"


def test_the_tools_offered_cover_the_main_agent_and_its_subagents() -> None:
    assert SCENARIO.tools == ["Read", "Bash", "Agent"]
    assert load_scenario("delegation").tools == ["Read", "Glob", "Agent"]


def test_a_subagents_report_starts_with_its_marker_once_and_fail_says_so() -> None:
    a, b = SCENARIO.subagent("A"), SCENARIO.subagent("B")
    assert a is not None and b is not None
    assert a.final_answer == "REPORT A: logs 1-2 are clean.\nDetails follow."
    assert b.final_answer == "REPORT B: FAILED: log 3 has 30 lines."
    assert [step.done_line for step in a.plan()] == ["Read logs/app-1.log", "Read logs/app-2.log"]


def test_the_shipped_delegation_scenarios_load() -> None:
    background = load_scenario("delegation")
    assert background.subagent_names == ("A", "B")
    assert all(step.param("background") for step in background.plan() if step.tool == "Agent")
    reads = {
        name: [step.primary for step in scenario.plan()]
        for name in ("A", "B")
        if (scenario := background.subagent(name)) is not None
    }
    assert reads == {
        "A": [f"logs/app-{i}.log" for i in range(1, 5)],
        "B": [f"logs/app-{i}.log" for i in range(5, 9)],
    }
    assert background.response_delay_s == 0
    assert load_scenario("delegation-foreground").subagent_names == ("C",)


def test_the_shipped_sequential_failing_nested_and_filling_scenarios_load() -> None:
    sequential = load_scenario("delegation-sequential")
    assert [(s.primary, s.after, s.param("background")) for s in sequential.plan()[1:]] == [
        ("A", (), True),
        ("B", ("A",), True),
        ("C", ("B",), False),
    ]
    fails = load_scenario("delegation-fails").subagent("B")
    assert fails is not None and fails.final_answer.startswith("REPORT B: FAILED: ")
    nested = load_scenario("delegation-nested")
    assert nested.subagent_names == ("A", "N")
    assert [step.tool for step in nested.plan()] == ["Read", "Agent"]
    a = nested.subagent("A")
    assert a is not None and a.subagent_names == ("N",)
    (delegates,) = [step for step in a.plan() if step.tool == "Agent"]
    assert delegates.tool_input(WORKSPACE)["prompt"].startswith("[subagent N] ")
    assert delegates.param("background") is False
    fills = load_scenario("delegation-fills")
    helper = fills.subagent("F")
    assert helper is not None and len(helper.plan()) == 12
    sizes = {path: len(text) for path, text in fills.workspace_files()}
    assert sum(sizes[step.primary] for step in helper.plan()) > 800_000  # > 200K tokens
    assert len(fills.plan()) == 2


HEAD = """
name = "bad"
task = "t"
final_answer = "f"
"""
SUB_A = """
[[subagents]]
name = "A"
task = "read"
final_answer = "ok"
[[subagents.steps]]
tool = "Read"
path = "a.log"
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "Z"\n' + SUB_A,
            r"step s001: starts subagent 'Z', which no \[\[subagents\]\] entry names",
        ),
        (
            '[[steps]]\ntool = "Read"\npath = "x"\n' + SUB_A,
            r"subagents: no Agent step starts 'A'",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n'
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\nbackground = false\n' + SUB_A,
            r"steps.1: 'Agent A' repeats step 1",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n'
            + SUB_A
            + '[[subagents.steps]]\ntool = "Agent"\nsubagent = "A"\n',
            r"subagents.0.steps.1: subagent 'A' starts 'A', which no other \[\[subagents\]\]",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n'
            + SUB_A
            + '[[subagents.steps]]\ntool = "Agent"\nsubagent = "N"\n'
            + SUB_A.replace('"A"', '"N"'),
            r"subagents.0.steps.1: a subagent starts its own subagents in the foreground: "
            r"set background = false",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n'
            '[[steps]]\ntool = "Agent"\nsubagent = "N"\n'
            + SUB_A
            + '[[subagents.steps]]\ntool = "Agent"\nsubagent = "N"\nbackground = false\n'
            + SUB_A.replace('"A"', '"N"'),
            r"subagents.0.steps.1: subagent 'N' is started twice "
            r"\(by the main agent and by subagent 'A'\)",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n'
            + SUB_A
            + '[[subagents.steps]]\ntool = "Agent"\nsubagent = "N"\nbackground = false\n'
            + SUB_A.replace('"A"', '"N"')
            + '[[subagents.steps]]\ntool = "Agent"\nsubagent = "M"\nbackground = false\n'
            + SUB_A.replace('"A"', '"M"'),
            r"subagents.1: subagent 'N', started by subagent 'A', cannot start subagents of its "
            r"own \(one level of nesting\)",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\nafter = ["A"]\n' + SUB_A,
            r"step s001: after 'A', which no earlier Agent step starts",
        ),
        (
            '[[steps]]\ntool = "Read"\npath = "x"\nafter = ["A"]\n'
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n' + SUB_A,
            r"step s001: after 'A', which no earlier Agent step starts",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n' + SUB_A + SUB_A,
            r"subagents.1.name: subagent 'A' is defined twice",
        ),
        ('[[steps]]\ntool = "Agent"\n', r"steps.0.Agent.subagent: Field required"),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n' + SUB_A.replace('"A"', '"A B"'),
            r"subagents.0.name: String should match pattern",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\n' + SUB_A + 'needs = ["nope"]\n',
            r"subagents.0: step s001: needs 'nope', which no fact has as id",
        ),
        (
            '[[steps]]\ntool = "Agent"\nsubagent = "A"\nbackground = "yes"\n' + SUB_A,
            r"steps.0.Agent.background: Input should be a valid boolean",
        ),
    ],
)
def test_bad_delegation_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, body: str, message: str
) -> None:
    path = write(tmp_path, HEAD + body)
    with pytest.raises(ScenarioError, match=message) as caught:
        load_scenario(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert "\n" not in str(caught.value)


# -- the main agent -------------------------------------------------------------------------


def test_with_reports_missing_the_agent_says_it_waits_and_ends_its_turn() -> None:
    reply = decide(launched_both())
    assert (reply.kind, reply.stop_reason, reply.step) == ("waiting", "end_turn", None)
    assert reply.content == ({"type": "text", "text": "Waiting for 2 subagent(s) to report."},)


def test_a_notification_with_one_report_leaves_one_to_wait_for() -> None:
    conversation = launched_both()
    conversation.assistant_text("Waiting for 2 subagent(s) to report.")
    conversation.user_text(notification("REPORT B: FAILED: log 3 has 30 lines."))
    reply = decide(conversation)
    assert reply.kind == "waiting"
    assert reply.content[0]["text"] == "Waiting for 1 subagent(s) to report."


def test_with_every_report_visible_the_final_answer_ends_with_each_first_line() -> None:
    conversation = launched_both()
    conversation.assistant_text("Waiting for 2 subagent(s) to report.")
    conversation.user_text(notification("REPORT B: FAILED: log 3 has 30 lines."))
    conversation.assistant_text("Waiting for 1 subagent(s) to report.")
    conversation.user_text(notification("REPORT A: logs 1-2 are clean.\nDetails follow."))
    reply = decide(conversation)
    assert (reply.kind, reply.stop_reason) == ("final", "end_turn")
    assert reply.content[0]["text"] == (
        "Summary: both helpers reported.\n\n"
        "REPORT A: logs 1-2 are clean.\n"
        "REPORT B: FAILED: log 3 has 30 lines."
    )


def test_a_report_inside_a_tool_result_counts_too() -> None:
    """Mid-turn, Claude Code appends the notification to the next tool result."""
    conversation = Conversation(SCENARIO.task)
    conversation.call("Read", read_input("NOTES.md"), result="notes")
    for name in ("A", "B"):
        call = tool_call(decide(conversation))
        conversation.call(
            "Agent", call["input"], result=LAUNCHED + notification(f"REPORT {name}: ok")
        )
    text = decide(conversation).content[0]["text"]
    assert text.endswith("REPORT A: ok\nREPORT B: ok")


def test_a_foreground_call_result_is_the_report_and_the_answer_follows() -> None:
    scenario = load_scenario("delegation-foreground")
    conversation = Conversation(scenario.task)
    conversation.call("Read", read_input("NOTES.md"), result="notes")
    call = tool_call(decide(conversation, scenario))
    conversation.call("Agent", call["input"], result="REPORT C: logs 1-2 read; nothing fatal.")
    reply = decide(conversation, scenario)
    assert reply.kind == "final"
    assert reply.content[0]["text"].endswith("\n\nREPORT C: logs 1-2 read; nothing fatal.")


def test_a_step_after_a_subagent_waits_for_its_report_then_is_played() -> None:
    scenario = load_scenario("delegation-sequential")
    conversation = Conversation(scenario.task)
    conversation.call("Read", read_input("NOTES.md"), result="notes")
    call = tool_call(decide(conversation, scenario))
    assert call["input"]["prompt"].startswith("[subagent A] ")
    conversation.call("Agent", call["input"], result=LAUNCHED)
    reply = decide(conversation, scenario)
    # B waits for A: the turn ends, as for the final answer.
    assert (reply.kind, reply.stop_reason) == ("waiting", "end_turn")
    assert reply.content == ({"type": "text", "text": "Waiting for 1 subagent(s) to report."},)
    conversation.assistant_text("Waiting for 1 subagent(s) to report.")
    conversation.user_text(notification("REPORT A: logs 1-2 read; nothing fatal."))
    call = tool_call(decide(conversation, scenario))
    assert call["input"]["prompt"].startswith("[subagent B] ")
    assert call["input"]["run_in_background"] is True


def test_a_subagent_delegates_in_the_foreground_and_reports_after_its_helper() -> None:
    a = load_scenario("delegation-nested").subagent("A")
    assert a is not None
    conversation = Conversation("[subagent A] " + a.task)
    for i in (1, 2):
        conversation.call("Read", read_input(f"logs/app-{i}.log"), result="log")
    call = tool_call(decide(conversation, a))
    assert call["name"] == "Agent" and call["input"]["run_in_background"] is False
    conversation.call("Agent", call["input"], result="REPORT N: logs 3-4 read; nothing fatal.")
    reply = decide(conversation, a)
    assert reply.kind == "final"
    assert reply.content[0]["text"] == (
        "REPORT A: logs 1-2 read (app-1.log and app-2.log); nothing fatal; N read logs 3-4."
        "\n\nREPORT N: logs 3-4 read; nothing fatal."
    )


def test_the_agents_own_words_are_no_report() -> None:
    conversation = launched_both()
    conversation.assistant_text("I expect REPORT A: and REPORT B: soon.")
    assert decide(conversation).kind == "waiting"


def test_a_notification_asking_to_wrap_up_is_news_not_a_wind_down() -> None:
    conversation = launched_both()
    conversation.user_text(notification("REPORT A: done, time to wrap up and checkpoint"))
    assert decide(conversation).content[0]["text"] == "Waiting for 1 subagent(s) to report."


def test_without_agent_steps_the_final_answer_is_unchanged() -> None:
    scenario = Scenario.model_validate(
        {
            "name": "plain",
            "task": "t",
            "final_answer": "Done.",
            "steps": [{"tool": "Read", "path": "a"}],
        }
    )
    conversation = Conversation("t")
    conversation.call("Read", read_input("a"))
    assert decide(conversation, scenario).content == ({"type": "text", "text": "Done."},)


# -- the server -----------------------------------------------------------------------------


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with LoopbackServer(SCENARIO, response_delay_s=0) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any], **headers: str
) -> tuple[int, dict[str, Any]]:
    async with http.post(url + "/v1/messages", json=body, headers=headers) as response:
        return response.status, json.loads(await response.text())


async def test_the_server_plays_each_subagent_by_its_agent_id(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    url = server.base_url
    status, main = await post(http, url, Conversation(SCENARIO.task).body(stream=False))
    assert (status, main["content"][-1]["name"]) == (200, "Read")

    a = Conversation("[subagent A] Read logs 1-2.")
    b = Conversation("[subagent B] Count the lines of log 3.")
    a_headers = {AGENT_ID_HEADER: "agent-a"}
    b_headers = {AGENT_ID_HEADER: "agent-b", PARENT_AGENT_ID_HEADER: "agent-a"}
    seen: list[str] = []
    for _ in range(3):
        for conversation, headers in ((a, a_headers), (b, b_headers)):
            status, answer = await post(http, url, conversation.body(stream=False), **headers)
            assert status == 200
            last = answer["content"][-1]
            if last["type"] == "tool_use":
                seen.append(f"{headers[AGENT_ID_HEADER]} {last['name']}")
                conversation.call(last["name"], last["input"], result="30 lines")
            else:
                seen.append(f"{headers[AGENT_ID_HEADER]} says {last['text']}")
    assert seen == [
        "agent-a Read",
        "agent-b Bash",
        "agent-a Read",
        "agent-b says REPORT B: FAILED: log 3 has 30 lines.",
        "agent-a says REPORT A: logs 1-2 are clean.\nDetails follow.",
        "agent-b says REPORT B: FAILED: log 3 has 30 lines.",
    ]

    log = server.request_log
    assert [(r.agent_id, r.subagent, r.route_request) for r in log[:4]] == [
        (None, None, 1),
        ("agent-a", "A", 1),
        ("agent-b", "B", 1),
        ("agent-a", "A", 2),
    ]
    assert log[2].parent_agent_id == "agent-a"
    assert log[1].step_label == "read logs/app-1.log"
    assert {r.agent_id for r in log if r.from_subagent} == {"agent-a", "agent-b"}
    assert all(r.prompt_tokens > 0 and r.output_tokens > 0 for r in log)
    assert log[2].scenario == "deleg"


async def test_an_agent_id_without_a_known_subagent_gets_a_clear_400(
    server: LoopbackServer, http: aiohttp.ClientSession
) -> None:
    for text, said in (
        ("[subagent Q] do it", "names subagent 'Q'"),
        ("no tag here", r"names no [subagent NAME]"),
    ):
        status, answer = await post(
            http, server.base_url, Conversation(text).body(stream=False), **{AGENT_ID_HEADER: "x1"}
        )
        assert status == 400
        message = answer["error"]["message"]
        assert said in message
        assert message.endswith("this scenario's subagents: A, B")
    assert server.request_log == []
