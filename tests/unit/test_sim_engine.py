"""The simulation loop and its schedulers: capacity, determinism, the store path against the
direct one, what the store sees, and the policies under test."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest

from ostinato.domain.errors import ValidationError
from ostinato.sim import engine, policies
from ostinato.sim.baselines import OracleScheduler, UniformScheduler
from ostinato.sim.engine import SimulationConfig, run_policy, run_simulation, simulation_settings
from ostinato.sim.policies import StorePolicy, policies_under_test
from ostinato.sim.store_driver import StoreScheduler, snapshot_id

TINY = SimulationConfig(sources=300, warmup=15, days=10, step=timedelta(hours=2), seed=4)


def test_quota_baselines_use_the_capacity_exactly():
    run = run_policy(policies_under_test()["uniform"], TINY)
    # C = 300/7 a day, in whole visits per step; the window's visits end in it (a few straddle its edges)
    assert run.metrics.visits == pytest.approx(300 / 7 * 10, abs=3)
    assert run.metrics.failed > 0 and run.metrics.not_found > 0
    assert run.sample_times.size == int((15 + 10) * 12)


def test_runs_replay_exactly_from_the_seed():
    first = run_policy(policies_under_test()["multiplicative"], TINY)
    again = run_policy(policies_under_test()["multiplicative"], TINY)
    other = run_policy(policies_under_test()["multiplicative"], replace(TINY, seed=5))
    assert first.metrics.as_dict() == again.metrics.as_dict()
    assert np.array_equal(first.sample_freshness, again.sample_freshness)
    assert first.metrics.as_dict() != other.metrics.as_dict()


def test_policies_in_parallel_processes_give_the_same_figures():
    chosen = [policies_under_test()[name] for name in ("uniform", "oracle_age_floor")]
    alone = run_simulation(TINY, chosen)
    together = run_simulation(TINY, chosen, jobs=2)
    assert [r.name for r in together] == ["uniform", "oracle_age_floor"]
    assert [r.metrics.as_dict() for r in together] == [r.metrics.as_dict() for r in alone]


def test_oldest_scheduled_first_through_the_store_is_uniform_revisiting():
    config = replace(TINY, failure_rate=0.0, dead_share=0.0)
    store = run_policy(policies_under_test()["oldest_scheduled_first"], config)
    direct = run_policy(policies_under_test()["uniform"], config)
    assert set(store.notes["picked_by_store_policy"]) == {"oldest_scheduled_first"}
    assert store.metrics.visits == pytest.approx(direct.metrics.visits, abs=3)
    assert store.metrics.freshness == pytest.approx(direct.metrics.freshness, abs=0.02)
    assert store.metrics.mean_age == pytest.approx(direct.metrics.mean_age, rel=0.15)


def test_the_oracle_beats_uniform_on_its_objective():
    config = replace(TINY, sources=1000, warmup=60, days=30)
    runs = {name: run_policy(policies_under_test()[name], config) for name in ("uniform", "oracle_freshness", "oracle_age")}
    assert runs["oracle_freshness"].metrics.freshness > runs["uniform"].metrics.freshness
    assert runs["oracle_age"].metrics.mean_age < runs["uniform"].metrics.mean_age
    assert runs["oracle_age"].theory["mean_age_days"] < runs["uniform"].theory["mean_age_days"]


def test_failures_disable_a_source_until_a_listing_lists_it_again():
    uniform = UniformScheduler(3, simulation_settings(TINY).feedback_policy())
    uniform.listing(0.0, np.arange(3), np.zeros(3))
    for day in range(3):
        chosen, _ = uniform.pick(float(day), day + 0.1, 3)
        assert 0 in chosen
        uniform.feed(day + 0.5, {"source": np.array([0]), "end": np.array([day + 0.01]), "outcome": np.array([1]),
                                 "eventful": np.array([False])})
        uniform.busy[:] = False
    assert uniform.disabled[0]
    assert 0 not in uniform.pick(3.0, 3.1, 3)[0]
    uniform.busy[:] = False
    uniform.listing(4.0, np.arange(3), np.zeros(3))
    assert 0 in uniform.pick(4.0, 4.1, 3)[0]


def test_listings_list_new_and_changed_sources_and_every_source_now_and_then(monkeypatch):
    calls = []

    class Recording(UniformScheduler):
        def listing(self, t, sources, last_change):
            calls.append((t, sources.copy(), last_change.copy()))
            super().listing(t, sources, last_change)

    made = {}

    def make(policy, world, config):
        made["world"] = world
        return Recording(world.size, simulation_settings(config).feedback_policy())

    monkeypatch.setattr(engine, "_make_scheduler", make)
    config = replace(TINY, share_last_update=0.5, new_sources_per_day=3.0, full_listing_period=timedelta(days=10))
    run_policy(policies_under_test()["uniform"], config)
    world = made["world"]
    assert [t for t, _, _ in calls] == pytest.approx(list(range(25)))
    for t, sources, last_change in calls:
        born = world.born_by(t)
        assert (last_change <= t).all()
        if t % 10 == 0:
            assert sources.tolist() == list(range(born))  # a full listing
        else:
            old = sources[sources < world.born_by(t - 1)]
            assert set(sources[sources >= world.born_by(t - 1)].tolist()) == set(range(world.born_by(t - 1), born))
            # only sources of the forge that reports last_update, which changed since the day before
            assert world.reports_last_update[old].all()
            assert (last_change[np.isin(sources, old)] > t - 1).all()
            assert old.size > 0


def test_the_oracle_visits_each_source_at_its_frequency():
    rates = np.array([0.01, 0.2, 1.0, 5.0, 0.0])
    dead = np.array([False, False, False, False, True])
    oracle = OracleScheduler(rates, dead, 2.0, objective="age", floor=0.0, rng=np.random.default_rng(1))
    oracle.listing(0.0, np.arange(5), np.zeros(5))
    freqs = oracle.freq.copy()
    assert freqs.sum() == pytest.approx(2.0) and freqs[4] == 0
    counts = np.zeros(5)
    step = 1 / 24
    for k in range(24 * 400):
        sources, starts = oracle.pick(k * step, (k + 1) * step, 0)
        assert ((starts >= k * step) & (starts < (k + 1) * step)).all()
        np.add.at(counts, sources, 1)
    assert counts == pytest.approx(freqs * 400, abs=1.01)


def test_a_store_scheduler_lists_grabs_and_feeds_back_through_the_store():
    reports = np.array([True, False, True])
    scheduler = StoreScheduler(StorePolicy("osf", "", {"oldest_scheduled_first": 1}), world_counts_changes=True,
                               counts_changes=True, settings=simulation_settings(TINY), start=engine.START,
                               db_url="sqlite:///:memory:", queue_length=5, reports_last_update=reports)
    try:
        scheduler.listing(0.0, np.arange(3), np.array([0.0, 0.0, 0.0]))
        sources, starts = scheduler.pick(0.0, 1 / 12, 2)
        assert sources.size == 2 and (starts == 0).all()
        again, _ = scheduler.pick(0.0, 1 / 12, 5)
        assert set(again.tolist()) == {0, 1, 2} - set(sources.tolist())  # in flight: not grabbed twice
        ended = {"source": sources, "end": np.array([0.01, 0.02]), "outcome": np.array([0, 1]),
                 "version": np.array([4, -1]), "changes": np.array([3, -1]), "number": np.array([1, 1])}
        scheduler.feed(1 / 12, ended)
        stats = {s.url: s for s in scheduler.store.get_visit_stats([(scheduler.url(int(s)), "git") for s in sources])}
        ok, failed = stats[scheduler.url(int(sources[0]))], stats[scheduler.url(int(sources[1]))]
        assert ok.last_snapshot == snapshot_id(int(sources[0]), 4) and ok.successful_visits == 1
        assert failed.failure_count == 1 and failed.last_snapshot is None
        scheduler.listing(1.0, np.array([2]), np.array([0.5]))
        listed = scheduler.store.get_listed_origins(url=scheduler.url(2))[0]
        assert listed.origin.last_update == engine.START + timedelta(days=0.5)
        assert scheduler.store.get_listed_origins(url=scheduler.url(1))[0].origin.last_update is None
        assert sum(scheduler.notes()["picked_by_store_policy"].values()) == 3
    finally:
        scheduler.close()


def test_origins_are_named_in_an_order_drawn_from_the_seed():
    """Origins listed at once are first grabbed in their URLs' order: the order differs by seed,
    and a URL still gives its source back."""
    first = {}
    for seed in (4, 5):
        scheduler = StoreScheduler(StorePolicy("osf", "", {"oldest_scheduled_first": 1}), world_counts_changes=True,
                                   counts_changes=True, settings=simulation_settings(TINY), start=engine.START,
                                   db_url="sqlite:///:memory:", queue_length=20, reports_last_update=np.zeros(12, bool),
                                   seed=seed)
        try:
            urls = [scheduler.url(s) for s in range(12)]
            assert [scheduler.source_of(u) for u in urls] == list(range(12))
            by_name = sorted(range(12), key=lambda s: urls[s])
            assert by_name != list(range(12))  # not the sources' own order
            scheduler.listing(0.0, np.arange(12), np.zeros(12))
            sources, _ = scheduler.pick(0.0, 1 / 12, 4)
            assert sources.tolist() == by_name[:4]
            first[seed] = sources.tolist()
        finally:
            scheduler.close()
    assert first[4] != first[5]


def test_statuses_carry_change_counts_only_when_the_loader_can_count(monkeypatch):
    seen = []
    for counts in (True, False):
        scheduler = StoreScheduler(StorePolicy("osf", "", {"oldest_scheduled_first": 1}), world_counts_changes=True,
                                   counts_changes=counts, settings=simulation_settings(TINY), start=engine.START,
                                   db_url="sqlite:///:memory:", queue_length=5, reports_last_update=np.zeros(2, bool))
        try:
            monkeypatch.setattr(scheduler.store, "record_visit_statuses", lambda statuses, *a, **k: seen.append(statuses))
            scheduler.feed(1.0, {"source": np.array([0, 1]), "end": np.array([0.5, 0.6]), "outcome": np.array([0, 0]),
                                 "version": np.array([2, 0]), "changes": np.array([2, -1]), "number": np.array([3, 1])})
        finally:
            scheduler.close()
    assert [s.changes for s in seen[0]] == [2, None]  # a first visit has nothing to count from
    assert [s.changes for s in seen[1]] == [None, None]


def test_a_new_store_policy_is_included_by_name_when_it_exists(monkeypatch):
    monkeypatch.setattr(policies, "POLICY_NAMES", frozenset({"oldest_scheduled_first"}))
    assert "change_rate_optimal" not in policies_under_test()
    monkeypatch.setattr(policies, "POLICY_NAMES", frozenset({"oldest_scheduled_first", "change_rate_optimal"}))
    found = policies_under_test()["change_rate_optimal"]
    assert isinstance(found, StorePolicy) and found.ratios == {"change_rate_optimal": 1}
    names = list(policies_under_test())
    assert names.index("change_rate_optimal") < names.index("uniform")


def test_simulation_settings_do_not_throttle_and_take_overrides():
    settings = simulation_settings(TINY)
    assert settings.absolute_cooldown == TINY.step and settings.minimum_interval == TINY.step
    assert settings.orchestrator_threshold == 0
    assert simulation_settings(replace(TINY, settings={"absolute_cooldown": "3h"})).absolute_cooldown == timedelta(hours=3)


@pytest.mark.parametrize("change,field", [
    ({"workload": "nope"}, "workload"), ({"sources": 0}, "sources"), ({"capacity": -1.0}, "capacity"),
    ({"days": 0}, "days"), ({"warmup": -1}, "warmup"), ({"share_last_update": 1.5}, "share_last_update"),
    ({"new_sources_per_day": -2}, "new_sources_per_day"), ({"failure_rate": 1.0}, "failure_rate"),
    ({"dead_share": -0.1}, "dead_share"), ({"step": timedelta(days=2)}, "step"),
    ({"full_listing_period": timedelta(hours=3)}, "full_listing_period"), ({"db": "mysql://x"}, "db"),
    ({"max_gap": timedelta(days=1)}, "max_gap"), ({"listing_period": timedelta(minutes=5)}, "listing_period"),
    ({"settings": {"absolute_cooldown": "soon"}}, "absolute_cooldown"), ({"settings": {"nope": 1}}, "nope"),
])
def test_bad_configuration_names_the_option(change, field):
    with pytest.raises(ValidationError) as caught:
        replace(TINY, **change).validated()
    assert caught.value.field == field
