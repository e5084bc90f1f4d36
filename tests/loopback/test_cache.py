"""Prompt-cache billing: reads of the seen prefix, writes up to the last breakpoint."""

from __future__ import annotations

from mala_tui.loopback.cache import CacheSplit, PromptCache
from mala_tui.loopback.tokens import PromptBlock, prompt_blocks, prompt_tokens, text_tokens
from tests.loopback.loopback_bodies import Conversation, read_input


def bill(cache: PromptCache, conversation: Conversation, now: float = 0.0) -> CacheSplit:
    return cache.bill(prompt_blocks(conversation.body()), now)


def test_first_request_writes_everything_up_to_its_last_breakpoint() -> None:
    conversation = Conversation("task")
    split = bill(PromptCache(), conversation)
    assert split == CacheSplit(
        input_tokens=0,
        cache_creation_input_tokens=prompt_tokens(conversation.body()),
        cache_read_input_tokens=0,
    )


def test_the_next_request_reads_the_previous_prompt_and_writes_the_new_part() -> None:
    cache, conversation = PromptCache(), Conversation("task")
    first = bill(cache, conversation)
    conversation.call("Read", read_input("a.py"), "y" * 4000)
    second = bill(cache, conversation)
    assert second.cache_read_input_tokens == first.prompt_tokens
    assert second.cache_creation_input_tokens == second.prompt_tokens - first.prompt_tokens
    assert second.input_tokens == 0


def test_masking_an_old_result_misses_the_cache_from_that_block_on() -> None:
    cache, conversation = PromptCache(), Conversation("task")
    old = conversation.call("Read", read_input("a.py"), "y" * 40_000)
    bill(cache, conversation)
    # The prefix cached just before the Read result: the task message and the Read call.
    before_result = prompt_tokens(conversation.body()) - 10_000
    for number in range(3):
        conversation.call("Bash", {"command": f"echo {number}"}, "z" * 400)
        bill(cache, conversation)
    unmasked = prompt_tokens(conversation.body())
    assert bill(cache, conversation).cache_read_input_tokens == unmasked

    placeholder = "[Read result masked -- a.py, 500 lines]"
    conversation.mask(old, placeholder)
    masked = bill(cache, conversation)
    # Every prefix cached so far contains the old result: the read stops at the last prefix
    # cached before it (the system and tools, shared by all requests), and all the rest is
    # written again.
    assert masked.cache_read_input_tokens < before_result
    assert masked.cache_read_input_tokens == shared_prefix_tokens()
    assert (
        masked.cache_creation_input_tokens == masked.prompt_tokens - masked.cache_read_input_tokens
    )
    assert masked.prompt_tokens == unmasked - 10_000 + text_tokens(placeholder)


def test_no_breakpoint_means_no_caching() -> None:
    blocks = [PromptBlock("messages", bytes([n]), 2000, breakpoint=False) for n in range(3)]
    cache = PromptCache()
    assert cache.bill(blocks, 0.0) == CacheSplit(6000, 0, 0)
    assert cache.bill(blocks, 1.0) == CacheSplit(6000, 0, 0)


def test_tokens_after_the_last_breakpoint_are_plain_input() -> None:
    blocks = [
        PromptBlock("system", b"s", 3000, breakpoint=True),
        PromptBlock("messages", b"m", 500, breakpoint=False),
    ]
    cache = PromptCache()
    assert cache.bill(blocks, 0.0) == CacheSplit(500, 3000, 0)
    assert cache.bill(blocks, 1.0) == CacheSplit(500, 0, 3000)


def test_short_prefixes_are_not_cached() -> None:
    blocks = [PromptBlock("system", b"s", 1000, breakpoint=True)]
    cache = PromptCache()
    assert cache.bill(blocks, 0.0) == CacheSplit(1000, 0, 0)
    assert cache.bill(blocks, 1.0) == CacheSplit(1000, 0, 0)
    assert len(cache) == 0


def test_entries_expire_after_the_ttl_unless_read() -> None:
    blocks = [PromptBlock("system", b"s", 2000, breakpoint=True)]
    cache = PromptCache(ttl_s=300.0)
    cache.bill(blocks, 0.0)
    assert cache.bill(blocks, 299.0).cache_read_input_tokens == 2000  # a hit refreshes it
    assert cache.bill(blocks, 598.0).cache_read_input_tokens == 2000
    assert cache.bill(blocks, 899.0).cache_read_input_tokens == 0


def shared_prefix_tokens() -> int:
    """Tokens of the tools and system blocks every request of these tests starts with."""
    blocks = prompt_blocks(Conversation("x").body())
    return sum(block.tokens for block in blocks if block.section != "messages")


def test_sessions_share_the_tools_and_system_prefix() -> None:
    cache = PromptCache()
    bill(cache, Conversation("first task"))
    assert (
        bill(cache, Conversation("second task")).cache_read_input_tokens == shared_prefix_tokens()
    )
