"""change_rate_optimal on every store: what the feedback keeps (the change rate's belief and the
next optimal visit, at the visit type's threshold), the policy's order, and the threshold's verbs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain import rate_posterior
from ostinato.domain.change_rates import (
    Objective,
    RevisitModel,
    RevisitThreshold,
    default_threshold,
    estimated_rate,
    hint_wait_days,
    revisit_interval,
)
from ostinato.domain.errors import ValidationError
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus

DAY = timedelta(days=1)
FEEDBACK = FeedbackPolicy(absolute_cooldown=timedelta(minutes=1))
MODEL = FEEDBACK.revisit
OPTIMAL = VisitPolicy.CHANGE_RATE_OPTIMAL


def url(i) -> str:
    return f"https://forge.example/{i}"


def status(i, at, snapshot: bytes, *, changes=None, kind="full") -> VisitStatus:
    return VisitStatus(url(i), 1, "git", JournalStatus(kind), at, snapshot, changes)


def grab(store, count=10, now=T0):
    return [v.url for v in store.grab_next_visits("git", [GrabRequest(OPTIMAL, count)], now)]


@pytest.fixture
def lister(store):
    return store.get_or_create_lister("forge", "forge.example", T0 - 400 * DAY)


def test_the_feedback_learns_the_rate_and_sets_the_next_optimal_visit(store, lister):
    store.record_listed_origins(lister.id, [ListedOrigin(url(1), "git"), ListedOrigin(url(2), "git")], T0 - 100 * DAY)
    first = T0 - 60 * DAY
    store.record_visit_statuses([status(1, first, b"\x01" * 20), status(2, first, b"\x01" * 20)], FEEDBACK, now=first)
    [one, two] = store.get_visit_stats([(url(1), "git"), (url(2), "git")])
    assert one.rate_changes is None and one.rate_days is None  # a first visit tells nothing of the rate
    assert one.next_optimal_visit == first + revisit_interval(MODEL.prior_rate, default_threshold(MODEL), MODEL)
    # origin 1 changed 12 times in 30 days (the loader counted); origin 2 did not change
    second = first + 30 * DAY
    store.record_visit_statuses([status(1, second, b"\x02" * 20, changes=12), status(2, second, b"\x01" * 20)],
                                FEEDBACK, now=second)
    [one, two] = store.get_visit_stats([(url(1), "git"), (url(2), "git")])
    assert one.rate_changes == pytest.approx(MODEL.prior_changes + 12)
    assert one.rate_days == pytest.approx(MODEL.prior_days + 30)
    assert two.rate_changes == pytest.approx(MODEL.prior_changes) and two.rate_days == pytest.approx(MODEL.prior_days + 30)
    # the faster one is due sooner
    assert one.next_optimal_visit - second < two.next_optimal_visit - second


def test_a_stored_threshold_spaces_the_next_visits(store, lister):
    store.record_listed_origins(lister.id, [ListedOrigin(url(1), "git")], T0 - 100 * DAY)
    store.set_revisit_threshold(RevisitThreshold("git", 1000.0, 500.0, 10_000, T0))
    store.record_visit_statuses([status(1, T0 - DAY, b"\x01" * 20)], FEEDBACK, now=T0)
    [stats] = store.get_visit_stats([(url(1), "git")])
    assert stats.next_optimal_visit == T0 - DAY + revisit_interval(MODEL.prior_rate, 1000.0, MODEL)
    assert store.get_revisit_thresholds() == {"git": RevisitThreshold("git", 1000.0, 500.0, 10_000, T0)}
    store.set_revisit_threshold(RevisitThreshold("git", 2.5, 400.0, 12_000, T0 + DAY))
    assert store.get_revisit_thresholds()["git"].threshold == 2.5


@pytest.mark.parametrize("bad, field", [
    (RevisitThreshold("", 1.0, 1.0, 1, T0), "visit_type"),
    (RevisitThreshold("git", 0.0, 1.0, 1, T0), "threshold"),
    (RevisitThreshold("git", float("inf"), 1.0, 1, T0), "threshold"),
    (RevisitThreshold("git", 1.0, -3.0, 1, T0), "visits_per_day"),
    (RevisitThreshold("git", 1.0, 1.0, -1, T0), "origins"),
    (RevisitThreshold("git", 1.0, 1.0, 1, T0.replace(tzinfo=None)), "computed_at"),
])
def test_a_bad_threshold_is_refused_and_nothing_changes(store, bad, field):
    store.set_revisit_threshold(RevisitThreshold("git", 3.0, 1.0, 1, T0))
    with pytest.raises(ValidationError) as caught:
        store.set_revisit_threshold(bad)
    assert caught.value.field == field
    assert store.get_revisit_thresholds()["git"].threshold == 3.0


def test_the_policy_takes_new_origins_then_the_next_optimal_visits_which_a_reported_change_brings_forward(store, lister):
    store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git") for i in range(1, 5)]
                                + [ListedOrigin(url(6), "git", last_update=T0 - 95 * DAY)], T0 - 100 * DAY)
    base = T0 - 90 * DAY  # 3 is never visited
    store.record_visit_statuses([status(i, base, b"\x01" * 20) for i in (1, 2, 4, 6)], FEEDBACK, now=base)
    later = base + 30 * DAY  # 1 changed often, 4 once, 2 and 6 not at all
    store.record_visit_statuses([status(1, later, b"\x02" * 20, changes=40), status(2, later, b"\x01" * 20, changes=0),
                                 status(4, later, b"\x02" * 20, changes=1), status(6, later, b"\x01" * 20, changes=0)],
                                FEEDBACK, now=later)
    stats = {s.url: s for s in store.get_visit_stats([(url(i), "git") for i in (1, 2, 4, 6)])}
    assert stats[url(1)].next_optimal_visit < stats[url(4)].next_optimal_visit < stats[url(2)].next_optimal_visit
    # 6's listing told the truth (no change since its visit, none found): it waits for the next reported change
    six = stats[url(6)]
    assert six.last_update == T0 - 95 * DAY and six.next_optimal_visit == later + MODEL.ceiling
    wait = hint_wait_days(estimated_rate(six.rate_changes, six.rate_days, MODEL), default_threshold(MODEL), MODEL)
    assert six.hint_wait_days == pytest.approx(wait) and 0 < wait < 1
    # the forge reports a change of 6 after its last visit: the next visit comes hint_wait_days after it
    changed = later + DAY / 2
    store.record_listed_origins(lister.id, [ListedOrigin(url(6), "git", last_update=changed)], later + DAY)
    [six] = store.get_visit_stats([(url(6), "git")])
    assert abs(six.next_optimal_visit - (changed + timedelta(days=wait))) < timedelta(milliseconds=2)
    assert six.next_optimal_visit < stats[url(1)].next_optimal_visit
    # a listing that reports the same change again, or an older one, moves nothing
    store.record_listed_origins(lister.id, [ListedOrigin(url(6), "git", last_update=changed - DAY / 4)], later + 2 * DAY)
    store.record_listed_origins(lister.id, [ListedOrigin(url(6), "git", last_update=changed)], later + 3 * DAY)
    assert store.get_visit_stats([(url(6), "git")])[0].next_optimal_visit == six.next_optimal_visit
    assert grab(store, 1) == [url(3)]  # the never visited first
    assert grab(store) == [url(6), url(1), url(4), url(2)]  # then by next optimal visit, due or not
    assert grab(store) == []  # all cooling down now


def test_a_listing_that_missed_a_change_leaves_the_planned_interval(store, lister):
    store.record_listed_origins(lister.id, [ListedOrigin(url(1), "git", last_update=T0 - 95 * DAY)], T0 - 100 * DAY)
    base = T0 - 90 * DAY
    store.record_visit_statuses([status(1, base, b"\x01" * 20)], FEEDBACK, now=base)
    later = base + 30 * DAY  # a change its listing did not report
    store.record_visit_statuses([status(1, later, b"\x02" * 20, changes=2)], FEEDBACK, now=later)
    [one] = store.get_visit_stats([(url(1), "git")])
    rate = estimated_rate(one.rate_changes, one.rate_days, MODEL)
    assert one.next_optimal_visit == later + revisit_interval(rate, default_threshold(MODEL), MODEL)


def test_a_rate_sample_reads_enabled_origins_of_the_visit_type(store, lister):
    store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git") for i in range(30)]
                                + [ListedOrigin(url(100 + i), "hg") for i in range(5)]
                                + [ListedOrigin(url(200 + i), "git", enabled=False) for i in range(4)], T0)
    store.record_visit_statuses([status(i, T0 - 10 * DAY, b"\x01" * 20) for i in range(30)], FEEDBACK, now=T0)
    store.record_visit_statuses([status(i, T0 - DAY, b"\x02" * 20, changes=3) for i in range(10)], FEEDBACK, now=T0)
    sample = store.sample_change_rates("git", 20, seed=3)
    assert sample.enabled_origins == 30  # a small table: exact
    assert len(sample.beliefs) == 20
    learnt = [b for b in sample.beliefs if b[0] is not None]
    assert learnt and all(days == pytest.approx(MODEL.prior_days + 9) for _, days, _ in learnt)
    assert store.sample_change_rates("git", 100).beliefs.__len__() == 30
    assert store.sample_change_rates("svn", 10).enabled_origins == 0


def test_bits_keep_the_rate_evidence_and_the_freshness_objective_plans_by_it(store, lister):
    fresh = FeedbackPolicy(absolute_cooldown=timedelta(minutes=1), revisit=RevisitModel(objective=Objective.FRESHNESS))
    store.record_listed_origins(lister.id, [ListedOrigin(url(1), "git"), ListedOrigin(url(2), "git")], T0 - 100 * DAY)
    first = T0 - 40 * DAY
    store.record_visit_statuses([status(1, first, b"\x00" * 20), status(2, first, b"\x00" * 20)], fresh, now=first)
    evidence = None
    for n in range(1, 6):  # origin 1: only "changed or not" (found changed every 6 days); origin 2: counted
        at = first + 6 * n * DAY
        store.record_visit_statuses([status(1, at, bytes([n]) * 20), status(2, at, bytes([n]) * 20, changes=2)],
                                    fresh, now=at)
        evidence = rate_posterior.observe(evidence, 6.0, changed=True, counted=None, horizon_days=365.0)
    [one, two] = store.get_visit_stats([(url(1), "git"), (url(2), "git")])
    assert one.rate_evidence == pytest.approx(evidence, abs=1e-3)  # PostgreSQL keeps reals
    assert two.rate_evidence is None and two.rate_changes > MODEL.prior_changes + 9  # 10 counted, faded a little
    belief = rate_posterior.posterior(evidence, MODEL.prior_rate)
    planned = rate_posterior.revisit_days(belief, default_threshold(fresh.revisit), 60.0)
    assert (one.next_optimal_visit - (first + 30 * DAY)).total_seconds() == pytest.approx(planned * 86400, rel=1e-3)
    sample = store.sample_change_rates("git", 10)
    assert sorted(b[2] is None for b in sample.beliefs) == [False, True]


def _fade(days: float) -> float:
    import math

    return math.exp(-days / (MODEL.horizon.total_seconds() / 86_400))


def test_the_prior_model_is_the_feedback_policys():
    assert isinstance(MODEL, RevisitModel)


def test_change_times_count_bursts_from_the_newest_change_the_last_visit_saw(store, lister):
    store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git") for i in (1, 2)], T0 - 100 * DAY)
    first = T0 - 60 * DAY
    store.record_visit_statuses([status(i, first, b"\x01" * 20) for i in (1, 2)], FEEDBACK, now=first)
    # both saw a change an hour before the second visit; 30 days later each has 10 changes, an hour apart,
    # origin 1's right after the newest its last visit saw (one burst going on), origin 2's in two bursts
    second = first + 30 * DAY

    def timed(i, at, snapshot, hours):
        times = tuple(at + timedelta(hours=h) for h in hours)
        return VisitStatus(url(i), 1, "git", JournalStatus.FULL, at, snapshot, len(times), change_times=times)

    store.record_visit_statuses([timed(1, second, b"\x02" * 20, [-1.0]), timed(2, second, b"\x02" * 20, [-1.0])],
                                FEEDBACK, now=second)
    third = second + 30 * DAY
    store.record_visit_statuses([timed(1, third, b"\x03" * 20, [-30 * 24 + 0.5 + h for h in range(10)]),
                                 timed(2, third, b"\x03" * 20, [-20 * 24 + h for h in range(5)]
                                       + [-5 * 24 + h for h in range(5)])], FEEDBACK, now=third)
    one, two = store.get_visit_stats([(url(1), "git"), (url(2), "git")])
    # the second visits counted one burst each; the third: none for origin 1, two for origin 2 (not 10 each)
    assert two.rate_changes - one.rate_changes == pytest.approx(2.0, rel=1e-6)
    assert one.rate_days == pytest.approx(two.rate_days)
    assert one.rate_evidence is None and two.rate_evidence is None  # bursts are counted, not inferred from bits
    assert store.get_visit_changes([(url(2), "git")])[0].newest_change_at == third - 5 * DAY + timedelta(hours=4)
