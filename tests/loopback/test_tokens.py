"""The token estimator: ceil(chars / 4) per block, consistent prefix sums."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mala_tui.loopback.tokens import (
    block_text,
    output_tokens,
    prompt_blocks,
    prompt_tokens,
    text_tokens,
)
from tests.loopback.loopback_bodies import Conversation, read_input


def test_text_tokens_is_ceiling_of_a_quarter_of_the_characters() -> None:
    assert [text_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [1, 1, 1, 2, 2, 3]


def test_each_block_kind_is_measured_by_its_content() -> None:
    assert block_text({"type": "text", "text": "hello"}) == "hello"
    assert block_text({"type": "tool_use", "name": "Read", "input": {"b": 1, "a": "x"}}) == (
        'Read\n{"a":"x","b":1}'
    )
    assert block_text({"type": "tool_result", "content": "out"}) == "out"
    assert (
        block_text(
            {
                "type": "tool_result",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            }
        )
        == "a\nb"
    )


def test_the_billing_header_is_not_prompt() -> None:
    body = Conversation("task").body()
    sections = [block.section for block in prompt_blocks(body)]
    assert sections.count("system") == 2  # of three system blocks, the header is left out
    assert sections.count("tools") == 6


def test_cache_control_does_not_change_a_blocks_identity_or_size() -> None:
    conversation = Conversation("task")
    before = prompt_blocks(conversation.body())
    conversation.call("Read", read_input("a.py"), "content")
    after = prompt_blocks(conversation.body())
    # The first message lost its cache_control marker in the longer request: same block.
    assert before[-1].breakpoint and not after[len(before) - 1].breakpoint
    assert before[-1].digest == after[len(before) - 1].digest
    assert before[-1].tokens == after[len(before) - 1].tokens


@given(st.lists(st.text(max_size=300), min_size=1, max_size=8))
def test_a_longer_conversation_keeps_the_shorter_ones_prefix_sums(results: list[str]) -> None:
    conversation = Conversation("task")
    totals = []
    for number, result in enumerate(results):
        conversation.call("Bash", {"command": f"echo {number}"}, result)
        totals.append(prompt_tokens(conversation.body()))
        blocks = prompt_blocks(conversation.body())
        assert totals[-1] == sum(block.tokens for block in blocks)
    assert totals == sorted(totals)
    assert len(set(totals)) == len(totals)


def test_masking_a_result_shrinks_the_prompt() -> None:
    conversation = Conversation("task")
    call_id = conversation.call("Read", read_input("big.py"), "x" * 40_000)
    conversation.call("Bash", {"command": "ls"}, "a\nb\n")
    before = prompt_tokens(conversation.body())
    placeholder = "[Read result masked -- big.py, 500 lines]"
    conversation.mask(call_id, placeholder)
    assert before - prompt_tokens(conversation.body()) == 10_000 - text_tokens(placeholder)


def test_output_tokens_counts_text_and_tool_input() -> None:
    content = ({"type": "text", "text": "x" * 8}, {"type": "tool_use", "name": "Bash", "input": {}})
    assert output_tokens(content) == 2 + 2
