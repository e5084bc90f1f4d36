"""Token accounting: the rule in docs/ARCHITECTURE.md, the cumulative fallback, bad usage fields."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mala_tui.core import events as ev
from mala_tui.core.usage import (
    TRACKING_DISABLED,
    USAGE_FIELDS,
    CallUsage,
    ContextUsage,
    CumulativeUsage,
    UsageFieldError,
    UsageSource,
    UsageTracker,
    Zone,
    estimate_tokens,
)

# -- the cumulative fallback: per-turn deltas summed ---------------------------------------


def test_cumulative_accumulates_per_turn_usage() -> None:
    usage = CumulativeUsage()
    usage.add_turn(input_tokens=100, output_tokens=200, cache_read_tokens=1000)
    usage.add_turn(input_tokens=50, output_tokens=75, cache_read_tokens=500)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (150, 275, 1500)


def test_cumulative_pressure_ratio_ignores_cache_reads() -> None:
    usage = CumulativeUsage()
    usage.add_turn(input_tokens=1000, output_tokens=2000, cache_read_tokens=1_000_000)
    assert usage.pressure_ratio(10_000) == pytest.approx(0.3)
    usage.cache_read_tokens = 7
    assert usage.pressure_ratio(10_000) == pytest.approx(0.3)


def test_cumulative_disabled_tracking_reads_zero_and_ignores_turns() -> None:
    usage = CumulativeUsage()
    usage.add_turn(input_tokens=10, output_tokens=10)
    usage.disable_tracking()
    assert usage.tracking_state == TRACKING_DISABLED
    assert not usage.is_tracking_enabled()
    assert usage.pressure_ratio(10_000) == 0.0
    usage.add_turn(input_tokens=5000, output_tokens=5000, cache_read_tokens=9)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (10, 10, 0)


def test_cumulative_reset_zeroes_totals() -> None:
    usage = CumulativeUsage()
    usage.add_turn(input_tokens=300, output_tokens=400, cache_read_tokens=500)
    usage.reset()
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (0, 0, 0)
    assert usage.is_tracking_enabled()


def test_cumulative_reset_keeps_tracking_disabled() -> None:
    usage = CumulativeUsage()
    usage.add_turn(input_tokens=300, output_tokens=400)
    usage.disable_tracking()
    usage.reset()
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (0, 0, 0)
    assert not usage.is_tracking_enabled()
    assert usage.pressure_ratio(1000) == 0.0


@pytest.mark.parametrize("limit", [0, -1, -200_000])
def test_cumulative_non_positive_limit_reads_zero(limit: int) -> None:
    usage = CumulativeUsage()
    usage.add_turn(input_tokens=10**9, output_tokens=1)
    assert usage.pressure_ratio(limit) == 0.0


def test_cumulative_pressure_may_pass_one() -> None:
    usage = CumulativeUsage()
    usage.add_turn(input_tokens=150_000, output_tokens=100_000)
    assert usage.pressure_ratio(200_000) == pytest.approx(1.25)


def test_cumulative_negative_deltas_count_as_zero() -> None:
    usage = CumulativeUsage()
    usage.add_turn(input_tokens=-5, output_tokens=-7, cache_read_tokens=-9)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (0, 0, 0)


def test_cumulative_cumulative_totals_across_turns_cross_threshold() -> None:
    # 5.2 case 3: 200+200 (0.4), then 100+100: cumulative 600 of 1000 crosses 0.5.
    tracker = UsageTracker()
    tracker.observe_turn(CallUsage(input_tokens=200, output_tokens=200, cache_read_input_tokens=5))
    first = tracker.current(1000)
    tracker.observe_turn(CallUsage(input_tokens=100, output_tokens=100, cache_read_input_tokens=7))
    second = tracker.current(1000)
    assert first.source is UsageSource.CUMULATIVE
    assert first.pressure == pytest.approx(0.4)
    assert second.pressure == pytest.approx(0.6)
    assert tracker.cumulative.cache_read_tokens == 12
    assert second.zone(0.5, 0.9) is Zone.SOFT


def test_missing_turn_usage_disables_cumulative_tracking() -> None:
    tracker = UsageTracker()
    tracker.observe_turn(CallUsage(input_tokens=100, output_tokens=100))
    tracker.observe_turn(None)
    assert not tracker.cumulative.is_tracking_enabled()
    assert tracker.current(1000).source is UsageSource.DISABLED
    assert tracker.current(1000).pressure == 0.0


# -- the accounting rule (docs/ARCHITECTURE.md): the latest call, all four fields ----------


def test_context_is_latest_call_all_fields_never_summed() -> None:
    tracker = UsageTracker()
    for cache_read in (31_000, 33_000, 35_000):
        tracker.observe_call(
            CallUsage(
                input_tokens=12,
                cache_creation_input_tokens=1_500,
                cache_read_input_tokens=cache_read,
                output_tokens=400,
            )
        )
    usage = tracker.current(200_000)
    assert usage.source is UsageSource.PER_CALL
    assert usage.source.exact
    assert usage.tokens == 12 + 1_500 + 35_000 + 400


def test_per_call_wins_over_cumulative_and_estimate() -> None:
    tracker = UsageTracker()
    tracker.observe_transcript_size(40_000)
    assert tracker.current(200_000).source is UsageSource.ESTIMATE
    assert tracker.current(200_000).tokens == 10_000
    tracker.observe_turn(CallUsage(input_tokens=3000, output_tokens=100))
    assert tracker.current(200_000).source is UsageSource.CUMULATIVE
    tracker.observe_call(CallUsage(cache_read_input_tokens=50_000))
    assert tracker.current(200_000).source is UsageSource.PER_CALL


def test_nothing_known_means_disabled_and_zero_pressure() -> None:
    usage = UsageTracker().current(200_000)
    assert usage.source is UsageSource.DISABLED
    assert usage.pressure == 0.0
    assert usage.zone(0.7, 0.9) is Zone.NORMAL


def test_reset_forgets_the_old_session() -> None:
    tracker = UsageTracker()
    tracker.observe_call(CallUsage(input_tokens=150_000))
    tracker.reset()
    assert tracker.current(200_000).source is UsageSource.DISABLED


def test_one_real_turn_under_each_source() -> None:
    """Seed 001's debug log: input 487, output 5,880, cache read 1,432,262, summed over a turn.

    - Read as if it were one call (the seed's original bug): 719% of a 200K window.
    - Seed 001's cumulative rule (input + output only): 6,367 tokens, 3.2%.
    - The per-call rule needs the calls themselves; the turn's sum is not one. Its
      last call, at most the window, is what the CLI's /context shows.
    """
    summed = CallUsage(input_tokens=487, output_tokens=5_880, cache_read_input_tokens=1_432_262)
    as_if_one_call = ContextUsage(summed.context_tokens, 200_000, UsageSource.PER_CALL, summed)
    assert as_if_one_call.percent == pytest.approx(719.3, abs=0.1)

    tracker = UsageTracker()
    tracker.observe_turn(summed)
    cumulative = tracker.current(200_000)
    assert cumulative.source is UsageSource.CUMULATIVE
    assert cumulative.tokens == 6_367
    assert cumulative.percent == pytest.approx(3.18, abs=0.01)

    # The same turn's last call, as the stream reports it: the real window is much
    # fuller than the cumulative figure, because most of the prompt is cache reads.
    last_call = CallUsage(
        input_tokens=9,
        cache_creation_input_tokens=812,
        cache_read_input_tokens=96_102,
        output_tokens=1_204,
    )
    tracker.observe_call(last_call)
    per_call = tracker.current(200_000)
    assert per_call.tokens == 98_127
    assert cumulative.tokens < per_call.tokens < as_if_one_call.tokens


# -- bad usage fields --------------------------------------------------------------------


def test_parse_missing_and_none_mean_zero() -> None:
    usage, notes = CallUsage.parse({"input_tokens": 5, "cache_read_input_tokens": None})
    assert usage == CallUsage(input_tokens=5)
    assert notes == ()
    assert CallUsage.parse(None) == (CallUsage(), ())


def test_parse_clamps_negative_with_a_note() -> None:
    usage, notes = CallUsage.parse({"input_tokens": -3, "output_tokens": 4})
    assert usage == CallUsage(output_tokens=4)
    assert notes == ("usage field input_tokens = -3 clamped to 0",)


def test_parse_accepts_numeric_strings_and_integral_floats() -> None:
    usage, _ = CallUsage.parse({"input_tokens": " 12 ", "output_tokens": 3.0})
    assert usage == CallUsage(input_tokens=12, output_tokens=3)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"input_tokens": "lots"},
            "usage field input_tokens = 'lots': expected a token count, got text",
        ),
        (
            {"output_tokens": True},
            "usage field output_tokens = True: expected a token count, got a boolean",
        ),
        (
            {"cache_read_input_tokens": 2.5},
            "usage field cache_read_input_tokens = 2.5: expected a whole token count",
        ),
        (
            {"input_tokens": float("nan")},
            "usage field input_tokens = nan: expected a whole token count",
        ),
        ({"input_tokens": [1]}, "usage field input_tokens = [1]: expected a token count, got list"),
    ],
)
def test_parse_rejects_non_counts_with_the_field_named(
    raw: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageFieldError) as caught:
        CallUsage.parse(raw)
    assert str(caught.value) == message


def test_parse_rejects_a_non_mapping() -> None:
    with pytest.raises(UsageFieldError, match="expected a mapping"):
        CallUsage.parse(["input_tokens", 3])  # type: ignore[arg-type]


def test_zones_at_exact_thresholds() -> None:
    def at(tokens: int) -> Zone:
        return ContextUsage(tokens, 1000, UsageSource.PER_CALL).zone(0.7, 0.9)

    assert [at(699), at(700), at(899), at(900), at(1500)] == [
        Zone.NORMAL,
        Zone.SOFT,
        Zone.SOFT,
        Zone.HARD,
        Zone.HARD,
    ]


def test_estimate_is_characters_over_four_rounded_up() -> None:
    assert [estimate_tokens(n) for n in (0, 1, 4, 5, 400, -3)] == [0, 1, 1, 2, 100, 0]


# -- properties --------------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=10**9)
wire_values = st.one_of(
    st.none(),
    st.integers(-(10**6), 10**9),
    st.text(max_size=8),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=2),
)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
                "x",
            ]
        ),
        wire_values,
    )
)
def test_parse_never_crashes_otherwise_and_never_goes_negative(raw: dict[str, object]) -> None:
    try:
        usage, _ = CallUsage.parse(raw)
    except UsageFieldError as exc:
        assert "usage field" in str(exc)
        return
    assert (
        min(
            usage.input_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
            usage.output_tokens,
        )
        >= 0
    )


@given(st.lists(st.tuples(counts, counts, counts, counts), min_size=1, max_size=30))
def test_context_is_always_the_last_call(calls: list[tuple[int, int, int, int]]) -> None:
    tracker = UsageTracker()
    for values in calls:
        tracker.observe_call(CallUsage(*values))
    assert tracker.current(200_000).tokens == sum(calls[-1])


@given(st.lists(st.tuples(counts, counts, counts), max_size=30), st.integers(1, 10**7))
def test_cumulative_pressure_is_input_plus_output_over_limit(
    turns: list[tuple[int, int, int]], limit: int
) -> None:
    usage = CumulativeUsage()
    for inp, out, cache in turns:
        usage.add_turn(input_tokens=inp, output_tokens=out, cache_read_tokens=cache)
    expected = sum(t[0] + t[1] for t in turns) / limit
    assert usage.pressure_ratio(limit) == pytest.approx(expected)


def test_a_usage_event_lays_the_figure_out_flat_and_reads_it_back_whole() -> None:
    call = CallUsage(3, 200, 9_000, 40)
    figure = ContextUsage(call.context_tokens, 200_000, UsageSource.PER_CALL, call)
    event = ev.UsageRecorded.of(figure, at=1.0, session="a", call_started=True)
    assert event.usage == figure and event.pressure == figure.pressure
    line = json.loads(ev.event_json(event))  # the journal keeps the call's counts flat
    assert [line[name] for name in USAGE_FIELDS] == [3, 200, 9_000, 40]
    assert ev.parse_event(line) == event
    estimate = ContextUsage(500, 200_000, UsageSource.ESTIMATE)
    assert ev.UsageRecorded.of(estimate, at=1.0, session="a").usage == estimate
    disabled = ContextUsage(0, 200_000, UsageSource.DISABLED)
    assert ev.UsageRecorded.of(disabled, at=1.0, session="a").pressure == 0.0
