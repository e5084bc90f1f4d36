"""Prices by model, the cost of a call, and a meter that counts each call once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mala_tui.core import events as ev
from mala_tui.core.pricing import (
    DEFAULT_PRICES,
    ModelPrice,
    PriceTable,
    Spend,
    SpendMeter,
    format_cost,
    total_spend,
)
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import CallUsage
from tests.support.usage_events import started, usage

TABLE = PriceTable()
SONNET = DEFAULT_PRICES["claude-sonnet-4-5"]
OPUS_45 = DEFAULT_PRICES["claude-opus-4-5"]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-sonnet-4-5", (3.0, 3.75, 0.3, 15.0)),
        ("claude-sonnet-4-5-20250929", (3.0, 3.75, 0.3, 15.0)),
        ("claude-sonnet-4-5[1m]", (3.0, 3.75, 0.3, 15.0)),
        ("Claude-Sonnet-4-5", (3.0, 3.75, 0.3, 15.0)),
        ("claude-sonnet-4-20250514", (3.0, 3.75, 0.3, 15.0)),
        ("claude-opus-4-5-20251101", (5.0, 6.25, 0.5, 25.0)),
        ("claude-opus-4-1-20250805", (15.0, 18.75, 1.5, 75.0)),
        ("claude-opus-4-20250514", (15.0, 18.75, 1.5, 75.0)),
        ("claude-haiku-4-5", (1.0, 1.25, 0.1, 5.0)),
        ("claude-3-5-haiku-20241022", (0.8, 1.0, 0.08, 4.0)),
    ],
)
def test_lookup_by_prefix(model: str, expected: tuple[float, float, float, float]) -> None:
    price = TABLE.lookup(model)
    assert price is not None
    assert (price.input, price.cache_write, price.cache_read, price.output) == pytest.approx(
        expected
    )


@pytest.mark.parametrize(
    "model",
    [None, "", "sonnet", "claude-opus-4-10", "claude-opus-4", "gpt-5", "claude-sonnet-4-55"],
)
def test_unknown_models_have_no_price(model: str | None) -> None:
    assert TABLE.lookup(model) is None


def test_the_longest_prefix_wins() -> None:
    table = PriceTable({"claude": ModelPrice(1, 1, 1, 1), "claude-x": ModelPrice(2, 2, 2, 2)})
    assert table.lookup("claude-x-2") == ModelPrice(2, 2, 2, 2)
    assert table.lookup("claude-y") == ModelPrice(1, 1, 1, 1)


def test_call_cost_at_list_prices() -> None:
    call = CallUsage(1_000, 2_000, 100_000, 500)
    # 1000 x $3 + 2000 x $3.75 + 100000 x $0.30 + 500 x $15, per million.
    assert SONNET.call_cost(call) == pytest.approx(0.048)


def test_long_context_premium_past_200k_prompt_tokens() -> None:
    call = CallUsage(10_000, 0, 240_000, 1_000)
    # (10000 x $3 + 240000 x $0.30) x 2 + 1000 x $15 x 1.5, per million.
    assert SONNET.call_cost(call) == pytest.approx(0.2265)
    at_limit = CallUsage(10_000, 0, 190_000, 1_000)
    assert SONNET.call_cost(at_limit) == pytest.approx((30_000 + 57_000 + 15_000) / 1e6)


def test_no_premium_for_models_without_one() -> None:
    call = CallUsage(10_000, 0, 240_000, 1_000)
    assert OPUS_45.call_cost(call) == pytest.approx((50_000 + 120_000 + 25_000) / 1e6)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"input": -1.0, "cache_write": 0, "cache_read": 0, "output": 0}, "input price"),
        ({"input": float("nan"), "cache_write": 0, "cache_read": 0, "output": 0}, "input price"),
        (
            {
                "input": 1,
                "cache_write": 1,
                "cache_read": 1,
                "output": 1,
                "long_context_input_factor": 0.5,
            },
            "discount",
        ),
    ],
)
def test_bad_prices_are_refused(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ModelPrice(**fields)  # type: ignore[arg-type]


def test_overrides_keep_a_known_models_other_prices() -> None:
    table = TABLE.with_overrides({"claude-sonnet-4-5": {"input": 2.0}})
    price = table.lookup("claude-sonnet-4-5-20250929")
    assert price is not None
    assert (price.input, price.cache_write, price.output) == (2.0, 3.75, 15.0)
    assert price.long_context_threshold == 200_000
    assert TABLE.lookup("claude-sonnet-4-5") == SONNET  # the defaults are untouched


def test_a_new_model_gets_the_usual_cache_prices() -> None:
    table = TABLE.with_overrides({"my-proxy-model": {"input": 2.0, "output": 8.0}})
    price = table.lookup("my-proxy-model-v2")
    assert price is not None
    assert (price.cache_write, price.cache_read) == pytest.approx((2.5, 0.2))


def test_a_new_model_needs_input_and_output() -> None:
    with pytest.raises(ValueError, match="needs output"):
        TABLE.with_overrides({"my-model": {"input": 2.0}})


def test_meter_counts_start_and_final_report_as_one_call() -> None:
    meter = SpendMeter(SONNET)
    meter.observe(CallUsage(100, 5_000, 0, 0))
    meter.observe(CallUsage(100, 5_000, 0, 400))
    meter.observe(CallUsage(50, 600, 5_000, 0))
    meter.observe(CallUsage(50, 600, 5_000, 900))
    spend = meter.spend
    assert (spend.calls, spend.output_tokens) == (2, 1_300)
    assert (spend.input_tokens, spend.cache_write_tokens, spend.cache_read_tokens) == (
        150,
        5_600,
        5_000,
    )
    expected = SONNET.call_cost(CallUsage(100, 5_000, 0, 400)) + SONNET.call_cost(
        CallUsage(50, 600, 5_000, 900)
    )
    assert spend.cost_usd == pytest.approx(expected)
    assert spend.cache_hit_rate == pytest.approx(5_000 / 10_750)


def test_meter_counts_a_call_reported_once() -> None:
    meter = SpendMeter(SONNET)
    meter.observe(CallUsage(100, 5_000, 0, 400))  # no stream events: one report only
    meter.observe(CallUsage(50, 600, 5_000, 900))
    assert meter.spend.calls == 2


def test_meter_ignores_empty_reports() -> None:
    meter = SpendMeter(SONNET)
    meter.observe(CallUsage())
    assert meter.spend == Spend()


def test_unknown_model_counts_tokens_but_has_no_cost() -> None:
    meter = SpendMeter(None)
    meter.observe(CallUsage(100, 0, 900, 10))
    spend = meter.spend
    assert spend.cost_usd is None and not spend.priced
    assert spend.calls == 1 and spend.cache_hit_rate == pytest.approx(0.9)


def test_run_total_is_unpriced_when_one_session_is() -> None:
    priced = Spend(1, 10, 0, 0, 1, 0.5)
    assert total_spend([priced, priced]).cost_usd == pytest.approx(1.0)
    assert total_spend([priced, Spend(1, 10, 0, 0, 1, None)]).cost_usd is None
    assert total_spend([]).cache_hit_rate is None


calls = st.lists(
    st.tuples(
        st.integers(1, 5_000), st.integers(0, 50_000), st.integers(1, 20_000), st.integers(0, 8_000)
    ),
    max_size=30,
)


@given(calls)
def test_meter_equals_the_sum_of_final_reports(steps: list[tuple[int, int, int, int]]) -> None:
    # Each call is reported at message_start (output 0) and again with its output. The
    # cache read grows call by call, as a real conversation's prefix does.
    meter = SpendMeter(SONNET)
    finals = []
    cache_read = 0
    for fresh, written, grown, output in steps:
        cache_read += grown
        start = CallUsage(fresh, written, cache_read, 0)
        meter.observe(start)
        meter.observe(start.with_output(output))
        finals.append(start.with_output(output))
    spend = meter.spend
    assert spend.calls == len(finals)
    assert spend.output_tokens == sum(call.output_tokens for call in finals)
    assert spend.cost_usd == pytest.approx(sum(SONNET.call_cost(call) for call in finals))


@pytest.mark.parametrize(
    ("cost", "shown"),
    [
        (None, "no price"),
        (0.0, "$0.00"),
        (0.0042, "$0.0042"),
        (0.4213, "$0.42"),
        (1234.5, "$1,234"),
    ],
)
def test_format_cost(cost: float | None, shown: str) -> None:
    assert format_cost(cost) == shown


def test_view_costs_each_session_and_the_run_from_the_journal() -> None:
    first, second = CallUsage(10, 4_000, 0, 0), CallUsage(10, 300, 4_000, 0)
    events: list[ev.Event] = [
        started("a", "claude-sonnet-4-5"),
        started("b", "claude-haiku-4-5"),
        usage("a", 1.0, first),
        usage("a", 2.0, first.with_output(200)),
        usage("a", 3.0, second),
        usage("a", 4.0, second.with_output(50)),
        usage("b", 1.5, first.with_output(200)),
    ]
    state = RunState().apply_all(events)
    a, b = state.sessions["a"].snapshot(), state.sessions["b"].snapshot()
    assert a.spend.calls == 2 and b.spend.calls == 1
    assert a.spend.cost_usd == pytest.approx(
        SONNET.call_cost(first.with_output(200)) + SONNET.call_cost(second.with_output(50))
    )
    haiku = DEFAULT_PRICES["claude-haiku-4-5"]
    assert b.spend.cost_usd == pytest.approx(haiku.call_cost(first.with_output(200)))
    assert state.spend.cost_usd == pytest.approx((a.spend.cost_usd or 0) + (b.spend.cost_usd or 0))
    assert [point.at for point in state.sessions["a"].costs] == [1.0, 2.0, 3.0, 4.0]
    assert state.sessions["a"].costs[-1].cost_usd == pytest.approx(a.spend.cost_usd)


def test_view_uses_the_run_price_table() -> None:
    table = PriceTable().with_overrides({"claude-sonnet-4-5": {"output": 100.0}})
    state = RunState(prices=table).apply_all(
        [started("a", "claude-sonnet-4-5"), usage("a", 1.0, CallUsage(0, 0, 0, 1_000_000))]
    )
    assert state.spend.cost_usd == pytest.approx(100.0)


def test_view_session_without_a_model_has_no_price() -> None:
    state = RunState().apply_all([started("a", None), usage("a", 1.0, CallUsage(5, 0, 0, 5))])
    assert state.sessions["a"].snapshot().spend.cost_usd is None
    assert state.spend.cost_usd is None
