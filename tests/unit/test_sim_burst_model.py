"""The burst model of the model oracle: its fit, and the best revisits it plans."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ostinato.sim.burst_model import BurstModel, fit, solve_revisits


def _cho_freshness_interval(rate: float, multiplier: float) -> float:
    """Cho & Garcia-Molina's freshness optimum: 1 − (1 + x)e^{−x} = μλ, interval x / λ (by bisection)."""
    lo, hi = 1e-9, 200.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 1 - (1 + mid) * math.exp(-mid) < multiplier * rate else (lo, mid)
    return lo / rate


@pytest.mark.parametrize("rate", [0.05, 0.5, 3.0])
def test_for_poisson_changes_the_revisits_are_the_freshness_optimum_whatever_the_age(rate):
    revisits = solve_revisits(BurstModel(0.5, rate, rate), 1 / 24, 1000.0)
    for multiplier in (0.1, 0.5, 2.0):
        if multiplier * rate >= 0.9:  # (never, or hardly ever, worth a visit: no interior optimum to compare)
            continue
        wanted = _cho_freshness_interval(rate, multiplier)
        planned = [revisits.interval(multiplier, age) for age in (0.0, 0.3, 30.0)]
        assert max(planned) == pytest.approx(min(planned), rel=1e-9)  # the age tells nothing
        assert planned[0] == pytest.approx(wanted, rel=0.12)  # within a step of the grid of intervals
        assert 1 / revisits.demand(multiplier) == pytest.approx(planned[0], rel=1e-6)


def test_a_visit_in_a_burst_comes_back_soon_and_one_after_a_quiet_spell_waits():
    revisits = solve_revisits(BurstModel(0.6, 48.0, 0.1), 1 / 24, 1000.0)
    in_burst, quiet = revisits.interval(1.0, 0.0), revisits.interval(1.0, 5.0)
    assert in_burst < 0.5 < 3 < quiet
    # a dearer visit waits longer, and fewer are asked for
    assert revisits.interval(4.0, 5.0) > quiet and revisits.demand(4.0) < revisits.demand(1.0)


def test_the_fit_finds_the_two_kinds_of_gap():
    rng = np.random.default_rng(7)
    burst = rng.random(4000) < 0.4
    gaps = np.where(burst, rng.exponential(1 / 30.0, 4000), rng.exponential(10.0, 4000))
    model = fit(gaps, censored=2.0)
    assert model.p == pytest.approx(0.4, abs=0.03)
    assert model.fast == pytest.approx(30.0, rel=0.1) and model.slow == pytest.approx(0.1, rel=0.1)
    assert model.quiet_share(0.0) < 0.7 < 0.99 < model.quiet_share(1.0)


def test_a_short_history_is_poisson_at_its_mean_rate():
    model = fit(np.array([2.0, 4.0]), censored=4.0)
    assert model.fast == model.slow == pytest.approx(2 / 10.0)
