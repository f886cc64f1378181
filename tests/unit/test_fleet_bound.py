"""The fluid bound of a fleet (``ostinato.sim.fleet_bound``): known on a two-schedule slot, held to a
cap on the worst schedule, met by no rule the simulator runs, and the named fleets' demand (the
slot-time their schedules need to stay out of ERROR) above their nominal load."""

from __future__ import annotations

import pytest

from ostinato.sim.fleet_bound import capacity, fluid_bound, worth
from ostinato.sim.fleet_engine import simulate
from ostinato.sim.fleets import fleet_named, parse_fleet


def two_on_one_slot(days: float = 0.25):
    """One slot, two hourly schedules of fixed runs: 30 minutes (worth 1) and 20 minutes (worth 2)."""
    return parse_fleet({
        "name": "two", "nodes": {"n1": 1}, "days": days, "warmup": "2h",
        "schedules": [
            {"name": "half", "period": "1h", "durations": {"dist": "fixed", "scale": "30m"}},
            {"name": "third", "period": "1h", "durations": {"dist": "fixed", "scale": "20m"}},
        ]})


def test_the_schedule_worth_most_is_kept_out_of_error_first():
    fleet = two_on_one_slot()
    assert [worth(s) for s in fleet.schedules] == pytest.approx([1.0, 2.0])
    bound = fluid_bound(fleet)
    assert bound is not None
    # "third" needs 0.5 slot and gets it; "half" gets the other 0.5 of the 1.0 it needs: ERROR half the time
    assert bound.demand == pytest.approx(1.5)
    assert bound.error_share == pytest.approx(0.25) and bound.worst_error_share == pytest.approx(0.5)


def test_a_cap_on_the_worst_schedule_costs_the_average():
    capped = fluid_bound(two_on_one_slot(), cap=0.4)
    assert capped is not None and capped.cap == 0.4
    # "half" gets 0.6 slot (ERROR 0.4), "third" the 0.4 left (ERROR 1 − 2 × 0.4)
    assert capped.worst_error_share == pytest.approx(0.4) and capped.error_share == pytest.approx(0.3)
    assert fluid_bound(two_on_one_slot(), cap=0.0) is None  # 1.5 slots needed, one there


def test_no_rule_beats_the_bound():
    fleet = two_on_one_slot(days=1)
    bound = fluid_bound(fleet)
    assert bound is not None
    for policy in ("greedy", "fifo", "spf", "lookahead"):
        run = simulate(fleet, 0, policy)
        assert run.error_share >= bound.error_share - 0.02, policy


def test_a_lost_node_lowers_the_capacity_for_its_time_in_the_window():
    fleet = fleet_named("lost-node")
    window_hours = fleet.days * 24 - 6
    assert capacity(fleet) == pytest.approx(12 - 4 * 1 / window_hours)


def test_the_named_fleets_need_more_than_their_load_says():
    """A run must end before the deadline counted from the last good start: a schedule needs a run every
    period less its run, not every period."""
    for name in ("load-0.9", "load-1.2"):
        fleet = fleet_named(name)
        bound = fluid_bound(fleet)
        assert bound is not None and bound.demand > fleet.load * 1.1
    overloaded = fluid_bound(fleet_named("load-1.2"))
    assert overloaded is not None and overloaded.error_share > 0.15
