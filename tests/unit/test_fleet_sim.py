"""The schedule-fleet simulation on tiny fleets whose answers are known: the ERROR time the greedy pick
leaves when a long run takes the only slot, the same draws under every rule (common random numbers),
a lost node's runs ended by the live schedulers' steal, the recovery measure, and bad fleets refused."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ostinato.domain.errors import ValidationError
from ostinato.sim.fleet_engine import FleetRun, FleetSimulation, recovery_time, simulate
from ostinato.sim.fleets import FLEETS, START, Draws, fleet_named, parse_fleet

H = 3600.0


def one_slot(**extra):
    """One slot; a daily 3h run due first (its deadline 2.4h after the start) and an hourly 1-minute run."""
    return parse_fleet({
        "name": "one-slot", "nodes": {"n1": 1}, "days": 0.25, "warmup": "0s", **extra,
        "schedules": [
            {"name": "long", "period": "1d", "durations": {"dist": "fixed", "scale": "3h"}, "phase": 1},
            {"name": "short", "period": "1h", "durations": {"dist": "fixed", "scale": "1m"}, "phase": 0},
        ]})


def test_greedy_starts_the_long_run_and_leaves_the_short_one_in_error_for_a_known_time():
    sim = FleetSimulation(one_slot(), 0, "greedy", verify=True)
    run = sim.run()
    # long: last good start 0.9 d before the start, so its deadline is at 2.4 h; it runs 0 h – 3 h (late by 36 m)
    assert sim._error_time["long"] == pytest.approx(0.6 * H)
    # short: last good start 61 s before the start, deadline at 58m59s; the slot is free at 3 h, its run ends at 3h01m
    assert sim._error_time["short"] == pytest.approx(3 * H + 60 - (H - 61))
    assert run.error_share == pytest.approx((0.6 * H + 3 * H + 60 - (H - 61)) / (2 * 6 * H))
    assert run.misses == 2 and run.worst_error == "short"
    assert sorted(run.lateness)[-2:] == pytest.approx([0.6 * H, 3 * H + 60 - (H - 61)])
    # WARNING: long while it runs and will end late (0 – 2.4 h); short in the minute before its deadline
    assert sim._warning_time["long"] == pytest.approx(2.4 * H)
    assert sim._warning_time["short"] == pytest.approx(60)
    assert run.error_count_at(1.5) == 1 and run.error_count_at(2.5) == 2 and run.error_count_at(3.5) == 0
    assert run.slot_use == pytest.approx((3 * H + 4 * 60) / (6 * H), abs=0.01)  # 3h01m, then 1m an hour


def test_the_nth_run_of_a_schedule_is_drawn_the_same_under_every_rule():
    fleet = fleet_named("load-1.2").with_days(0.5)
    a, b = Draws(fleet, 7), Draws(fleet, 7)
    a.take("daily-00"), a.take("hourly-03")  # other schedules' draws move nothing
    assert [b.take("hourly-03") for _ in range(3)][0] == a.run("hourly-03", 0)
    assert a.run("hourly-03", 2) == b.run("hourly-03", 2) and a.peek("daily-00") == b.run("daily-00", 1)[0]
    assert Draws(fleet, 8).run("hourly-03", 0) != a.run("hourly-03", 0)
    small = parse_fleet({"name": "small", "nodes": {"n1": 2, "n2": 1}, "days": 0.5, "warmup": "1h", "schedules": [
        {"name": "hourly", "count": 8, "period": "1h", "cooldown": "30m",
         "durations": {"dist": "lognormal", "scale": "10m", "sigma": 0.8}, "failure": 0.1},
        {"name": "nightly", "count": 4, "cron": "0 1 * * *", "cron_max": "3h",
         "durations": {"dist": "pareto", "scale": "20m", "alpha": 1.5, "cap": "3h"}}]})
    runs = {}
    for policy in ("greedy", "fifo"):
        sim = FleetSimulation(small, 3, policy)
        runs[policy] = sim.run()
        runs[policy + "-draws"] = {name: sim.draws._durations[name][:sim.draws.taken[name]]
                                   for name in sim.draws.taken}
    common = set(runs["greedy-draws"]) & set(runs["fifo-draws"])
    assert len(common) == 12
    for name in common:
        g, f = runs["greedy-draws"][name], runs["fifo-draws"][name]
        assert g[:len(f)] == f[:len(g)]


def test_a_lost_node_runs_are_ended_by_the_steal_and_run_again_elsewhere():
    fleet = parse_fleet({
        "name": "lost", "nodes": {"n1": 2, "n2": 2}, "days": 0.25, "warmup": "0s",
        "outages": [{"node": "n2", "at": "1h", "lasting": "1h"}],
        "schedules": [{"name": "busy", "count": 4, "period": "1h", "cooldown": "0s",
                       "durations": {"dist": "fixed", "scale": "20m"}}]})
    sim = FleetSimulation(fleet, 0, "greedy", verify=True)
    run = sim.run()
    assert run.lost >= 1 and not sim.orphans
    # the steal takes a silent owner after the ping timeout and the steal grace, seen at the passes that follow
    # (ping timeout 30 s + grace 30 s from the last ping, which came at most one step before the loss)
    assert all(30 < delay <= 60 + 2 * 30 for delay in run.steal_delays), run.steal_delays
    assert run.started > 4 * 5 and run.recovery and run.recovery[0] is not None


def test_the_recovery_is_measured_from_the_return_to_the_level_before_the_loss():
    run = FleetRun("f", 0, "greedy", error_times=[0.0, 1.0, 2.5, 3.0, 4.0], error_counts=[1, 5, 3, 1, 0])
    lost, back = START + timedelta(hours=1), START + timedelta(hours=2)
    assert recovery_time(run, lost, back, START + timedelta(hours=6)) == pytest.approx(H)
    assert recovery_time(run, lost, back, START + timedelta(hours=2.9)) is None
    calm = FleetRun("f", 0, "greedy", error_times=[0.0], error_counts=[0])
    assert recovery_time(calm, lost, back, START + timedelta(hours=6)) == 0.0


def test_every_named_fleet_meets_its_load():
    for name in FLEETS:
        fleet = fleet_named(name)
        assert 40 <= len(fleet.schedules) <= 120 and fleet.slots == 12
    assert fleet_named("light").load == pytest.approx(0.5)
    assert fleet_named("load-1.2").load == pytest.approx(1.2)
    assert any(s.dont_run_on == ("node-2", "node-3") for s in fleet_named("constraints").schedules)
    assert {s.durations.dist for s in fleet_named("heavy-tail").schedules} == {"pareto", "fixed"}


@pytest.mark.parametrize("change, field", [
    ({"nodes": {"n1": 0}}, "fleet.nodes.n1"),
    ({"schedules": [{"name": "x", "period": "-1h", "durations": {"dist": "fixed", "scale": "1m"}}]},
     "fleet.schedules[0].period"),
    ({"schedules": [{"name": "x", "period": "1h", "durations": {"dist": "weibull", "scale": "1m"}}]},
     "fleet.schedules[0].durations.dist"),
    ({"schedules": [{"name": "x", "period": "1h", "durations": {"dist": "pareto", "scale": "1m", "alpha": 1}}]},
     "fleet.schedules[0].durations.alpha"),
    ({"schedules": [{"name": "x", "period": "1h", "failure": 1.5, "durations": {"dist": "fixed", "scale": "1m"}}]},
     "fleet.schedules[0].failure"),
    ({"load": -0.5}, "load"),
    ({"days": 0}, "days"),
    ({"outages": [{"node": "n9", "at": "1h", "lasting": "1h"}]}, "fleet.outages[0].node"),
    ({"colour": "red"}, "fleet.colour"),
])
def test_a_bad_fleet_names_its_field(change, field):
    base = {"nodes": {"n1": 1}, "schedules": [{"name": "x", "period": "1h", "durations": {"dist": "fixed",
                                                                                          "scale": "1m"}}]}
    with pytest.raises(ValidationError) as raised:
        parse_fleet({**base, **change})
    assert raised.value.field == field


def test_simulate_runs_each_rule_on_the_one_slot_fleet():
    for policy in ("fifo", "spf", "lookahead", "clairvoyant"):
        run = simulate(one_slot(), 0, policy)
        assert run.error_share > 0 and run.started >= 2
