"""Billing a managed run again with a breakpoint kept before each mask's newest result."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mala_tui.bench.marker_replay import main, newest_kept_result, rebill, with_markers
from mala_tui.loopback import summarize
from mala_tui.loopback.cache import PromptCache
from mala_tui.loopback.request_log import RequestRecord
from mala_tui.loopback.tokens import PromptBlock, prompt_blocks
from tests.loopback.loopback_bodies import Conversation, read_input
from tests.support.factories import request_record

# The CLI's shape: one marker on the system prompt, one on the request's last block.
ONE_SYSTEM_MARKER = [
    {"type": "text", "text": "You are a Claude agent."},
    {"type": "text", "text": "Use the tools. " * 400, "cache_control": {"type": "ephemeral"}},
]


def placeholder(index: int) -> str:
    return f"[Read result masked -- m{index}.py, 100 lines]"


def managed_run() -> list[RequestRecord]:
    """Twelve Reads of 2,000 tokens; a mask before the 7th request and the 12th, each
    masking every result but the newest; each request billed as the loopback bills it."""
    conversation, masked = Conversation("Read the modules."), 0
    ids: list[str] = []
    cache, records = PromptCache(), []
    for number in range(1, 13):
        if number in (7, 12):
            for index, call_id in enumerate(ids[:-1]):
                if index >= masked:
                    conversation.mask(call_id, placeholder(index))
            masked = len(ids) - 1
        body: dict[str, Any] = {**conversation.body(), "system": ONE_SYSTEM_MARKER}
        split = cache.bill(prompt_blocks(body), float(number))
        record = request_record(number, split.prompt_tokens, "read m.py")
        records.append(
            replace(
                record,
                body=body,
                session_id="s",
                masked_placeholders=masked,
                input_tokens=split.input_tokens,
                cache_read_input_tokens=split.cache_read_input_tokens,
                cache_creation_input_tokens=split.cache_creation_input_tokens,
            )
        )
        ids.append(conversation.call("Read", read_input(f"m{number}.py"), "r" * 8_000))
    return records


def test_billed_again_without_markers_the_run_costs_what_it_cost() -> None:
    records = managed_run()
    replay = rebill(records, markers=False)
    assert replay.masks == 2
    assert replay.cost_units == pytest.approx(summarize(records).cost_units)


def test_the_second_mask_reads_the_structure_up_to_the_first_masks_marker() -> None:
    records = managed_run()
    without, marked = rebill(records, markers=False), rebill(records, markers=True)
    # The first mask's marker sits on the block before the 6th result, the newest it
    # kept; the second mask changes that result, so the prefix up to the marker is read
    # from the cache instead of written again.
    first_mask = records[6].body
    assert first_mask is not None
    blocks = prompt_blocks(first_mask)
    newest = newest_kept_result(first_mask, blocks)
    assert newest is not None
    head = sum(block.tokens for block in blocks if block.section != "messages")
    # Up to the marker: every block before the newest kept result.
    structure = sum(block.tokens for block in blocks[:newest]) - head
    assert structure > 5 * 20  # the task, five calls and five placeholders
    assert marked.cache_read_input_tokens - without.cache_read_input_tokens == structure
    assert without.cache_creation_input_tokens - marked.cache_creation_input_tokens == structure
    assert marked.cost_units == pytest.approx(without.cost_units - (1.25 - 0.1) * structure)


def test_markers_the_run_kept_itself_are_taken_off_before_billing_again() -> None:
    """The runtime keeps a breakpoint of its own now: the replay bills without it."""
    plain = managed_run()
    kept = []
    for record in plain:
        assert record.body is not None
        body = {**record.body, "messages": [dict(m) for m in record.body["messages"]]}
        first = body["messages"][0]
        content = first["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        first["content"] = [{**blocks[0], "cache_control": {"type": "ephemeral"}}, *blocks[1:]]
        kept.append(replace(record, body=body))
    assert rebill(kept, markers=False) == rebill(plain, markers=False)
    assert rebill(kept, markers=True) == rebill(plain, markers=True)


def test_markers_never_take_the_request_past_four_breakpoints() -> None:
    blocks = [PromptBlock("messages", bytes([i]), 10, i in (0, 9)) for i in range(10)]
    marked = with_markers(blocks, [3, 5, 7])
    assert [i for i, block in enumerate(marked) if block.breakpoint] == [0, 5, 7, 9]


def test_a_log_without_bodies_cannot_be_billed_again() -> None:
    records = [replace(record, body=None) for record in managed_run()]
    with pytest.raises(ValueError, match="no body"):
        rebill(records, markers=True)


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--densities", "0"], "token ratio must be"), (["--scenario", "nope"], "no such scenario")],
)
def test_bad_options_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 2
    assert message in capsys.readouterr().err
