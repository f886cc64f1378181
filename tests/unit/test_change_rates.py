"""The change_rate_optimal maths: the rate learnt from visits (from counts and from changed /
unchanged bits, at irregular intervals), the revisit interval that meets the Lagrange
condition, and the threshold steered to a capacity."""

from __future__ import annotations

import math
import random
from datetime import timedelta
from decimal import Decimal, localcontext

import pytest

from ostinato.domain.change_rates import (
    Objective,
    RevisitModel,
    age_marginal,
    default_threshold,
    estimated_rate,
    freshness_marginal,
    hint_wait_days,
    observe,
    revisit_days,
    solve_threshold,
)
from ostinato.domain.errors import ValidationError

AGE = RevisitModel()
FRESHNESS = RevisitModel(objective=Objective.FRESHNESS)


def learn(rate: float, *, visits: int, counted: bool, seed: int, model: RevisitModel = AGE,
          mean_interval: float = 10.0) -> float:
    """Visit a Poisson source of ``rate`` changes a day at irregular (exponential) intervals; the estimate."""
    rng = random.Random(seed)
    changes = days = None
    for _ in range(visits):
        interval = rng.expovariate(1 / mean_interval)
        k = _poisson(rng, rate * interval)
        changes, days = observe(changes, days, timedelta(days=interval), changed=k > 0,
                                counted=k if counted else None, model=model)
    return estimated_rate(changes, days, model)


def _poisson(rng: random.Random, mean: float) -> int:
    k, total = 0, rng.expovariate(1.0)
    while total < mean:
        k += 1
        total += rng.expovariate(1.0)
    return k


@pytest.mark.parametrize("rate", [1 / 365, 1 / 60, 1 / 7, 0.5])
def test_the_rate_is_learnt_from_counts(rate):
    model = RevisitModel(horizon=timedelta(days=100_000))
    estimates = [learn(rate, visits=300, counted=True, seed=s, model=model) for s in range(20)]
    assert sum(estimates) / len(estimates) == pytest.approx(rate, rel=0.15)


@pytest.mark.parametrize("rate", [1 / 365, 1 / 60, 1 / 7, 0.5])
def test_the_rate_is_learnt_from_changed_or_not_bits_at_irregular_intervals(rate):
    # visits about once per expected change (where an optimal policy puts them), at exponential intervals
    model = RevisitModel(horizon=timedelta(days=100_000))
    estimates = sorted(learn(rate, visits=300, counted=False, seed=s, model=model, mean_interval=1 / rate)
                       for s in range(20))
    median = estimates[len(estimates) // 2]
    assert median == pytest.approx(rate, rel=0.3)


def test_bits_alone_cannot_tell_how_fast_past_one_change_per_visit_but_the_estimate_says_at_least_that():
    # visits every 10 days of a source changing 5 times a day: every visit "changed", which any rate well
    # above a change per visit explains; the estimate must rise past one change per interval, and stay finite
    estimate = learn(5.0, visits=200, counted=False, seed=1, mean_interval=10.0)
    assert 1 / 10 < estimate < 5.0 and math.isfinite(estimate)


def test_a_new_origin_starts_at_the_prior_and_old_observations_fade():
    assert estimated_rate(None, None, AGE) == AGE.prior_rate
    fast = observe(None, None, timedelta(days=10), changed=True, counted=50, model=AGE)
    faded = observe(*fast, timedelta(days=3650), changed=False, counted=0, model=AGE)
    assert estimated_rate(*faded, AGE) < estimated_rate(*fast, AGE) / 20


@pytest.mark.parametrize("x", [1e-6, 1e-3, 0.049, 0.051, 0.5, 3.0, 40.0])
def test_the_marginals_match_their_closed_forms(x):
    exact_g = x * x / 2 - 1 + (1 + x) * math.exp(-x)
    exact_h = 1 - (1 + x) * math.exp(-x)
    if x > 0.01:
        assert age_marginal(x) == pytest.approx(exact_g, rel=1e-9)
        assert freshness_marginal(x) == pytest.approx(exact_h, rel=1e-9)
    else:  # the closed forms lose every digit to cancellation here: the series' leading terms
        assert age_marginal(x) == pytest.approx(x ** 3 / 3, rel=x)
        assert freshness_marginal(x) == pytest.approx(x ** 2 / 2, rel=x)


def _exact(x: float) -> tuple[Decimal, Decimal]:
    """g(x) and h(x) to 50 digits: the closed forms, with no cancellation left at that precision."""
    with localcontext() as ctx:
        ctx.prec = 50
        big = Decimal(x)
        decay = (-big).exp()
        return big * big / 2 - 1 + (1 + big) * decay, 1 - (1 + big) * decay


@pytest.mark.parametrize("x", [1e-9, 1e-4, 0.03, 0.05, 0.1, 0.1499, 0.15, 0.1501, 0.3, 0.7, 2.0, 25.0])
def test_the_marginals_are_exact_to_a_few_units_in_the_last_place(x):
    # the series below the seam, the closed form above it: both within 1e-12 of the truth, so that the
    # solver's Newton steps, which stop at a relative step of 1e-12, see a smooth function
    exact_g, exact_h = _exact(x)
    assert abs(Decimal(age_marginal(x)) - exact_g) <= Decimal("1e-12") * exact_g
    assert abs(Decimal(freshness_marginal(x)) - exact_h) <= Decimal("1e-12") * exact_h


@pytest.mark.parametrize("objective", [Objective.AGE, Objective.FRESHNESS])
def test_the_revisit_interval_solves_its_equation_across_the_series_seam(objective):
    # thresholds whose x lands on either side of where the marginals switch from their series to their
    # closed forms: each solution satisfies the equation to 1e-11 (the 50-digit value of the marginal)
    model = RevisitModel(objective=objective, ceiling=timedelta(days=10 ** 6))
    rng = random.Random(7)
    for _ in range(300):
        rate, x_wanted = 10 ** rng.uniform(-3, 1), 10 ** rng.uniform(-2.5, 0.5)
        marginal = age_marginal if objective is Objective.AGE else freshness_marginal
        threshold = marginal(x_wanted) / (rate * rate if objective is Objective.AGE else rate)
        x = revisit_days(rate, threshold, model) * rate
        exact = _exact(x)[0 if objective is Objective.AGE else 1]
        target = Decimal(threshold) * Decimal(rate) ** (2 if objective is Objective.AGE else 1)
        assert abs(exact - target) <= Decimal("1e-11") * target, (rate, x_wanted, x)


def _age(rate: float, days: float) -> float:
    """A(λ, f) with f = 1 / days."""
    f = 1 / days
    return 1 / (2 * f) - 1 / rate + (f / rate ** 2) * (1 - math.exp(-rate / f))


@pytest.mark.parametrize("rate", [1 / 3650, 1 / 60, 0.3, 4.0, 40.0])
@pytest.mark.parametrize("threshold", [1e-3, 1.0, 1e3])
def test_the_age_interval_meets_the_lagrange_condition(rate, threshold):
    days = revisit_days(rate, threshold, AGE)
    if days >= 60 or rate * days < 0.05:
        return  # the ceiling's; or where A's closed form loses its digits to cancellation (the series' domain)
    # d/dT [A(λ, 1/T) + μ/T] = 0 at the optimum: check numerically
    h = days * 1e-5

    def cost(t):
        return _age(rate, t) + threshold / t

    assert (cost(days + h) - cost(days - h)) / (2 * h) == pytest.approx(0, abs=1e-6 * max(1, threshold / days ** 2))


def test_faster_origins_are_visited_more_often_and_the_ceiling_holds():
    intervals = [revisit_days(r, 10.0, AGE) for r in (1e-5, 1e-3, 0.01, 0.1, 1, 10)]
    assert intervals == sorted(intervals, reverse=True)
    assert intervals[0] == 60.0
    assert revisit_days(0.0, 10.0, AGE) == 60.0


def test_freshness_gives_up_on_origins_too_fast_to_keep_fresh():
    # μλ ≥ 1: no frequency is worth it; the ceiling's visits only
    assert revisit_days(10.0, 0.2, FRESHNESS) == 60.0
    assert revisit_days(1.0, 0.2, FRESHNESS) < 60.0


@pytest.mark.parametrize("model", [AGE, FRESHNESS], ids=["age", "freshness"])
def test_the_threshold_meets_the_capacity(model):
    rng = random.Random(5)
    rates = [math.exp(rng.gauss(math.log(1 / 60), 2)) for _ in range(400)]
    mu = solve_threshold(rates, 1 / 7, model)
    assert sum(1 / revisit_days(r, mu, model) for r in rates) / len(rates) == pytest.approx(1 / 7, rel=1e-4)
    assert solve_threshold(rates, 1 / 2, model) < mu  # more capacity: a lower threshold, more visits


@pytest.mark.parametrize("model", [AGE, FRESHNESS], ids=["age", "freshness"])
def test_the_threshold_is_found_in_a_few_passes_over_the_sample(model, monkeypatch):
    # the steering runs over samples of thousands of origins: each pass solves every origin's interval
    import ostinato.domain.change_rates as change_rates
    rng = random.Random(11)
    rates = [math.exp(rng.gauss(math.log(1 / 60), 2)) for _ in range(200)]
    solved = []
    monkeypatch.setattr(change_rates, "revisit_days", lambda *a: solved.append(1) or revisit_days(*a))
    for visits in (1 / 50, 1 / 7, 1.0, 20.0):
        mu = solve_threshold(rates, visits, model)
        assert sum(1 / revisit_days(r, mu, model) for r in rates) / len(rates) == pytest.approx(visits, rel=1e-6)
    # a bisection over the thresholds' range to the same precision takes 26 passes each
    assert len(solved) <= 4 * 14 * len(rates) + 4 * len(rates)


def test_a_capacity_of_the_ceilings_visits_gets_the_lowest_threshold_that_keeps_them():
    rates = [1 / 90, 1 / 30, 2.0]
    mu = solve_threshold(rates, 1 / 60, AGE)  # AGE's ceiling: 60 days, so every origin at its ceiling
    assert all(revisit_days(r, mu, AGE) == pytest.approx(60.0, rel=1e-6) for r in rates)
    assert min(revisit_days(r, mu * 0.99, AGE) for r in rates) < 59.9  # a lower one would visit one of them sooner
    assert solve_threshold(rates, 1 / 600, AGE) == pytest.approx(1e12)  # below the ceiling's visits: the highest


def test_the_default_threshold_revisits_the_prior_weekly():
    for model in (AGE, FRESHNESS):
        assert revisit_days(model.prior_rate, default_threshold(model), model) == pytest.approx(7.0)


@pytest.mark.parametrize("kwargs, field", [
    ({"objective": "speed"}, "revisit_objective"),
    ({"prior_changes": 0}, "revisit_prior_changes"),
    ({"prior_days": -1.0}, "revisit_prior_days"),
    ({"ceiling": timedelta(0)}, "revisit_ceiling"),
    ({"horizon": "1y"}, "revisit_horizon"),
])
def test_a_bad_model_names_its_setting(kwargs, field):
    with pytest.raises(ValidationError) as caught:
        RevisitModel(**kwargs).validated()
    assert caught.value.field == field


def test_solve_threshold_refuses_what_it_cannot_use():
    with pytest.raises(ValidationError, match="rates"):
        solve_threshold([], 1.0, AGE)
    with pytest.raises(ValidationError, match="visits_per_origin_day"):
        solve_threshold([0.1], 0.0, AGE)


def _at(hours: float):
    from datetime import UTC, datetime, timedelta

    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=hours)


def test_change_times_count_the_bursts_they_start():
    from ostinato.domain.change_rates import burst_starts

    gap = timedelta(days=1)
    # three bursts: hours 0–2, 40–41, 100; the first measured from nothing known before it
    times = [_at(h) for h in (0, 1, 2, 40, 41, 100)]
    assert burst_starts(times, None, None, gap) == (3, _at(100))
    # the newest change an earlier visit saw, 6 hours before: the first burst had begun then
    assert burst_starts(times, _at(-6), None, gap) == (2, _at(100))
    # committer dates older than what was seen start no burst and leave the newest as it was
    assert burst_starts([_at(-50), _at(-49)], _at(-6), None, gap) == (0, _at(-6))
    # 60 changes counted, 6 times given: the 54 left out start bursts as often as those given did
    assert burst_starts(times, None, 60, gap) == (30, _at(100))
    assert burst_starts([], _at(-6), 0, gap) == (0, _at(-6))
    # a shorter burst gap splits more
    assert burst_starts(times, None, None, timedelta(minutes=30)) == (6, _at(100))


def test_the_burst_gap_is_a_small_share_of_the_origins_mean_gap_at_most_the_setting():
    from ostinato.domain.change_rates import BURST_GAP_SHARE, burst_gap

    model = RevisitModel()
    assert burst_gap(0.01, model) == model.burst_gap  # a change every 100 days: a day
    assert burst_gap(3.0, model) == timedelta(days=BURST_GAP_SHARE / 3.0)  # every 8 hours: 14.4 minutes
    assert burst_gap(0.0, model) == model.burst_gap
    assert burst_gap(3.0, RevisitModel(burst_gap=timedelta(minutes=5))) == timedelta(minutes=5)


@pytest.mark.parametrize("rate", [0.01, 0.3, 2.0, 40.0])
@pytest.mark.parametrize("threshold", [0.05, 1.0, 20.0])
def test_the_wait_after_a_reported_change_minimises_age_and_visits_at_the_threshold(rate, threshold):
    model = RevisitModel(ceiling=timedelta(days=10_000))
    wait = hint_wait_days(rate, threshold, model)

    def cost(w):  # per day: the age accrued after the first change, and the visits' price, over a cycle
        return (w * w / 2 + threshold) / (1 / rate + w)

    grid = [wait * f for f in (0.5, 0.8, 0.95, 1.05, 1.25, 2.0)]
    assert all(cost(wait) < cost(w) for w in grid)
    # a quiet origin is visited soon after, a busy one √(2μ) after: its next change would come first anyway
    assert wait < math.sqrt(2 * threshold)


def test_the_wait_after_a_reported_change_for_freshness_is_at_once_or_never():
    model = RevisitModel(objective=Objective.FRESHNESS)
    assert hint_wait_days(0.1, 5.0, model) == 0.0
    assert hint_wait_days(1.0, 5.0, model) is None
    assert hint_wait_days(0.0, 5.0, model) is None and hint_wait_days(1.0, 0.0, RevisitModel()) is None
    assert hint_wait_days(1e-3, 1e6, RevisitModel()) == RevisitModel().ceiling / timedelta(days=1)
