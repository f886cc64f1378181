"""Steering change_rate_optimal's threshold to the capacity, through the orchestrator, on every store:
the threshold stored makes the sampled origins ask for the capacity; without a configured capacity
the orchestrator measures what it dispatches; a failing steer never stops the grab."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from ostinato.config import Settings
from ostinato.domain import rate_posterior
from ostinato.domain.change_rates import Objective, RevisitModel, estimated_rate, revisit_days
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.tasks import TaskType
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.execution.registry import TaskRegistry
from ostinato.execution.worker_pool import EmbeddedExecutor
from ostinato.services.orchestrator import Orchestrator
from ostinato.services.revisit_steering import ThresholdSteering

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
MODEL = RevisitModel()
FEEDBACK = FeedbackPolicy(absolute_cooldown=timedelta(minutes=1))
ONLY_OPTIMAL = {"git": {"change_rate_optimal": 1.0, "never_visited_oldest_update_first": 0.0,
                        "already_visited_order_by_lag": 0.0, "origins_without_last_update": 0.0}}


def url(i) -> str:
    return f"https://forge.example/{i}"


def listed_and_visited(store, count: int) -> datetime:
    """``count`` git origins listed and visited once; the time of that first visit."""
    store.create_task_type(TaskType("load-git", "git", "load.git", max_queue_length=1000))
    lister = store.get_or_create_lister("forge", "forge.example", T0 - 400 * DAY)
    store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git") for i in range(count)], T0 - 400 * DAY)
    first = T0 - 100 * DAY
    store.record_visit_statuses([VisitStatus(url(i), 1, "git", JournalStatus.FULL, first, b"\x01" * 20)
                                 for i in range(count)], FEEDBACK, now=first)
    return first


@pytest.fixture
def seeded(store):
    first = listed_and_visited(store, 60)
    # origin i changed i times in 50 days
    store.record_visit_statuses([VisitStatus(url(i), 2, "git", JournalStatus.FULL, first + 50 * DAY, b"\x02" * 20, i)
                                 for i in range(60)], FEEDBACK, now=first + 50 * DAY)
    return store


def orchestrator(store, clock, steering) -> Orchestrator:
    registry = TaskRegistry()
    registry.register("load.git", lambda url, **kw: {"status": "full", "snapshot": "aa" * 20})
    executor = EmbeddedExecutor(store.record_run_events, clock, node="t", registry=registry,
                                report_visits=lambda s: None, release_visits=store.release_visits)
    return Orchestrator(store, executor, clock, ratios=ONLY_OPTIMAL, threshold=0.0, steering=steering)


def test_with_the_freshness_objective_origins_known_by_bits_are_steered_by_their_posterior(store, clock):
    fresh = RevisitModel(objective=Objective.FRESHNESS)
    first = listed_and_visited(store, 40)
    # origins 0-19: only "changed or not" (every third one changed); 20-39: counted, i - 20 changes
    later = first + 10 * DAY
    store.record_visit_statuses(
        [VisitStatus(url(i), 2, "git", JournalStatus.FULL, later, b"\x02" * 20 if i % 3 == 0 else b"\x01" * 20)
         for i in range(20)]
        + [VisitStatus(url(i), 2, "git", JournalStatus.FULL, later, b"\x02" * 20, i - 20) for i in range(20, 40)],
        FEEDBACK, now=later)
    steering = ThresholdSteering(store, fresh, capacity=8.0, sample_size=1000)
    orchestrator(store, clock, steering).run_once()
    mu = store.get_revisit_thresholds()["git"].threshold
    stats = store.get_visit_stats([(url(i), "git") for i in range(40)])
    assert [s.rate_evidence is not None for s in stats] == [True] * 20 + [False] * 20
    beliefs = rate_posterior.posteriors([s.rate_evidence for s in stats[:20]], fresh.prior_rate)
    demand = (rate_posterior.demand(beliefs, mu, 60.0).sum()
              + sum(1 / revisit_days(estimated_rate(s.rate_changes, s.rate_days, fresh), mu, fresh) for s in stats[20:]))
    assert demand == pytest.approx(8.0, rel=1e-3)


def test_the_threshold_makes_the_origins_ask_for_the_capacity(seeded, clock):
    steering = ThresholdSteering(seeded, MODEL, capacity=12.0, sample_size=1000)
    orchestrator(seeded, clock, steering).run_once()
    threshold = seeded.get_revisit_thresholds()["git"]
    assert (threshold.visits_per_day, threshold.origins, threshold.computed_at) == (12.0, 60, clock.now())
    stats = seeded.get_visit_stats([(url(i), "git") for i in range(60)])
    demand = sum(1 / revisit_days(estimated_rate(s.rate_changes, s.rate_days, MODEL), threshold.threshold, MODEL)
                 for s in stats)
    assert demand == pytest.approx(12.0, rel=1e-3)
    # not again before `every`; again after it
    clock.advance(timedelta(minutes=5))
    orchestrator(seeded, clock, steering)._steer("git", clock.now())
    assert seeded.get_revisit_thresholds()["git"].computed_at == T0


def test_more_capacity_a_lower_threshold_and_shorter_revisits(seeded, clock):
    ThresholdSteering(seeded, MODEL, capacity=6.0).steer("git", 1.0, clock.now())
    low = seeded.get_revisit_thresholds()["git"].threshold
    ThresholdSteering(seeded, MODEL, capacity=60.0).steer("git", 1.0, clock.now())
    assert seeded.get_revisit_thresholds()["git"].threshold < low
    # the next feedback uses it
    at = clock.now()
    seeded.record_visit_statuses([VisitStatus(url(7), 3, "git", JournalStatus.FULL, at, b"\x03" * 20, 2)], FEEDBACK, now=at)
    [stats] = seeded.get_visit_stats([(url(7), "git")])
    high = seeded.get_revisit_thresholds()["git"].threshold
    rate = estimated_rate(stats.rate_changes, stats.rate_days, MODEL)
    assert stats.next_optimal_visit - at == pytest.approx(timedelta(days=revisit_days(rate, high, MODEL)),
                                                          abs=timedelta(microseconds=2))


def test_without_a_capacity_setting_the_orchestrator_measures_what_it_dispatches(store):
    steering = ThresholdSteering(store, MODEL)
    steering.dispatched("git", 100, T0)
    assert steering.measured("git", T0 + timedelta(minutes=30)) is None  # not an hour of it yet
    steering.dispatched("git", 100, T0 + timedelta(hours=2))
    assert steering.measured("git", T0 + timedelta(hours=2)) == pytest.approx(200 / (2 / 24))
    steering.dispatched("git", 50, T0 + timedelta(days=2))  # the first two fell out of the day's window
    assert steering.measured("git", T0 + timedelta(days=2)) == pytest.approx(50.0)
    assert steering.steer("hg", 1.0, T0) is None  # nothing measured, nothing configured: left alone


def test_a_failing_steer_never_stops_the_grab(seeded, clock, caplog, monkeypatch):
    steering = ThresholdSteering(seeded, MODEL, capacity=12.0)
    monkeypatch.setattr(seeded, "sample_change_rates", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    with caplog.at_level(logging.ERROR, logger="ostinato"):
        done = orchestrator(seeded, clock, steering).run_once()
    assert sum(done["git"].visits.values()) == 60
    assert "could not steer git" in caplog.text


def test_the_revisit_settings_reach_the_feedback_policy():
    settings = Settings().with_values({"revisit_objective": "freshness", "revisit_ceiling": "30d",
                                       "revisit_prior_days": "10", "revisit_capacity": "5000"})
    model = settings.feedback_policy().revisit
    assert (model.objective.value, model.ceiling, model.prior_days) == ("freshness", 30 * DAY, 10.0)
    assert settings.revisit_capacity == 5000.0
