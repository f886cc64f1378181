"""change_rate_optimal and bursts of changes: a surprising count marks an origin, whose changed /
unchanged history is then kept beside its counts, and after an eventful visit of such an origin the
next one comes a day later, unless its history looks Poisson or it changes again within a day anyway."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain import rate_posterior as rp
from ostinato.domain.change_rates import (
    BURST_SURPRISE,
    FOLLOW_UP,
    RevisitModel,
    count_surprise,
    follow_up_days,
)
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStats, VisitStatus, apply_visit_status

MODEL = RevisitModel()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def negative_binomial_tail(k: int, alpha: float, beta: float, days: float) -> float:
    """P(K ≥ k | K ≥ 1) by summing the pmf term by term from 0 (the definition)."""
    stay = beta / (beta + days)
    below = sum(math.exp(math.lgamma(j + alpha) - math.lgamma(alpha) - math.lgamma(j + 1)
                         + alpha * math.log(stay) + j * math.log1p(-stay)) for j in range(k))
    return (1 - below) / (1 - stay ** alpha)


@pytest.mark.parametrize("k,alpha,beta,days", [(3, 0.5, 30, 7), (5, 5.5, 300, 7), (8, 30.0, 100, 1), (12, 2.0, 60, 30)])
def test_the_surprise_is_the_negative_binomial_tail(k, alpha, beta, days):
    horizon = RevisitModel(horizon=timedelta(days=1e8))  # no fading, to compare with the plain formula
    assert count_surprise(k, alpha, beta, timedelta(days=days), horizon) == pytest.approx(
        negative_binomial_tail(k, alpha, beta, days), rel=1e-6)


def test_a_count_at_or_below_what_is_due_is_no_surprise():
    assert count_surprise(1, 5.0, 50.0, timedelta(days=7), MODEL) == 1.0
    assert count_surprise(3, 50.0, 50.0, timedelta(days=7), MODEL) == 1.0  # 7 changes due
    # a settled belief (5 changes in 300 days) finds 5 changes in a week very unlikely; the prior, less so
    settled = count_surprise(5, 5.5, 330.0, timedelta(days=7), MODEL)
    assert settled < BURST_SURPRISE < count_surprise(5, None, None, timedelta(days=7), MODEL) * 2


def settled_stats(**changes) -> VisitStats:
    """An origin visited for a year that changed about once a month."""
    values = dict(last_visit=T0, last_visit_status=None, last_successful=T0, last_snapshot=b"v1",
                  successful_visits=40, rate_changes=12.5, rate_days=395.0)
    values.update(changes)
    return VisitStats("https://forge.example/a", "git", **values)


def visit(stats: VisitStats, days: float, counted: int | None, snapshot: bytes = b"v2", threshold: float = 0.05):
    status = VisitStatus(stats.url, 1, "git", JournalStatus.FULL, T0 + timedelta(days=days), snapshot, counted)
    return apply_visit_status(stats, status, FeedbackPolicy(), threshold=threshold).stats


def test_a_burst_marks_the_origin_and_its_history_is_then_kept():
    calm = visit(settled_stats(), 7, 1)
    assert calm.rate_evidence is None
    burst = visit(settled_stats(), 7, 9)
    assert burst.rate_evidence is not None
    assert burst.rate_changes == pytest.approx(calm.rate_changes + 8, rel=0.01)  # the counts still count
    again = visit(burst, 14, 0, snapshot=b"v2")  # kept from then on, changed or not
    assert again.rate_evidence is not None and again.rate_evidence != burst.rate_evidence
    young = visit(settled_stats(rate_changes=1.5, rate_days=40.0), 7, 9)  # a belief still mostly its prior
    assert young.rate_evidence is None


def bursty_evidence(weeks: int = 30) -> tuple[float, ...]:
    """Weekly visits, one in three finding a change: stale about once in three weeks."""
    evidence = None
    for changed in [True, False, False] * (weeks // 3):
        evidence = rp.observe(evidence, 7.0, changed=changed, counted=None, horizon_days=365.0)
    return evidence


def test_a_follow_up_after_an_eventful_visit_of_an_origin_in_bursts():
    belief = rp.posterior(bursty_evidence(), MODEL.prior_rate)
    day = FOLLOW_UP / timedelta(days=1)
    # counted about 20 changes a month, stale about once a month: a burst of changes each time
    assert follow_up_days(belief, counted_rate=0.7) == day
    # counted as often as it becomes stale: nothing to follow, once the history says so clearly
    assert follow_up_days(belief, counted_rate=0.06) is None
    assert follow_up_days(rp.posterior(bursty_evidence(weeks=12), MODEL.prior_rate), counted_rate=0.06) == day
    # stale every day or so: a follow-up would find it changed again anyway
    fast = None
    for _ in range(30):
        fast = rp.observe(fast, 1.0, changed=True, counted=None, horizon_days=365.0)
    assert follow_up_days(rp.posterior(fast, MODEL.prior_rate), counted_rate=20.0) is None


def test_the_feedback_follows_up_only_after_an_eventful_visit():
    stats = settled_stats(rate_evidence=bursty_evidence(), rate_changes=200.0, rate_days=395.0)
    slow = 50.0  # a threshold that spaces visits by days
    after = T0 + timedelta(days=7)
    assert visit(stats, 7, 6, threshold=slow).next_optimal_visit == after + FOLLOW_UP
    quiet = visit(stats, 7, 0, snapshot=b"v1", threshold=slow)
    assert quiet.next_optimal_visit > after + 2 * FOLLOW_UP
    web = visit(stats, 7, None, threshold=slow)  # a loader that cannot count: as before, no follow-up
    assert web.next_optimal_visit > after + 2 * FOLLOW_UP
