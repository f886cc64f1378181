"""The simulator's workloads follow their definitions (statistically, fixed seed), and the
world's changes are Poisson processes that replay exactly from the seed."""

from __future__ import annotations

import numpy as np
import pytest

from ostinato.sim.workloads import (
    MIXTURE_SHARES,
    RATE_MAX,
    RATE_MIN,
    WEB_BINS,
    WORKLOADS,
    git_mixture_components,
    web_cho2000_components,
)
from ostinato.sim.world import World, WorldConfig

SIZE = 200_000


def test_git_lognormal_median_spread_and_clip():
    rates = WORKLOADS["git_lognormal"].rates(1, SIZE)
    assert np.median(rates) == pytest.approx(1 / 60, rel=0.02)
    logs = np.log(rates)
    inside = (rates > RATE_MIN) & (rates < RATE_MAX)
    # σ = 2: the interquartile range of log-rates is 2 × 0.6745 σ (clipping touches only the far tails)
    assert np.subtract(*np.percentile(logs, [75, 25])) == pytest.approx(2 * 0.6745 * 2, rel=0.02)
    assert rates.min() >= RATE_MIN and rates.max() <= RATE_MAX
    # P(rate < 1/36500) = Φ(ln(60/36500)/2) ≈ 0.0007: some are clipped at the bottom
    assert 0.0003 < (rates == RATE_MIN).mean() < 0.0012
    assert inside.mean() > 0.99
    assert WORKLOADS["git_lognormal"].counts_changes


def test_web_cho2000_bin_shares_and_log_uniform_within_bins():
    rng = np.random.default_rng(2)
    rates, bins = web_cho2000_components(rng, SIZE)
    intervals = 1 / rates
    edges = [(1 / 50, 1), (1, 7), (7, 30), (30, 120), (120, 3650)]
    for (low, high), (b_low, b_high, share) in zip(edges, WEB_BINS, strict=True):
        assert (low, high) == pytest.approx((b_low, b_high))
        in_bin = (intervals >= low) & (intervals <= high)
        assert in_bin.mean() == pytest.approx(share, abs=0.005)
        # log-uniform: the geometric middle of the bin splits it in half
        assert (intervals[in_bin] < np.sqrt(low * high)).mean() == pytest.approx(0.5, abs=0.02)
    assert intervals.max() <= 3650 and intervals.min() >= 1 / 50
    assert not WORKLOADS["web_cho2000"].counts_changes


def test_git_mixture_components():
    rng = np.random.default_rng(3)
    rates, parts = git_mixture_components(rng, SIZE)
    for index, (name, share) in enumerate(MIXTURE_SHARES):
        assert (parts == index).mean() == pytest.approx(share, abs=0.005), name
    dormant, active, hot = (rates[parts == i] for i in range(3))
    assert (1 / dormant).min() >= 365 and (1 / dormant).max() <= 3650
    assert (1 / dormant < np.sqrt(365 * 3650)).mean() == pytest.approx(0.5, abs=0.02)
    assert np.median(active) == pytest.approx(1 / 30, rel=0.03)
    assert np.subtract(*np.percentile(np.log(active), [75, 25])) == pytest.approx(2 * 0.6745 * 1.5, rel=0.03)
    assert hot.min() >= 0.3 and hot.max() <= 30
    assert np.median(hot) == pytest.approx(3.0, rel=0.05)


def test_same_seed_same_rates_other_seed_other_rates():
    for workload in WORKLOADS.values():
        assert np.array_equal(workload.rates(5, 1000), workload.rates(5, 1000))
        assert not np.array_equal(workload.rates(5, 1000), workload.rates(6, 1000))


def _world(**changes):
    config = dict(workload="git_lognormal", sources=2000, seed=9, horizon=400.0, new_sources_per_day=2.0,
                  dead_share=0.1, share_last_update=0.3)
    config.update(changes)
    return World(WorldConfig(**config))


def _run(world, step=1 / 24):
    found = [world.advance(k * step, (k + 1) * step) for k in range(int(round(world.config.horizon / step)))]
    return np.concatenate([c.sources for c in found]), np.concatenate([c.times for c in found])


def test_changes_are_poisson_with_each_sources_rate():
    world = _world(sources=3, new_sources_per_day=0.0, dead_share=0.0, horizon=20_000.0)
    world.rates[:] = [0.05, 1.0, 7.0]
    with np.errstate(divide="ignore"):
        world.next_change = world.birth + world._rng.exponential(size=3) / world.rates
    sources, times = _run(world, step=1.0)
    for source, rate in enumerate(world.rates):
        mine = np.sort(times[sources == source])
        expected = rate * 20_000
        assert mine.size == pytest.approx(expected, abs=4 * np.sqrt(expected))
        gaps = np.diff(mine)
        # exponential gaps: mean 1/λ, and the share longer than the mean is e^{-1}
        assert gaps.mean() == pytest.approx(1 / rate, rel=0.1)
        assert (gaps > 1 / rate).mean() == pytest.approx(np.exp(-1), abs=0.04)
    assert world.version.tolist() == [int((sources == s).sum()) for s in range(3)]


def test_changes_come_in_time_order_within_each_step_and_source():
    world = _world()
    world.rates[:50] = 40.0  # several changes per step for some
    with np.errstate(divide="ignore"):
        world.next_change = world.birth + world._rng.exponential(size=world.size) / world.rates
    found = world.advance(0.0, 1.0)
    for source in range(50):
        mine = found.times[found.sources == source]
        assert mine.size > 10 and (np.diff(mine) > 0).all() and ((mine >= 0) & (mine < 1)).all()


def test_the_history_depends_only_on_the_seed():
    first, second = _run(_world()), _run(_world(share_last_update=0.0))  # what the listers say changes nothing
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])
    third = _run(_world(seed=10))
    assert not (first[0].size == third[0].size and np.array_equal(first[1], third[1]))


def test_births_dead_sources_and_forges():
    world = _world()
    births = world.birth[world.config.sources:]
    assert births.size == pytest.approx(2.0 * 400, abs=4 * np.sqrt(800))
    assert (np.diff(births) >= 0).all() and births.min() > 0 and births.max() < 400
    assert world.born_by(0.0) == world.config.sources
    assert world.dead[: world.config.sources].mean() == pytest.approx(0.1, abs=0.03)
    assert not world.dead[world.config.sources:].any()
    assert (world.rates[world.dead] == 0).all()
    assert world.reports_last_update.mean() == pytest.approx(0.3, abs=0.03)
    sources, times = _run(world)
    assert not world.dead[sources].any()
    assert (times >= world.birth[sources]).all()
    born_late = world.birth > 200
    assert (world.last_change[born_late] >= world.birth[born_late]).all()
