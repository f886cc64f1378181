"""The offline replay of what a schedule knows at each visit (bench/sim/trace_information.py).

Its planning rule must be Cho and Garcia-Molina's freshness optimum when the changes are
Poisson, and its accounting must give the fresh time a visit buys: from the visit to the
next change, once per gap, inside the measured window.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository's root: bench.*

from bench.sim import trace_information as ti


@pytest.mark.parametrize(("rate", "interval"), [(0.01, 150.0), (0.05, 40.0), (0.2, 12.5), (1.0, 3.0)])
def test_the_poisson_plan_is_the_freshness_optimum(rate, interval):
    # At the optimum I of ((1 - e^(-λI)) / λ - μ) / I, the price is μ = (1 - e^(-λI)) / λ - I e^(-λI).
    price = (1 - math.exp(-rate * interval)) / rate - interval * math.exp(-rate * interval)
    planned = ti.poisson_interval(rate, price, {})
    assert planned == pytest.approx(interval, abs=2 * (ti.STEPS[1] - ti.STEPS[0]))


class _Every(ti.Knowledge):
    """A schedule that visits every ``days``, whatever it knows."""

    def __init__(self, days: float, window):
        super().__init__("trace mean rate", window, None)
        self.days = days

    def interval(self, origin, t, price):
        return self.days


def _fresh_by_hand(times, death, visits, window) -> float:
    """Fresh time in the window, on a grid of thousandths of a day: fresh when the newest visit
    came after the newest change."""
    grid = np.arange(window[0], window[1], 0.001) + 0.0005
    grid = grid[grid < death]
    newest_change = np.array(times)[np.searchsorted(times, grid, side="right") - 1]
    visited = np.array(sorted(visits))
    index = np.searchsorted(visited, grid, side="right") - 1
    newest_visit = np.where(index >= 0, visited[np.maximum(index, 0)], -np.inf)
    return float((newest_visit > newest_change).sum()) * 0.001


@pytest.mark.parametrize(("seed", "every", "death"), [(0, 15.0, math.inf), (1, 7.0, math.inf), (2, 25.0, 33.0),
                                                       (3, 3.0, 31.5)])
def test_the_replay_counts_the_fresh_time_each_visit_buys(seed, every, death):
    times = np.array([-5.0, 10.0, 12.0, 30.0])  # born before the window, three changes in it
    window = (0.0, 40.0)
    origin = ti.Origin(times, death, 0.1)
    fresh, visits = ti.replay([origin], _Every(every, window), 1.0, seed)
    first = random.Random(seed).random() * every
    starts = list(np.arange(first, min(death, window[1]), every))
    alive = min(death, window[1]) - window[0]
    assert visits == sum(window[0] <= v < window[1] for v in starts)
    assert fresh * alive == pytest.approx(_fresh_by_hand(times, death, starts, window), abs=0.01)


def test_a_second_visit_in_the_same_gap_buys_nothing():
    window = (0.0, 100.0)
    origin = ti.Origin(np.array([0.0, 50.0]), math.inf, 0.02)
    once, _ = ti.replay([origin], _Every(60.0, window), 1.0, 0)
    often, _ = ti.replay([origin], _Every(2.0, window), 1.0, 0)
    # every 2 days from 2u: stale until the first visit, and from the change at day 50 to the visit at 50 + 2u
    u = random.Random(0).random()
    assert often * 100 == pytest.approx(100 - 4 * u)
    # every 60 days from 60u (seed 0: day 50.7, after the change): one visit, fresh from it to the end
    assert 50 < 60 * u < 100
    assert once * 100 == pytest.approx(100 - 60 * u)
