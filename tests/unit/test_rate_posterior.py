"""The bits' posterior over change rates (``domain.rate_posterior``): what a history of changed /
unchanged visits says, and the interval it plans, probes included."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ostinato.domain import rate_posterior as rp
from ostinato.domain.change_rates import Objective, RevisitModel, revisit_days, solve_threshold
from ostinato.domain.errors import ValidationError

PRIOR = 1 / 60
FRESH = RevisitModel(objective=Objective.FRESHNESS)


def history(visits, evidence=None, horizon=365.0):
    for days, changed in visits:
        evidence = rp.observe(evidence, days, changed=changed, counted=None, horizon_days=horizon)
    return evidence


def mean_rate(evidence) -> float:
    return sum(p * r for p, r in zip(rp.posterior(evidence, PRIOR), rp.RATE_GRID, strict=True))


def point_belief(cell: int) -> list[float]:
    return [1.0 if k == cell else 0.0 for k in range(len(rp.RATE_GRID))]


def test_the_grid_and_the_prior():
    assert len(rp.RATE_GRID) == 16 and rp.RATE_GRID[0] == pytest.approx(1e-4) and rp.RATE_GRID[-1] == pytest.approx(50)
    ratios = {round(b / a, 9) for a, b in zip(rp.RATE_GRID, rp.RATE_GRID[1:], strict=False)}
    assert len(ratios) == 1  # log-spaced
    prior = [math.exp(v) for v in rp.prior_log(PRIOR)]
    assert sum(prior) == pytest.approx(1)
    peak = max(range(16), key=prior.__getitem__)
    assert abs(math.log(rp.RATE_GRID[peak] / PRIOR)) < math.log(rp.RATE_GRID[1] / rp.RATE_GRID[0])


def test_unchanged_visits_lower_the_rate_and_changes_at_short_intervals_raise_it():
    assert mean_rate(history([(30, False)] * 6)) < PRIOR / 3
    assert mean_rate(history([(0.5, True)] * 6)) > 3
    moderate = history([(2, True), (2, False)] * 6)  # changed half the time over 2 days: about ln 2 / 2 a day
    assert 0.15 < mean_rate(moderate) < 0.8


def test_the_evidence_peaks_at_cho_and_garcia_molinas_estimate_for_irregular_intervals():
    visits = [(1.0, True), (3.0, True), (0.5, False), (7.0, True), (2.0, False), (4.0, True), (1.5, False)]
    evidence = history(visits, horizon=1e12)  # no fading: the plain likelihood

    def score(rate):  # Σ_changed I/(e^{λI} − 1) − Σ_unchanged I, zero at the MLE
        return sum(i / math.expm1(rate * i) for i, c in visits if c) - sum(i for i, c in visits if not c)

    lo, hi = 1e-6, 1e3
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if score(mid) > 0 else (lo, mid)
    mle = math.sqrt(lo * hi)
    best = max(range(16), key=evidence.__getitem__)
    assert abs(math.log(rp.RATE_GRID[best] / mle)) <= math.log(rp.RATE_GRID[1] / rp.RATE_GRID[0]) / 2
    assert max(evidence) == 0  # kept relative to its maximum


def test_counted_changes_use_the_poisson_likelihood_and_old_evidence_fades():
    counted = rp.observe(None, 10.0, changed=True, counted=20, horizon_days=365.0)
    assert rp.RATE_GRID[max(range(16), key=counted.__getitem__)] == pytest.approx(2, rel=0.6)
    slow = history([(30, False)] * 6)
    assert mean_rate(history([(365 * 4, True)], slow)) > mean_rate(history([(30, True)], slow))
    assert rp.observe(slow, 0.0, changed=True, counted=None, horizon_days=365.0) == slow


@pytest.mark.parametrize("bad", [(0.0,) * 15, (0.0,) * 15 + (float("nan"),), ("x",) * 16])
def test_bad_evidence_is_refused_by_name(bad):
    with pytest.raises(ValidationError) as caught:
        rp.observe(bad, 1.0, changed=True, counted=None, horizon_days=365.0)
    assert caught.value.field == "rate_evidence"
    with pytest.raises(ValidationError):
        rp.posterior(bad, PRIOR)


@pytest.mark.parametrize("cell", [3, 6, 9, 11])
def test_a_certain_belief_plans_as_the_point_rule_does(cell):
    rate, mu = rp.RATE_GRID[cell], 0.6
    assert rp.revisit_days(point_belief(cell), mu, 60.0) == pytest.approx(revisit_days(rate, mu, FRESH), rel=1e-6)


def test_a_page_too_fast_to_keep_fresh_waits_for_the_ceiling():
    assert rp.revisit_days(point_belief(15), 0.6, 60.0) == 60.0  # 50 a day, μλ ≥ 1: given up on


def test_a_belief_split_on_whether_the_page_is_worth_visiting_is_probed():
    # found changed every 6 days, 20 times: "somewhat fast" (worth visiting) or "too fast" (not)
    belief = rp.posterior(history([(6, True)] * 20), PRIOR)
    mu = 0.75
    worth = sum(p for p, r in zip(belief, rp.RATE_GRID, strict=True) if r < 1 / mu)
    assert rp.PROBE_WORTH[0] < worth < rp.PROBE_WORTH[1]
    days = rp.revisit_days(belief, mu, 60.0)
    chance = sum(p * -math.expm1(-r * days) for p, r in zip(belief, rp.RATE_GRID, strict=True))
    assert chance == pytest.approx(0.5, abs=1e-6)  # the visit where a change is as likely as not
    assert days < 1 / float(rp.demand(np.array([belief]), mu, 60.0)[0])  # sooner than planned without probing
    # once a few probes found it changed, it is given up on
    settled = rp.posterior(history([(days, True)] * 4, history([(6, True)] * 20)), PRIOR)
    assert rp.revisit_days(settled, mu, 60.0) > 10 * days


def test_the_vectorised_demand_is_the_planned_intervals():
    beliefs = [point_belief(c) for c in (2, 5, 8, 10, 12)] + [rp.posterior(history([(30, False)] * 3), PRIOR)]
    got = rp.demand(np.array(beliefs), 0.6, 60.0)
    want = [1 / rp.revisit_days(b, 0.6, 60.0) for b in beliefs]
    assert got == pytest.approx(want, rel=1e-6)


def test_the_threshold_steers_beliefs_and_point_rates_together_to_the_capacity():
    beliefs = rp.posteriors([history([(d, c)] * 5) for d, c in ((3, True), (10, False), (1, True), (30, True))], PRIOR)
    rates = [0.01, 0.2]
    mu = solve_threshold(rates, 1 / 7, FRESH, beliefs)
    asked = (sum(1 / revisit_days(r, mu, FRESH) for r in rates) + rp.demand(beliefs, mu, 60.0).sum()) / 6
    assert asked == pytest.approx(1 / 7, rel=1e-3)
    assert solve_threshold(rates, 1 / 2, FRESH, beliefs) < mu  # more capacity: a lower threshold


def test_without_numpy_the_steering_forms_give_the_same_answers():
    """The core install has no numpy: posteriors and demand fall back to one origin at a time."""
    evidences = [history([(d, c)] * 5) for d, c in ((3, True), (10, False), (1, True), (30, True), (200, False))]
    arrays = rp.posteriors(evidences, PRIOR)
    lists = [rp.posterior(e, PRIOR) for e in evidences]
    assert isinstance(arrays, np.ndarray)
    assert np.allclose(arrays, np.array(lists), rtol=1e-9, atol=1e-15)
    for mu in (0.01, 0.6, 5.0):
        assert list(rp.demand(lists, mu, 60.0)) == pytest.approx(list(rp.demand(arrays, mu, 60.0)), rel=1e-6)
    assert solve_threshold([0.2], 1 / 7, FRESH, lists) == pytest.approx(solve_threshold([0.2], 1 / 7, FRESH, arrays), rel=1e-5)
