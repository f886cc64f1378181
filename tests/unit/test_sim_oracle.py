"""The oracle's maths: closed forms against numeric integration and simulation, the inverse
functions, and the KKT conditions of the optimal allocations."""

from __future__ import annotations

import numpy as np
import pytest

from ostinato.sim import oracle
from ostinato.sim.archive_tracker import ArchiveTracker
from ostinato.sim.oracle import allocate, expected_age, expected_freshness, solve_g, solve_h

CASES = [(0.01, 1.0), (0.5, 0.2), (2.0, 1.0), (30.0, 0.5), (1e-4, 1 / 60), (3.0, 24.0)]


@pytest.mark.parametrize("rate,freq", CASES)
def test_closed_forms_match_numeric_integration_of_a_periodic_schedule(rate, freq):
    # visits at 0, 1/f, 2/f, …: at time t after a visit the copy is fresh with probability
    # e^{−λt}, and the expected age is ∫_0^t (t − s) λe^{−λs} ds; average both over a period
    period = 1 / freq
    t = np.linspace(0, period, 200_001)
    fresh = np.exp(-rate * t)
    # E[age(t)] integrated over s in [0, t] numerically too (not by its closed form)
    coarse = t[::100]
    s = np.linspace(0, 1, 20_001)
    age = np.array([np.trapezoid((tt - tt * s) * rate * np.exp(-rate * tt * s), tt * s) for tt in coarse])
    assert expected_freshness(rate, freq) == pytest.approx(np.trapezoid(fresh, t) / period, rel=1e-8)
    assert expected_age(rate, freq) == pytest.approx(np.trapezoid(age, coarse) / period, rel=1e-5, abs=1e-12)


def test_closed_forms_match_a_simulated_periodic_schedule():
    rng = np.random.default_rng(7)
    rates = np.array([0.05, 0.4, 1.5, 6.0])
    freq = 0.5
    horizon, start = 4000.0, 100.0
    tracker = ArchiveTracker(np.zeros(rates.size), np.zeros(rates.size, bool), start, horizon)
    visits = np.arange(0.0, horizon, 1 / freq)
    for i, rate in enumerate(rates):
        changes = np.cumsum(rng.exponential(1 / rate, int(rate * horizon * 1.5) + 100))
        changes = changes[changes < horizon]
        # apply in time order: changes up to each visit, then the visit
        done = 0
        for v in visits:
            upto = np.searchsorted(changes, v, side="right")
            tracker.apply_changes(np.full(upto - done, i), changes[done:upto])
            done = upto
            tracker.capture(np.array([i]), np.array([v]))
    metrics = tracker.finish()
    expected_f = expected_freshness(rates, freq).mean()
    expected_a = expected_age(rates, freq).mean()
    assert metrics.freshness == pytest.approx(expected_f, rel=0.02)
    assert metrics.mean_age == pytest.approx(expected_a, rel=0.04)


def test_the_series_and_closed_forms_agree_where_they_meet():
    x = np.array([oracle._SERIES_BELOW * (1 - 1e-9), oracle._SERIES_BELOW * (1 + 1e-9)])
    for fun in (oracle._h, oracle._g, oracle._age_factor):
        low, high = fun(x)
        assert low == pytest.approx(high, rel=1e-8)


def test_inverse_functions():
    x = np.logspace(-5, np.log10(20), 400)
    assert np.allclose(solve_h(oracle._h(x)), x, rtol=1e-9)
    x = np.logspace(-5, 4, 400)
    assert np.allclose(solve_g(oracle._g(x)), x, rtol=1e-11)


@pytest.mark.parametrize("rate,freq", CASES)
def test_marginals_are_the_derivatives(rate, freq):
    """The derivations: ∂F/∂f = h(λ/f)/λ and −∂A/∂f = g(λ/f)/λ², checked by central differences."""
    step = freq * 1e-5
    dF = (expected_freshness(rate, freq + step) - expected_freshness(rate, freq - step)) / (2 * step)
    dA = (expected_age(rate, freq + step) - expected_age(rate, freq - step)) / (2 * step)
    assert oracle.freshness_marginal(rate, freq) == pytest.approx(dF, rel=1e-5)
    assert oracle.age_marginal(rate, freq) == pytest.approx(-dA, rel=1e-5)


def _rates(size=5000, seed=3):
    rng = np.random.default_rng(seed)
    return np.clip(np.exp(np.log(1 / 60) + 2 * rng.standard_normal(size)), 1 / 36500, 50)


@pytest.mark.parametrize("objective", ["freshness", "age"])
@pytest.mark.parametrize("floor", [0.0, 1 / 60])
def test_allocation_meets_the_kkt_conditions(objective, floor):
    rates = _rates()
    capacity = rates.size / 7
    result = allocate(rates, capacity, objective=objective, floor=floor)
    f = result.freqs
    assert f.sum() == pytest.approx(capacity, rel=1e-9)
    assert (f >= floor * (1 - 1e-9)).all()
    # marginal value of one more visit a day, by finite differences of the objective
    h = np.maximum(f * 1e-6, 1e-12)
    value = expected_freshness if objective == "freshness" else (lambda r, q: -expected_age(r, q))
    marginal = (value(rates, f + h) - value(rates, np.maximum(f - h, 0))) / (f + h - np.maximum(f - h, 0))
    free = f > floor * (1 + 1e-6)
    mu = result.multiplier
    assert free.sum() > rates.size / 2
    assert np.allclose(marginal[free], mu, rtol=1e-4)
    # where the constraint binds (f at the floor, or 0), one more visit is worth no more than μ
    assert (marginal[~free] <= mu * (1 + 1e-4)).all()
    if objective == "freshness" and floor == 0:
        # freshness leaves alone the sources that change too fast: 1/λ ≤ μ exactly there
        assert ((f == 0) == (rates * mu >= 1)).all()
        assert (f == 0).any()
    else:
        assert (f > 0).all()


@pytest.mark.parametrize("objective", ["freshness", "age"])
def test_no_transfer_of_visits_improves_the_optimum(objective):
    rates = _rates(400, seed=11)
    capacity = rates.size / 7
    f = allocate(rates, capacity, objective=objective).freqs
    total = expected_freshness(rates, f).sum() if objective == "freshness" else -expected_age(rates, f).sum()
    rng = np.random.default_rng(5)
    for _ in range(300):
        i, j = rng.choice(rates.size, 2, replace=False)
        moved = f.copy()
        delta = min(moved[i], 0.01 * capacity / rates.size)
        moved[i] -= delta
        moved[j] += delta
        other = expected_freshness(rates, moved).sum() if objective == "freshness" else -expected_age(rates, moved).sum()
        assert other <= total + 1e-9


def test_oracle_beats_uniform_and_each_wins_its_own_objective():
    rates = _rates()
    capacity = rates.size / 7
    uniform = np.full(rates.size, capacity / rates.size)
    best_f = allocate(rates, capacity, objective="freshness", floor=1 / 60).freqs
    best_a = allocate(rates, capacity, objective="age", floor=1 / 60).freqs
    assert expected_freshness(rates, best_f).mean() > expected_freshness(rates, uniform).mean()
    assert expected_age(rates, best_a).mean() < expected_age(rates, uniform).mean()
    assert expected_freshness(rates, best_f).mean() >= expected_freshness(rates, best_a).mean()
    assert expected_age(rates, best_a).mean() <= expected_age(rates, best_f).mean()


def test_a_multiplier_gives_new_sources_the_same_rule():
    rates = _rates(2000)
    result = allocate(rates, 300.0, objective="age", floor=1 / 60)
    assert np.allclose(result.freqs_for(rates), result.freqs, rtol=1e-6)
    assert result.freqs_for(np.array([0.0]))[0] == pytest.approx(1 / 60)


def test_sources_that_never_change_get_the_floor_only():
    rates = np.array([0.0, 0.0, 1.0, 0.1])
    assert allocate(rates, 2.0, objective="age").freqs[:2].tolist() == [0.0, 0.0]
    assert allocate(rates, 2.0, objective="age", floor=0.1).freqs[:2] == pytest.approx([0.1, 0.1])
    assert expected_freshness(0.0, 0.0) == 1.0 and expected_age(0.0, 0.0) == 0.0
    assert expected_freshness(1.0, 0.0) == 0.0 and expected_age(1.0, 0.0) == np.inf


def test_bad_input():
    with pytest.raises(ValueError, match="floor"):
        allocate(np.ones(100), 1.0, floor=1 / 60)
    with pytest.raises(ValueError, match="objective"):
        allocate(np.ones(3), 1.0, objective="speed")
    with pytest.raises(ValueError, match="rates"):
        allocate(np.array([1.0, -1.0]), 1.0)
    with pytest.raises(ValueError, match="capacity"):
        allocate(np.ones(3), 0.0)
