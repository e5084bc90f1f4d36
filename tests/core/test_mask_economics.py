"""A mask pays for itself once what it frees outweighs the cache rewrite of what stays."""

from __future__ import annotations

import pytest

from mala_tui.core.mask_economics import (
    CACHE_READ,
    CACHE_WRITE,
    GrowthRate,
    pays_for_itself,
    rewritten,
    warm_head,
    worthwhile_batch,
)


def cost_per_request(level: int, after: int, prefix: int, growth: int) -> float:
    """Masking at `level` down to `after`, again and again: reads plus the spread rewrite."""
    cycle = (level - after) / growth
    reads = CACHE_READ * (level + after) / 2
    rewrite = (CACHE_WRITE - CACHE_READ) * (after - prefix) / cycle
    return reads + rewrite


@pytest.mark.parametrize(
    ("after", "prefix", "growth"),
    [(25_000, 15_000, 7_000), (50_000, 30_000, 14_000), (120_000, 15_000, 3_000)],
)
def test_the_worthwhile_batch_is_where_masking_costs_least(
    after: int, prefix: int, growth: int
) -> None:
    best = worthwhile_batch(after, prefix, growth)
    at_best = cost_per_request(after + best, after, prefix, growth)
    for other in (best // 2, best * 2):
        assert cost_per_request(after + other, after, prefix, growth) > at_best


def test_a_batch_below_the_point_waits_and_one_above_goes() -> None:
    need = worthwhile_batch(40_000, 15_000, 8_000)
    assert not pays_for_itself(need - 1_000, 40_000, 15_000, 8_000)
    assert pays_for_itself(need + 1_000, 40_000, 15_000, 8_000)
    # Nothing known of the growth yet: no reason to wait.
    assert pays_for_itself(1, 40_000, 15_000, None)


def test_dense_text_moves_the_point_up() -> None:
    # Twice the density: twice the growth and twice what stays; the point doubles too.
    assert worthwhile_batch(50_000, 30_000, 14_000) == pytest.approx(
        2 * worthwhile_batch(25_000, 15_000, 7_000), rel=0.01
    )


def test_the_warm_head_is_the_system_prompt_and_tools_or_up_to_a_kept_breakpoint() -> None:
    assert warm_head(15_000) == 15_000
    # A breakpoint kept before the first changed block: all before it is read, not written.
    assert warm_head(15_000, kept_prefix=32_000) == 32_000
    assert warm_head(15_000, kept_prefix=9_000) == 15_000
    assert rewritten(60_000, warm_head(15_000, kept_prefix=32_000)) == 28_000
    assert rewritten(10_000, 15_000) == 0


def test_a_longer_warm_head_lowers_the_batch_to_where_masking_costs_least() -> None:
    after, head, kept, growth = 60_000, 15_000, 32_000, 7_000
    warm = warm_head(head, kept_prefix=kept)
    best = worthwhile_batch(after, warm, growth)
    assert best < worthwhile_batch(after, head, growth)
    at_best = cost_per_request(after + best, after, warm, growth)
    for other in (best // 2, best * 2):
        assert cost_per_request(after + other, after, warm, growth) > at_best
    # A batch that waited with only the head warm goes once the kept prefix counts.
    between = (best + worthwhile_batch(after, head, growth)) // 2
    assert not pays_for_itself(between, after, head, growth)
    assert pays_for_itself(between, after, warm, growth)


def test_a_mask_that_rewrites_nothing_or_finds_the_cache_cold_always_pays() -> None:
    assert worthwhile_batch(15_000, 15_000, 8_000) == 0
    assert pays_for_itself(1, 15_000, 15_000, 8_000)
    # Cold: the next request writes the whole prompt whatever is done.
    assert not pays_for_itself(1_000, 80_000, 15_000, 8_000)
    assert pays_for_itself(1_000, 80_000, 15_000, 8_000, cold=True)


def test_growth_is_smoothed_and_drops_are_not_growth() -> None:
    rate = GrowthRate()

    def observed(tokens: int) -> float | None:
        rate.observe(tokens)
        return rate.rate

    assert observed(10_000) is None
    assert observed(17_000) == 7_000
    assert observed(5_000) == 7_000  # a mask: no growth, and the next step counts from here
    assert observed(15_000) == pytest.approx(0.3 * 10_000 + 0.7 * 7_000)
    rate.restart()
    # A fresh session's first request is not a step.
    assert observed(100_000) == pytest.approx(0.3 * 10_000 + 0.7 * 7_000)
