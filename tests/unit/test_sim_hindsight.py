"""The hindsight bounds on histories small enough to work out by hand, the age bound's dynamic
programme against every choice of visits, and the burstiness measures on Poisson and bursty changes."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest
from test_sim_trace import TRACE_CONFIG

from ostinato.sim import burstiness
from ostinato.sim.engine import SimulationConfig
from ostinato.sim.hindsight import WindowHistory, _source_cost, age_bound, freshness_bound, measure, window_history
from ostinato.sim.workloads import WORKLOADS
from ostinato.sim.world import World, WorldConfig


def hand_history(visits: int, warmup_visits: int) -> WindowHistory:
    """Window [0, 10): A, alive before it, changes at 2 and 5; B, born at 4, changes at 7; C, alive before it,
    never changes."""
    return WindowHistory(0.0, 10.0, visits, warmup_visits, since=np.array([0.0, 4.0, 0.0]),
                         until=np.array([10.0, 10.0, 10.0]), before=np.array([True, False, True]),
                         change_source=np.array([0, 0, 1]), change_time=np.array([2.0, 5.0, 7.0]))


def test_the_freshness_bound_by_hand():
    # gaps: A [0,2) (a warm-up visit may cover it) [2,5) [5,10); B [4,7) [7,10); C [0,10) (warm-up)
    lengths, warm = hand_history(2, 1).gaps()
    assert sorted(zip(lengths.tolist(), warm.tolist(), strict=True)) == [(2, True), (3, False), (3, False), (3, False), (5, False),
                                                            (10, True)]
    # one warm-up visit takes C's 10 days; two window visits the longest two of the rest: 5 and 3
    assert freshness_bound(hand_history(2, 1)) == pytest.approx((10 + 5 + 3) / 26)
    # with warm-up visits for both first gaps, and the window's two visits for 5 and 3
    assert freshness_bound(hand_history(2, 5)) == pytest.approx((10 + 2 + 5 + 3) / 26)
    # no warm-up: the first gaps compete with the others for the window's visits: C's 10 and A's 5 win
    assert freshness_bound(hand_history(2, 0)) == pytest.approx((10 + 5) / 26)
    assert freshness_bound(hand_history(6, 2)) == 1.0  # a visit for every gap


def test_the_age_bound_by_hand():
    # A (fresh at 0): no visit leaves it stale from 2 to 10 (32), one just after 5 leaves [2, 5) (4.5);
    # B (stale from its birth at 4): none 18, one 4.5. Two visits: one each, 9 day² over 26 source-days.
    assert age_bound(hand_history(2, 0)) == pytest.approx(9 / 26, rel=1e-6)
    assert age_bound(hand_history(1, 0)) == pytest.approx((4.5 + 18) / 26, rel=1e-6)
    assert age_bound(hand_history(3, 0)) == pytest.approx(4.5 / 26, rel=1e-6)  # the third visit: 4.5 day² saved
    assert age_bound(hand_history(4, 0)) == 0.0  # a visit just after each event


def _every_choice(events, end, price, fresh_first):
    best = np.inf
    for size in range(len(events) + 1):
        for chosen in itertools.combinations(range(len(events)), size):
            captured = set(chosen) | ({0} if fresh_first else set())
            cost, stale_from = 0.0, None
            for j, event in enumerate(events):
                stale_from = event if stale_from is None else stale_from
                if j in captured:
                    cost, stale_from = cost + (event - stale_from) ** 2 / 2, None
            if stale_from is not None:
                cost += (end - stale_from) ** 2 / 2
            best = min(best, cost + price * len(set(chosen) - ({0} if fresh_first else set())))
    return best


def test_the_age_programme_finds_the_best_visits():
    rng = random.Random(7)
    for _ in range(300):
        events = sorted(rng.uniform(0, 10) for _ in range(rng.randint(1, 7)))
        end = events[-1] + rng.uniform(0.01, 5)
        price = rng.choice([0.01, 0.3, 2.0, 20.0])
        fresh_first = rng.random() < 0.5
        assert _source_cost(events, end, price, fresh_first)[0] == pytest.approx(
            _every_choice(events, end, price, fresh_first), abs=1e-9)


def test_no_policy_beats_the_bounds_on_a_trace():
    from ostinato.sim.engine import run_policy
    from ostinato.sim.policies import policies_under_test

    config = replace(TRACE_CONFIG, capacity=0.3, max_gap=timedelta(days=30)).validated()
    history = window_history(config)
    assert history.since.tolist() == [2.0, 2.0, 5.0] and history.until.tolist() == [12.0, 12.0, 9.0]
    assert history.before.tolist() == [True, True, False]
    assert history.change_source.tolist() == [0, 0] and history.change_time.tolist() == [4.0, 7.0]
    bound = measure(config)
    assert bound.visits == 3  # 0.3 a day for the window's 10 days, in whole visits per step
    for name in ("uniform", "oracle_freshness", "oracle_age"):
        run = run_policy(policies_under_test()[name], config)
        assert run.metrics.freshness <= bound.freshness + 1e-9
        assert run.metrics.mean_age >= bound.mean_age - 1e-9


def test_poisson_changes_measure_as_poisson_and_bursts_do_not():
    def changes(workload):
        world = World(WorldConfig(workload, 3000, 3, 400.0))
        found = world.advance(0.0, 400.0)
        # the sources with enough gaps to measure, and not changing several times a day
        chosen = np.flatnonzero((world.rates > 0.05) & (world.rates < 2.0))
        keep = np.isin(found.sources, chosen)
        return world, chosen, found.sources[keep], found.times[keep]

    _, _, sources, times = changes("git_lognormal")
    poisson = burstiness.measure(sources, times)
    assert poisson.gap_cv_origins > 500
    assert poisson.gap_cv == pytest.approx(1.0, abs=0.05)
    assert poisson.soon_after_1d == pytest.approx(1.0, abs=0.05)
    assert poisson.soon_after_tenth == pytest.approx(1.0, abs=0.05)
    world, chosen, sources, times = changes("git_bursty")
    bursty = burstiness.measure(sources, times)
    assert bursty.gap_cv > 1.5 and bursty.soon_after_1d > 1.3 and bursty.soon_after_tenth > 1.5
    # the bursts keep each source's mean rate (the same rates as git_lognormal's, from the same seed)
    assert np.array_equal(world.rates, WORKLOADS["git_lognormal"].rates(3, 3000))
    assert sources.size == pytest.approx(world.rates[chosen].sum() * 400, rel=0.05)


def test_the_bound_and_burstiness_of_a_bursty_run():
    config = SimulationConfig(workload="git_bursty", sources=300, warmup=20, days=10, step=timedelta(hours=2), seed=4,
                              capacity=10.0)
    found = measure(config.validated())
    assert 0 < found.freshness < 1 and found.mean_age > 0
    assert found.burstiness.soon_after_tenth > 1.2
