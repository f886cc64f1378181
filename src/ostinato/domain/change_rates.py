"""The ``change_rate_optimal`` policy's maths: each origin's change rate, learnt from its
visits, and the revisit interval that spends the visit capacity where it buys most.

**Estimating the rate.** An origin changes as a Poisson process of unknown rate
λ (changes a day). Its state is two numbers, kept in its visit stats: a
Gamma(α, β) belief about λ, α counting changes and β the days observed, from a
prior (``prior_changes`` over ``prior_days``) so that a new origin starts
sensible. A visit that comes ``I`` days after the last successful one adds:

- where the loader counts the changes it found (``k``): α += k, β += I (the
  Gamma is the exact posterior of Poisson counts);
- where only "changed or not" is known: β += I, and after a change
  α += λI / (1 − e^{−λI}), the expected number of changes given at least one,
  at the current estimate λ = α/β. This is an online EM step for the
  irregular-interval model of Cho & Garcia-Molina ("Estimating frequency of
  change", 2003): its fixed point is the maximum-likelihood estimate solving
  Σ_changed Iⱼ / (e^{λIⱼ} − 1) = Σ_unchanged Iⱼ, here kept in constant space;
- older observations fade with ``horizon`` (weight e^{−I/horizon} per visit),
  so a rate that changes is followed.

The Gamma's mean is the rate the rules below use, with one exception: for the
freshness objective, an origin whose loader does not count changes is planned
from the full posterior of its changed / unchanged history instead
(``rate_posterior``), which can tell "somewhat fast" from "too fast to keep
fresh" where a point estimate cannot.

**Revisiting.** For a capacity of C visits a day shared by N origins, the
revisit frequencies fᵢ that minimise the mean age Σ A(λᵢ, fᵢ), with
A(λ, f) = 1/(2f) − 1/λ + (f/λ²)(1 − e^{−λ/f}), satisfy, with x = λ/f,

    g(x) = x²/2 − 1 + (1 + x)e^{−x} = μ λ²          (age, the default)

and for the mean freshness F(λ, f) = (f/λ)(1 − e^{−λ/f}),

    h(x) = 1 − (1 + x)e^{−x} = μ λ                  (freshness; f = 0 when μλ ≥ 1)

for one multiplier μ common to all origins (Lagrange). As Olston & Pandey
(WWW 2008) note, that is a local rule: each origin stores its next visit,
``last visit + x/λ``, and one global threshold μ per visit type is steered so
that the visits it asks for match the capacity (:func:`solve_threshold`).
No origin waits longer than ``ceiling`` (60 days by default).

**Bursts.** Changes often come in bursts (a release and its fixes, an upload and
its corrections): right after a change another is likelier than on average, and
after a quiet spell less likely. A counted visit that finds far more changes
than the belief allows (:func:`count_surprise`: the Gamma's negative binomial
predictive puts less than :data:`BURST_SURPRISE` on so many) shows it; from then
on the origin's changed / unchanged history is kept beside its counts
(``rate_evidence``, see ``domain.visits``). That history measures how often the
origin becomes stale, which is what freshness and age depend on, where the
counts measure how often it changes: in bursts, the first is lower. It plans the
freshness objective's intervals, and after an eventful visit it decides a
follow-up (:func:`follow_up_days`): one more visit a day later archives the end
of a burst the visit may have caught in the middle.

**Change times.** Where a visit sees the times of the changes it brings (a git
fetch sees each commit's date), the belief counts bursts, not changes
(:func:`burst_starts`): a change that comes more than 3 % of the origin's mean gap
(at most ``burst_gap``, a day) after the one before it starts a burst, and the rest
of the burst adds nothing. The
Gamma belief is then exactly what freshness and age depend on — how often the
origin becomes stale — measured rather than inferred from changed / unchanged, and
the rules above plan from it unchanged. The newest change seen is kept, so that the
first change a visit brings is measured against the last one the previous visit
saw (docs/design/beyond.md, "Bursty change").
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from . import rate_posterior
from .errors import ValidationError

_DAY = 86_400.0
#: where visits see change times, a change less than this share of the origin's mean gap after the one
#: before it is in the same burst (:func:`burst_gap`)
BURST_GAP_SHARE = 0.03
#: a counted visit this unlikely for the belief shows an origin changing in bursts (``domain.visits``)
BURST_SURPRISE = 1e-3
#: after an eventful visit of an origin that changes in bursts, the next one comes within this …
FOLLOW_UP = timedelta(days=1)
#: … unless this much of its changed / unchanged belief is on rates above half its counted rate
POISSON_LIKE = 0.95


class Objective(str, enum.Enum):
    #: minimise the mean time since the first change not yet archived (the default)
    AGE = "age"
    #: maximise the share of origins whose archived copy is current
    FRESHNESS = "freshness"


@dataclass(frozen=True, slots=True)
class RevisitModel:
    """The knobs of ``change_rate_optimal`` (settings ``revisit_*``)."""

    objective: Objective = Objective.AGE
    #: the prior: this many changes seen over ``prior_days`` (mean rate prior_changes / prior_days a day)
    prior_changes: float = 0.5
    prior_days: float = 30.0
    #: no origin waits longer than this between visits
    ceiling: timedelta = timedelta(days=60)
    #: observations older than this weigh e⁻¹ as much as a new one
    horizon: timedelta = timedelta(days=365)
    #: where visits see change times: a change this long after the one before it starts a burst, at most
    #: (:func:`burst_gap`: less for an origin that changes often)
    burst_gap: timedelta = timedelta(days=1)

    def validated(self) -> RevisitModel:
        if not isinstance(self.objective, Objective):
            try:
                object.__setattr__(self, "objective", Objective(self.objective))
            except ValueError:
                raise ValidationError("revisit_objective", "age or freshness", self.objective) from None
        for name in ("prior_changes", "prior_days"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
                raise ValidationError(f"revisit_{name}", "a positive number", value)
        for name in ("ceiling", "horizon", "burst_gap"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value <= timedelta(0):
                raise ValidationError(f"revisit_{name}", "a positive duration", value)
        return self

    @property
    def prior_rate(self) -> float:
        return self.prior_changes / self.prior_days


@dataclass(frozen=True, slots=True)
class RevisitThreshold:
    """A visit type's steered threshold μ, and what it was steered to."""

    visit_type: str
    threshold: float
    #: the visits a day ``change_rate_optimal`` has for this visit type, over this many enabled origins
    visits_per_day: float
    origins: int
    computed_at: datetime


@dataclass(frozen=True, slots=True)
class RateSample:
    """A random sample of a visit type's enabled origins' beliefs (changes, days, and the bits'
    evidence of ``rate_posterior``; None: none yet), and how many enabled origins there are (exact,
    or estimated from the sample)."""

    beliefs: list[tuple[float | None, float | None, tuple[float, ...] | None]]
    enabled_origins: int


# -- the rate -----------------------------------------------------------------------
def burst_gap(rate: float, model: RevisitModel) -> timedelta:
    """How far apart two changes of an origin changing ``rate`` times a day (its belief) are in one burst:
    :data:`BURST_GAP_SHARE` of its mean gap, at most ``model.burst_gap``. Changes that come at
    random are seldom that close (about one in 33 is), so a Poisson origin's rate is kept; the
    changes of a burst, minutes or hours apart where bursts are days apart, are counted once."""
    if not rate > 0:
        return model.burst_gap
    return min(model.burst_gap, timedelta(days=BURST_GAP_SHARE / rate))


def burst_starts(times: Sequence[datetime], newest_seen: datetime | None, counted: int | None,
                 gap: timedelta) -> tuple[int, datetime | None]:
    """The bursts that the changes at ``times`` (ascending) started, and the newest change seen after them.

    A change starts a burst when it comes more than ``gap`` (:func:`burst_gap`) after the change before it (the
    newest one seen so far, ``newest_seen``, for the first; with none known, the first starts one).
    Where the loader counted more changes than it gave times for (``counted``: it gives the newest,
    at most a bound), the older ones it left out are taken to start bursts as often as those given did.
    """
    if not times:
        return 0, newest_seen
    starts, before = 0, newest_seen
    for when in times:
        if before is None or when - before > gap:
            starts += 1
        before = when if before is None else max(before, when)
    left_out = (counted or 0) - len(times)
    if left_out > 0:
        starts += round(left_out * starts / len(times))
    return starts, before



def plans_from_evidence(model: RevisitModel, evidence: Sequence[float] | None) -> bool:
    """Whether an origin's next visit is planned from its bits' posterior (``rate_posterior``:
    the freshness objective, and evidence kept) rather than from the Gamma belief's mean."""
    return model.objective is Objective.FRESHNESS and evidence is not None


def estimated_rate(changes: float | None, days: float | None, model: RevisitModel) -> float:
    """λ, changes a day: the Gamma belief's mean (the prior's when nothing was observed yet)."""
    if changes is None or days is None or days <= 0:
        return model.prior_rate
    return changes / days


def observe(changes: float | None, days: float | None, interval: timedelta, *, changed: bool,
            counted: int | None, model: RevisitModel) -> tuple[float, float]:
    """The belief (α, β) after a successful visit ``interval`` after the previous successful one.

    ``counted``: the changes the loader found, when it can tell; else ``changed`` (a new snapshot).
    """
    elapsed = max(interval.total_seconds() / _DAY, 0.0)
    alpha, beta = _faded(changes, days, elapsed, model)
    if elapsed == 0.0:
        return alpha, beta
    rate = alpha / beta
    if counted is not None:
        alpha += counted
    elif changed:
        alpha += _expected_changes_given_some(rate * elapsed)
    return alpha, beta + elapsed


def _faded(changes: float | None, days: float | None, elapsed: float, model: RevisitModel) -> tuple[float, float]:
    """The belief (α, β), its observations faded over ``elapsed`` days (the prior's where none)."""
    alpha = model.prior_changes if changes is None else changes
    beta = model.prior_days if days is None else days
    if not elapsed > 0:
        return alpha, beta
    weight = math.exp(-elapsed / (model.horizon.total_seconds() / _DAY))
    return (model.prior_changes + (alpha - model.prior_changes) * weight,
            model.prior_days + (beta - model.prior_days) * weight)


def count_surprise(counted: int, changes: float | None, days: float | None, interval: timedelta,
                   model: RevisitModel) -> float:
    """How unlikely a visit that found ``counted`` changes is, given some, for the belief (α, β):
    P(K ≥ counted | K ≥ 1) where K, the changes of a Poisson process whose rate is Gamma(α, β), is
    negative binomial (r = α, p = β / (β + I)). A new origin's wide belief finds little surprising;
    a settled one finds a burst of changes (many at once where one or none was due) very unlikely."""
    elapsed = max(interval.total_seconds() / _DAY, 0.0)
    alpha, beta = _faded(changes, days, elapsed, model)
    if counted <= 1 or elapsed == 0.0:
        return 1.0
    stay = beta / (beta + elapsed)  # p
    if counted <= alpha * elapsed / beta + 1:  # not above the mean: no surprise
        return 1.0
    log_term = (math.lgamma(counted + alpha) - math.lgamma(alpha) - math.lgamma(counted + 1)
                + alpha * math.log(stay) + counted * math.log1p(-stay))
    tail, term, k = 0.0, math.exp(log_term), counted
    while term > 1e-300 and k < counted + 10_000:
        tail += term
        term *= (k + alpha) / (k + 1) * (1 - stay)
        k += 1
        if term < tail * 1e-12:
            break
    return min(1.0, tail / -math.expm1(alpha * math.log(stay)))


def hint_wait_days(rate: float, threshold: float, model: RevisitModel) -> float | None:
    """Days after a change its lister reports (``last_update``) until the visit that archives it, for an
    origin changing ``rate`` times a day at the threshold μ; None: a reported change is worth no visit
    of its own (the ceiling's).

    A reported change is known staleness: from the first change after a visit the origin's age grows
    by a day a day, and nothing a later change does matters until the next visit. A policy that visits
    ``w`` days after each first change pays, per cycle of mean length 1/λ + w, an age of w²/2 and the
    visit's price μ (in the age objective's units, as :func:`revisit_days` reads it); the best ``w``
    solves w²/2 + w/λ = μ, w = √(1/λ² + 2μ) − 1/λ, written here without the cancellation. A rarely
    changing origin is visited at once, a busy one about √(2μ) after: its next change would come
    before the visit anyway. For freshness the cost per cycle is w + μ, so the best ``w`` is 0 when
    μλ < 1 and never otherwise.
    """
    if not rate > 0 or not threshold > 0:
        return None
    if model.objective is Objective.AGE:
        slow = 1.0 / rate
        return min(2.0 * threshold / (math.sqrt(slow * slow + 2.0 * threshold) + slow), model.ceiling / timedelta(days=1))
    return 0.0 if threshold * rate < 1.0 else None


def follow_up_days(belief: Sequence[float], counted_rate: float) -> float | None:
    """After an eventful visit of an origin that changes in bursts (``belief``: the ``rate_posterior``
    of its changed / unchanged history), the days to a follow-up visit, or None for none.

    The burst may go on after the visit; one more visit :data:`FOLLOW_UP` later archives where it
    ended, for the quiet that follows. It is worth it where the origin, between bursts, usually
    stays quiet that long (the belief gives a visit after :data:`FOLLOW_UP` less than an even chance
    of finding a change), and where its history does not look like changes at its counted rate
    (less than :data:`POISSON_LIKE` of the belief on rates above half of it): one surprising count
    also marks, now and then, an origin whose changes are Poisson, and it should not be followed up.
    """
    days = FOLLOW_UP / timedelta(days=1)
    if rate_posterior.change_chance(belief, days) >= 0.5:
        return None
    poisson_like = sum(p for p, rate in zip(belief, rate_posterior.RATE_GRID, strict=True) if rate >= counted_rate / 2)
    return None if poisson_like >= POISSON_LIKE else days


def _expected_changes_given_some(mean: float) -> float:
    """E[k | k ≥ 1] for k ~ Poisson(mean): mean / (1 − e^{−mean}), 1 as mean → 0."""
    if mean < 1e-8:
        return 1.0 + mean / 2
    return mean / -math.expm1(-mean)


# -- the optimal interval --------------------------------------------------------------
#: below this x the marginals are their series (to x¹², exact to the last digit there): their closed
#: forms lose digits to cancellation, too many for the solver's 1e-12 above it and none that matter
_SERIES_BELOW = 0.15
#: g's series Σ_{n ≥ 3} (−1)^(n+1) (n − 1) xⁿ / n! and h's Σ_{n ≥ 2} (−1)^n (n − 1) xⁿ / n!, lowest power first
_AGE_SERIES = tuple((-1) ** (n + 1) * (n - 1) / math.factorial(n) for n in range(3, 13))
_FRESHNESS_SERIES = tuple((-1) ** n * (n - 1) / math.factorial(n) for n in range(2, 13))


def _polynomial(coefficients: tuple[float, ...], x: float) -> float:
    total = 0.0
    for c in reversed(coefficients):
        total = total * x + c
    return total


def age_marginal(x: float) -> float:
    """g(x) = x²/2 − 1 + (1 + x)e^{−x}, increasing from g(0) = 0 (its series near 0, where the terms cancel)."""
    if x < _SERIES_BELOW:
        return x * x * x * _polynomial(_AGE_SERIES, x)
    return x * x / 2 - 1 + (1 + x) * math.exp(-x)


def freshness_marginal(x: float) -> float:
    """h(x) = 1 − (1 + x)e^{−x}, increasing from 0 to 1 (its series near 0)."""
    if x < _SERIES_BELOW:
        return x * x * _polynomial(_FRESHNESS_SERIES, x)
    return 1 - (1 + x) * math.exp(-x)


def _age_slope(x: float) -> float:
    """g'(x) = x(1 − e^{−x})."""
    return -x * math.expm1(-x)


def _freshness_slope(x: float) -> float:
    """h'(x) = x e^{−x}."""
    return x * math.exp(-x)


def _solve_increasing(fn, slope, target: float, guess: float) -> float:
    """x > 0 with fn(x) = target, fn increasing from fn(0) = 0: Newton from ``guess``, bisection if it strays."""
    x = guess
    for _ in range(60):
        step = (fn(x) - target) / slope(x)
        new = x - step
        if not new > 0:
            new = x / 4
        if abs(new - x) <= 1e-12 * x:
            return new
        x = new
    lo, hi = guess / 2, guess * 2  # Newton did not settle: bracket and bisect in log space
    while fn(lo) > target and lo > 1e-300:
        lo /= 8
    while fn(hi) < target:
        hi *= 8
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fn(mid) < target else (lo, mid)
        if hi / lo < 1 + 1e-12:
            break
    return math.sqrt(lo * hi)


def revisit_days(rate: float, threshold: float, model: RevisitModel) -> float:
    """Days until the next visit of an origin changing ``rate`` times a day, at the threshold μ."""
    ceiling = model.ceiling.total_seconds() / _DAY
    if not rate > 0 or not threshold > 0:
        return ceiling
    if model.objective is Objective.AGE:
        target = threshold * rate * rate
        guess = (3 * target) ** (1 / 3) if target < 1 else math.sqrt(2 * target + 2)
        x = _solve_increasing(age_marginal, _age_slope, target, guess)
    else:
        target = threshold * rate
        if target >= 1:
            return ceiling  # worth no visit of its own: the ceiling's
        guess = math.sqrt(2 * target) if target < 0.5 else -math.log1p(-target) + 1
        x = _solve_increasing(freshness_marginal, _freshness_slope, target, guess)
    return min(x / rate, ceiling)


@functools.lru_cache(maxsize=256)
def prior_revisit_days(threshold: float, model: RevisitModel) -> float:
    """:func:`revisit_days` at the prior's rate: every origin not yet observed asks for it, at one
    threshold per visit type, so it is solved once per (threshold, model)."""
    return revisit_days(model.prior_rate, threshold, model)


def revisit_interval(rate: float, threshold: float, model: RevisitModel) -> timedelta:
    return timedelta(days=revisit_days(rate, threshold, model))


def solve_threshold(rates: Sequence[float], visits_per_origin_day: float, model: RevisitModel,
                    beliefs: Sequence[Sequence[float]] | None = None) -> float:
    """μ such that origins with these rates (a sample) ask for ``visits_per_origin_day`` visits a day each,
    on average (capacity C over N origins: C / N). Visits are counted with the ceiling's floor, so a
    capacity below one visit per ceiling per origin gives the largest threshold that keeps the ceiling.

    ``beliefs``: more sampled origins, as ``rate_posterior`` beliefs (origins × rates; freshness objective)."""
    count = len(rates) + (0 if beliefs is None else len(beliefs))
    if not count:
        raise ValidationError("rates", "a sample of at least one origin's change rate", rates)
    if not visits_per_origin_day > 0:
        raise ValidationError("visits_per_origin_day", "a positive number", visits_per_origin_day)
    ceiling = model.ceiling.total_seconds() / _DAY

    def demand(mu: float) -> float:
        total = sum(1 / revisit_days(r, mu, model) for r in rates)
        if beliefs is not None and len(beliefs):
            total += math.fsum(rate_posterior.demand(beliefs, mu, ceiling))
        return total / count

    return _steer(lambda log_mu: math.log(demand(math.exp(log_mu)) / visits_per_origin_day))


#: the thresholds searched, and how closely the visits asked for must meet the capacity (relative)
_THRESHOLD_RANGE = (math.log(1e-12), math.log(1e12))
_DEMAND_TOLERANCE = 1e-7


def _steer(excess) -> float:
    """μ where ``excess(log μ)``, the log of the visits asked for over the capacity, falls to 0: it
    decreases with μ, nearly linearly in log μ (an interval grows as a power of μ), so a secant walk
    kept inside a bracket (the Illinois rule: the end that stays has its value halved) meets it in a few
    evaluations, each a pass over the sample. Outside the range, the nearer end: a capacity below the
    ceiling's visits gets the highest threshold, one above every origin's fill the lowest; one where
    every origin is at its ceiling already the lowest threshold that keeps them there."""
    lo, hi = _THRESHOLD_RANGE
    f_lo, f_hi = excess(lo), excess(hi)
    if f_lo <= 0:
        return math.exp(lo)
    if f_hi > _DEMAND_TOLERANCE:
        return math.exp(hi)
    if f_hi >= -_DEMAND_TOLERANCE:  # the ceiling's visits are the capacity: the lowest μ that keeps to them
        while hi - lo > 1e-7:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if excess(mid) > _DEMAND_TOLERANCE else (lo, mid)
        return math.exp(hi)
    side = 0
    for _ in range(100):
        mid = hi - f_hi * (hi - lo) / (f_hi - f_lo) if f_hi != f_lo else (lo + hi) / 2
        if not lo < mid < hi:
            mid = (lo + hi) / 2
        f_mid = excess(mid)
        if abs(f_mid) <= _DEMAND_TOLERANCE or hi - lo <= 1e-7:
            return math.exp(mid)
        if f_mid > 0:  # too many visits: the root lies above
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo /= 2
            side = 1
    return math.exp((lo + hi) / 2)


@functools.lru_cache(maxsize=64)
def default_threshold(model: RevisitModel, interval: timedelta = timedelta(days=7)) -> float:
    """Before any capacity is known: the threshold that revisits an origin at the prior rate every ``interval``."""
    rate = model.prior_rate
    x = rate * interval.total_seconds() / _DAY
    if model.objective is Objective.AGE:
        return age_marginal(x) / (rate * rate)
    return freshness_marginal(x) / rate
