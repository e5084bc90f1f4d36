"""The conversation model: pairing, cut points, carryover never splitting a call from its result."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mala_tui.core.transcript import (
    Message,
    Role,
    TextBlock,
    ToolCall,
    ToolResult,
    Transcript,
    describe_call,
    render_messages,
)
from tests.support.factories import call, reads, result, say


def test_observations_pair_calls_with_results_in_order() -> None:
    transcript = Transcript([Message.user_text("go"), call("a"), result("a", "A"), call("b")])
    pairs = transcript.exchanges()
    assert [(o.call.id, o.result.content if o.result else None) for o in pairs] == [
        ("a", "A"),
        ("b", None),
    ]
    assert transcript.open_calls == {"b"}


def test_parallel_calls_in_one_message_pair_by_id() -> None:
    both = Message(
        Role.ASSISTANT,
        (ToolCall("x", "Bash", {"command": "ls"}), ToolCall("y", "Bash", {"command": "pwd"})),
    )
    answers = Message(Role.USER, (ToolResult("y", "/ws"), ToolResult("x", "a b")))
    pairs = Transcript([Message.user_text("go"), both, answers]).exchanges()
    assert [(o.call.id, o.result and o.result.content) for o in pairs] == [
        ("x", "a b"),
        ("y", "/ws"),
    ]


def test_cut_points_never_between_call_and_result() -> None:
    transcript = Transcript(
        [
            Message.user_text("go"),
            call("a"),
            result("a", "A"),
            say("thinking"),
            call("b"),
            result("b", "B"),
            call("c"),
        ]
    )
    # 0: start. 1 is after the prompt (kept with its answer). 2 is after call a (open).
    assert transcript.cut_points() == [0, 3, 4, 6]


def test_cycles_leave_out_an_unfinished_tail() -> None:
    transcript = Transcript([Message.user_text("go"), call("a"), result("a", "A"), call("b")])
    cycles = transcript.cycles()
    assert len(cycles) == 1
    assert cycles[0][0].is_prompt and cycles[0][-1].tool_results[0].tool_use_id == "a"


def test_carryover_takes_the_last_complete_cycles() -> None:
    transcript = reads(6)
    carried = transcript.carryover(2)
    ids = [b.id for m in carried for b in m.blocks if isinstance(b, ToolCall)]
    assert ids == ["t0004", "t0005"]
    assert transcript.carryover(0) == ()
    assert len(transcript.carryover(100)) == len(transcript)


def test_replace_results_keeps_every_message_and_the_calls() -> None:
    transcript = reads(3)
    before = len(transcript)
    changed = transcript.replace_results({"t0000": "[Read result masked -- x]", "nope": "?"})
    assert changed == 1
    assert len(transcript) == before
    assert transcript[2].tool_results[0].content == "[Read result masked -- x]"
    assert transcript[1].tool_calls[0].id == "t0000"


def test_character_count_follows_replacements() -> None:
    transcript = reads(2, size=800)
    full = transcript.characters
    transcript.replace_results({"t0000": "short"})
    assert transcript.characters == full - len(transcript.exchanges()[0].call.id) * 0 - (
        len("\n".join(["x" * 79] * 10)) - len("short")
    )


def test_describe_call_uses_the_primary_argument() -> None:
    assert describe_call(ToolCall("1", "Read", {"file_path": "/ws/a.py"})) == "Read /ws/a.py"
    assert (
        describe_call(ToolCall("2", "Bash", {"command": "pytest -q\n  -x"})) == "Bash pytest -q -x"
    )
    assert describe_call(ToolCall("3", "Grep", {"pattern": "TODO", "path": "src"})) == "Grep TODO"
    assert describe_call(ToolCall("4", "mcp__x__y", {"path": "/a"})) == "mcp__x__y /a"


def test_render_shortens_long_results() -> None:
    text = render_messages([call("a"), result("a", "y" * 5000)], result_chars=100)
    assert "Tool call: Read /ws/src/a.py" in text
    assert "(4900 more characters not shown)" in text


@st.composite
def conversations(draw: st.DrawFn) -> Transcript:
    transcript = Transcript([Message.user_text("task")])
    open_ids: list[str] = []
    for index in range(draw(st.integers(0, 40))):
        choice = draw(st.sampled_from(["call", "result", "text", "prompt"]))
        if choice == "call":
            tool_id = f"c{index}"
            open_ids.append(tool_id)
            transcript.append(call(tool_id))
        elif choice == "result" and open_ids:
            tool_id = open_ids.pop(draw(st.integers(0, len(open_ids) - 1)))
            transcript.append(result(tool_id, "r"))
        elif choice == "text":
            transcript.append(say("hm"))
        else:
            transcript.append(Message(Role.USER, (TextBlock("more"),)))
    return transcript


@given(conversations(), st.integers(0, 10))
def test_carryover_never_splits_a_call_from_its_result(transcript: Transcript, turns: int) -> None:
    carried = transcript.carryover(turns)
    calls = {b.id for m in carried for b in m.blocks if isinstance(b, ToolCall)}
    results = {b.tool_use_id for m in carried for b in m.blocks if isinstance(b, ToolResult)}
    answered = {o.call.id for o in transcript.exchanges() if o.result is not None}
    assert calls & answered <= results  # every answered call brings its result
    assert results <= calls  # no result without its call
    # It is one contiguous stretch ending at the last clean cut point.
    end = transcript.cut_points()[-1]
    assert carried == transcript.messages[end - len(carried) : end]


def test_an_interrupted_call_stops_blocking_once_the_agent_moves_on() -> None:
    transcript = Transcript(
        [
            Message.user_text("go"),
            call("a"),
            Message.user_text("continue"),
            call("b"),
            result("b", "B"),
        ]
    )
    assert transcript.cut_points() == [0, 5]
    unfinished = Transcript([Message.user_text("go"), call("a"), result("a", "A"), call("b")])
    assert unfinished.cut_points() == [0, 3]
