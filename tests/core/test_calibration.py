"""The session's token density: a line fitted through (estimate, measured) pairs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mala_tui.core.calibration import MIN_SPREAD_TOKENS, Calibration


def fed(density: float, overhead: int, estimates: list[int]) -> Calibration:
    calibration = Calibration()
    for estimate in estimates:
        calibration.observe(estimate, overhead + round(density * estimate))
    return calibration


@pytest.mark.parametrize("density", [1.0, 2.0, 4.0, 0.8])
def test_the_fit_finds_the_density_whatever_the_overhead(density: float) -> None:
    calibration = fed(density, 13_000, [500, 4_000, 9_000, 20_000, 31_000])
    found = calibration.density
    assert found.measured
    assert found.ratio == pytest.approx(density, rel=0.01)
    assert found.overhead == pytest.approx(13_000, abs=50)


def test_a_plain_ratio_would_be_wrong_early_and_the_fit_is_not() -> None:
    # 13,000 tokens of system prompt and tools against 8,000 of conversation at 1x:
    # measured / estimate says 2.6x; the slope says 1x.
    calibration = fed(1.0, 13_000, [1_000, 8_000])
    assert calibration.density.ratio == pytest.approx(1.0, rel=0.01)


def test_until_the_pairs_spread_the_prior_holds() -> None:
    calibration = Calibration()
    assert not calibration.density.measured and calibration.density.ratio == 1.0
    calibration.observe(1_000, 20_000)
    calibration.observe(1_000 + MIN_SPREAD_TOKENS - 1, 24_000)
    density = calibration.density
    assert not density.measured and density.ratio == 1.0
    assert density.overhead > 0


def test_a_restart_keeps_the_fit_as_its_prior_and_starts_new_pairs() -> None:
    calibration = fed(3.0, 10_000, [1_000, 10_000, 30_000])
    calibration.restart()
    density = calibration.density
    assert not density.measured
    assert density.ratio == pytest.approx(3.0, rel=0.01)


def test_nonsense_pairs_do_not_make_a_nonsense_density() -> None:
    calibration = Calibration()
    calibration.observe(1_000, 100_000)
    calibration.observe(50_000, 1_000)  # masked and measured out of order: a negative slope
    assert calibration.density.ratio == 1.0
    calibration.observe(0, 5_000)  # ignored: nothing to pair
    calibration.observe(5_000, 0)
    assert not calibration.density.measured


@given(
    density=st.floats(min_value=0.5, max_value=6.0),
    overhead=st.integers(min_value=0, max_value=40_000),
    steps=st.lists(st.integers(min_value=200, max_value=20_000), min_size=3, max_size=40),
)
def test_the_fit_stays_within_a_percent_on_growing_conversations(
    density: float, overhead: int, steps: list[int]
) -> None:
    estimates, total = [], 0
    for step in steps:
        total += step
        estimates.append(total)
    calibration = fed(density, overhead, estimates)
    if estimates[-1] - estimates[0] >= MIN_SPREAD_TOKENS:
        assert calibration.density.ratio == pytest.approx(density, rel=0.01)
