"""A session started without a model learns it from the API's first answer: the live view
and `show` name it, and price every call of it."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.pricing import DEFAULT_PRICES, PriceTable, SpendMeter
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import CallUsage, UsageSource

CALL = CallUsage(input_tokens=1_000, cache_read_input_tokens=20_000, output_tokens=300)


def started(model: str | None) -> ev.SessionStarted:
    return ev.SessionStarted(
        at=1.0,
        session="s1",
        task="t",
        cwd="/w",
        model=model,
        window=200_000,
        soft_threshold=0.3,
        hard_threshold=0.8,
        max_restarts=3,
        require_approval=False,
    )


def usage(at: float, call: CallUsage) -> ev.UsageRecorded:
    return ev.UsageRecorded(
        at=at,
        session="s1",
        tokens=call.context_tokens,
        window=200_000,
        source=UsageSource.PER_CALL,
        input_tokens=call.input_tokens,
        cache_creation_input_tokens=call.cache_creation_input_tokens,
        cache_read_input_tokens=call.cache_read_input_tokens,
        output_tokens=call.output_tokens,
    )


def test_a_session_without_a_model_is_priced_once_it_learns_it() -> None:
    learned = ev.ModelLearned(at=1.5, session="s1", model="claude-sonnet-4-5-20250929")
    state = RunState().apply_all([started(None), learned, usage(2.0, CALL)])
    snapshot = state.sessions["s1"].snapshot()
    assert snapshot.model == "claude-sonnet-4-5-20250929"
    price = DEFAULT_PRICES["claude-sonnet-4-5"]
    assert state.sessions["s1"].spend.cost_usd == price.call_cost(CALL)
    assert state.spend.priced


def test_without_learning_it_there_is_no_price() -> None:
    state = RunState().apply_all([started(None), usage(2.0, CALL)])
    assert state.sessions["s1"].spend.cost_usd is None


def test_calls_after_a_new_model_are_priced_at_its_price_and_before_at_theirs() -> None:
    meter = SpendMeter(PriceTable().lookup("claude-sonnet-4-5"))
    meter.observe(CALL)
    meter.reprice(PriceTable().lookup("claude-haiku-4-5"))
    meter.observe(CALL.with_output(400))
    sonnet, haiku = DEFAULT_PRICES["claude-sonnet-4-5"], DEFAULT_PRICES["claude-haiku-4-5"]
    assert meter.spend.calls == 2
    assert meter.spend.cost_usd == sonnet.call_cost(CALL) + haiku.call_cost(CALL.with_output(400))


def test_the_event_log_says_where_the_model_came_from() -> None:
    from mala_tui.core.describe import summary

    assert summary(ev.ModelLearned(at=1.0, session="s1", model="claude-x-1")) == (
        "the API answers as claude-x-1 (started with Claude Code's default)"
    )


def test_claude_codes_default_models_have_a_price() -> None:
    table = PriceTable()
    for model in ("claude-opus-5-5", "claude-opus-5", "claude-sonnet-5-5", "claude-haiku-5-5"):
        assert table.lookup(model) is not None, model
    opus = table.lookup("claude-opus-5-5-20260601")
    assert opus is not None and (opus.input, opus.cache_read, opus.output) == (4.0, 0.2, 20.0)
    haiku = table.lookup("claude-haiku-5-5")
    assert haiku is not None
    long = CallUsage(cache_read_input_tokens=150_000, output_tokens=1_000)
    assert haiku.call_cost(long) == (150_000 * 0.01 + 1_000 * 0.5) * 5 / 1_000_000
