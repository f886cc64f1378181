"""The simulator's measures on tiny hand-made histories, with exact expected freshness and age."""

from __future__ import annotations

import numpy as np
import pytest

from ostinato.sim.archive_tracker import FAILED, NOT_FOUND, SUCCESS, ArchiveTracker
from ostinato.sim.engine import _apply_step

A = np.array


def _tracker(births=(0.0,), dead=None, start=10.0, end=20.0):
    births = A(births, dtype=float)
    return ArchiveTracker(births, np.zeros(births.size, bool) if dead is None else A(dead), start, end)


def test_one_source_two_stale_periods_in_the_window():
    t = _tracker()
    first = t.capture(A([0]), A([5.0]))  # archives the initial version
    assert [x.tolist() for x in first] == [[True], [-1], [0]]
    t.apply_changes(A([0]), A([12.0]))
    assert [x.tolist() for x in t.capture(A([0]), A([14.0]))] == [[True], [1], [1]]
    t.apply_changes(A([0, 0]), A([15.0, 16.0]))
    assert [x.tolist() for x in t.capture(A([0]), A([18.0]))] == [[True], [2], [3]]
    assert [x.tolist() for x in t.capture(A([0]), A([19.0]))] == [[False], [0], [3]]
    m = t.finish()
    # stale [12, 14) and [15, 18): 5 of 10 days
    assert m.freshness == pytest.approx(0.5)
    # age: ∫ over [12,14) of (t − 12) = 2, over [15,18) of (t − 15) = 4.5
    assert m.mean_age == pytest.approx(6.5 / 10)
    # latencies 14 − 12, 18 − 15, 18 − 16
    assert m.change_latency == pytest.approx(7 / 3)
    assert m.changes_captured == 3
    assert m.staleness_max == pytest.approx(3.0)
    assert m.never_visited == 0 and m.source_days == pytest.approx(10)


def test_population_fresh_never_archived_straddling_and_dead_sources():
    t = _tracker(births=(0, 0, 0, 0, 0), dead=(False, False, False, False, True))
    t.capture(A([0, 1, 3]), A([5.0, 1.0, 2.0]))
    t.apply_changes(A([0, 3]), A([12.0, 8.0]))
    t.capture(A([0, 3]), A([14.0, 11.0]))
    # source 1: fresh all along; source 2: never archived (stale since its birth at 0);
    # source 3: stale from 8, across the window's start, to 11; source 4: dead, not counted
    m = t.finish()
    stale = 2 + 10 + 1
    age = 2 + (20**2 - 10**2) / 2 + ((11 - 8) ** 2 - (10 - 8) ** 2) / 2
    assert m.source_days == pytest.approx(40)
    assert m.freshness == pytest.approx(1 - stale / 40)
    assert m.mean_age == pytest.approx(age / 40)
    assert m.staleness_max == pytest.approx(20.0)  # the never-archived source, at the window's end
    assert sorted(m.age_by_source.round(6).tolist()) == sorted([0.2, 0.0, 15.0, 0.25])
    assert m.never_visited == 1 and m.never_visited_born_before_window == 1
    # the change at 8 was captured at 11, inside the window; the one at 12 at 14
    assert m.change_latency == pytest.approx((3 + 2) / 2)


def test_new_sources_first_visit_latency_and_window_exposure():
    t = _tracker(births=(0, 12, 15, 25), start=10, end=20)
    t.capture(A([0]), A([1.0]))
    t.capture(A([1]), A([13.5]))
    m = t.finish()
    # born at 12: stale until 13.5; born at 15: never archived, stale 15–20; born at 25: not yet
    assert m.source_days == pytest.approx(10 + 8 + 5)
    assert m.freshness == pytest.approx(1 - (1.5 + 5) / 23)
    assert m.new_sources == 2 and m.new_sources_not_visited == 1
    assert m.first_visit_latency["mean"] == pytest.approx(1.5)
    assert m.never_visited == 1


def test_visits_by_outcome_in_the_window_only():
    t = _tracker(births=(0, 0))
    t.count_outcomes(A([5.0, 11.0, 12.0, 13.0, 14.0, 20.0]), A([SUCCESS, SUCCESS, SUCCESS, FAILED, NOT_FOUND, SUCCESS]),
                     A([True, True, False, False, False, True]))
    m = t.finish()
    assert (m.visits, m.eventful, m.uneventful, m.failed, m.not_found, m.wasted) == (4, 1, 1, 1, 1, 2)
    assert m.visits_per_day == pytest.approx(0.4)


def test_freshness_samples():
    t = _tracker(births=(0, 0, 5))
    t.capture(A([0]), A([1.0]))
    assert t.sample(2.0) == pytest.approx(0.5)  # source 2 not born yet; source 1 never archived
    t.apply_changes(A([0]), A([3.0]))
    assert t.sample(4.0) == pytest.approx(0.0)
    assert t.sample(6.0) == pytest.approx(0.0)


def _visits(sources, ends, outcomes):
    sources = A(sources, dtype=np.int64)
    return {"source": sources, "start": A(ends) - 0.01, "end": A(ends, dtype=float),
            "outcome": A(outcomes, dtype=np.int64), "number": np.ones(sources.size, dtype=np.int64)}


def test_a_step_applies_changes_and_visits_in_time_order():
    t = _tracker(births=(0, 0, 0), start=0, end=10)
    scratch = np.full(3, np.inf)
    _apply_step(t, A([], dtype=np.int64), A([]), _visits([0, 1, 2], [0.5, 0.5, 0.5], [SUCCESS] * 3), scratch)
    # step [1, 2): source 0 changes at 1.2 and 1.8, its visit ends at 1.5 and again at 1.9 (two rounds);
    # source 1 changes at 1.7 after its visit at 1.6; source 2's visit fails at 1.1, after its change at 1.05
    visits = _visits([0, 1, 2, 0], [1.5, 1.6, 1.1, 1.9], [SUCCESS, SUCCESS, FAILED, SUCCESS])
    _apply_step(t, A([0, 0, 1, 2]), A([1.2, 1.8, 1.7, 1.05]), visits, scratch)
    assert visits["eventful"].tolist() == [True, False, False, True]
    assert visits["changes"].tolist() == [1, 0, -1, 1]
    assert visits["version"].tolist() == [1, 0, -1, 2]
    assert np.isinf(scratch).all()
    assert t.first_unarchived[1] == pytest.approx(1.7) and t.first_unarchived[2] == pytest.approx(1.05)
    assert np.isinf(t.first_unarchived[0])
    m = t.finish()
    # stale: all three from 0 to 0.5; source 0 [1.2, 1.5) and [1.8, 1.9); source 1 from 1.7; source 2 from 1.05
    stale = 1.5 + 0.3 + 0.1 + (10 - 1.7) + (10 - 1.05)
    assert m.freshness == pytest.approx(1 - stale / 30)
