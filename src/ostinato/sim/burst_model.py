"""The burst model of an origin's changes, and the best revisits a scheduler told that model can make.

**The family, fixed before any policy was tuned to it.** An origin's changes are a
renewal process whose gaps are a mixture of two exponentials (hyperexponential): a
share ``p`` of *burst* gaps at a fast rate ``fast`` (changes a day) and the rest
*quiet* gaps at a slow rate ``slow``. Three numbers per origin. Why this family:

- real histories are bursty in exactly this way (in ``../shared/traces`` the gaps'
  coefficient of variation is 1.7–9.5 per origin, and most gaps are under an hour),
  and a two-exponential mixture is the simplest renewal law with a coefficient of
  variation above 1: its hazard falls as a gap grows (a change is likely soon after
  a change, less so after a quiet spell);
- a visit that sees change times sees the current gap's age (the time since the
  newest change), and under this family the age alone says which kind of gap the
  origin is in: ``P(quiet | age a) ∝ (1 − p) e^{−slow·a}``, so the whole state of
  a renewal origin after a visit is one number;
- with ``fast == slow`` it is Poisson, the family every published revisit policy
  assumes: nothing is lost where changes are not bursty.

Equivalently the origin is a two-phase Markov process (phase 1 changes at ``fast``,
phase 2 at ``slow``; at each change the next phase is drawn, 1 with probability
``p``), which gives every quantity below in closed form.

**The best revisits for a known model** (:func:`solve_revisits`). After a visit that
saw the current gap at age ``a``, the scheduler picks the interval ``I`` to the next
visit. Over that interval the copy is fresh until the first change; at the next visit
the age is ``a + I`` (no change) or the time since the newest change in between. For a
price ``μ`` per visit (in fresh days), the interval that maximises the long-run
fresh time less ``μ`` a visit is the solution of a semi-Markov decision problem on
the age, solved here by policy iteration on a grid of ages and intervals. One
multiplier ``μ`` for all origins, steered so that the visits asked for match the
capacity, makes the schedule of the whole population (Lagrange, as the rate oracles).

:func:`fit` estimates a model from a list of gaps (EM, the last gap censored).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: ages after a visit (days) on which the revisit problem is solved: 0, then 1 minute to about 8 years
AGES = np.concatenate([[0.0], np.geomspace(1 / 1440, 3000.0, 64)])
#: the multipliers (fresh days a visit must buy) for which each model's revisits are solved
MULTIPLIERS = np.geomspace(1e-3, 1e3, 25)
_EM_ROUNDS = 200


@dataclass(frozen=True)
class BurstModel:
    """A share ``p`` of burst gaps at ``fast`` changes a day, the rest quiet gaps at ``slow``."""

    p: float
    fast: float
    slow: float

    def quiet_share(self, age: np.ndarray | float) -> np.ndarray:
        """P(the current gap is a quiet one | it has lasted ``age`` days)."""
        age = np.asarray(age, dtype=float)
        log_burst = np.log(self.p) - self.fast * age
        log_quiet = np.log1p(-self.p) - self.slow * age
        top = np.maximum(log_burst, log_quiet)
        burst, quiet = np.exp(log_burst - top), np.exp(log_quiet - top)
        return quiet / (burst + quiet)


def fit(gaps: np.ndarray, censored: float | None = None, *, floor_days: float = 1 / 86_400) -> BurstModel:
    """The maximum-likelihood model of these gaps (days), and a last gap ``censored`` (still going on
    for that many days), by EM from quantile starts. With fewer than 3 gaps: Poisson at the mean rate."""
    g = np.maximum(np.asarray(gaps, dtype=float), floor_days)
    open_gap = 0.0 if censored is None else max(float(censored), 0.0)
    if g.size < 3:
        rate = max(g.size, 0.5) / max(float(g.sum()) + open_gap, floor_days)
        return BurstModel(0.5, rate, rate)
    fast, slow, p = 1 / max(float(np.quantile(g, 0.25)), 1e-4), 1 / max(float(np.quantile(g, 0.9)), 1e-3), 0.5
    for _ in range(_EM_ROUNDS):
        burst = p * fast * np.exp(-fast * g)
        quiet = (1 - p) * slow * np.exp(-slow * g)
        w = burst / np.maximum(burst + quiet, 1e-300)
        # the open gap: a survival, not a density
        sb, sq = p * np.exp(-fast * open_gap), (1 - p) * np.exp(-slow * open_gap)
        wo = sb / max(sb + sq, 1e-300) if open_gap > 0 else 0.0
        weight = w.sum() + wo
        p = float(np.clip(weight / (g.size + (open_gap > 0)), 1e-4, 1 - 1e-4))
        fast = float(w.sum() / max((w * g).sum() + wo * open_gap, 1e-12))
        slow = float((1 - w).sum() / max(((1 - w) * g).sum() + (1 - wo) * open_gap, 1e-12))
    if fast < slow:
        fast, slow, p = slow, fast, 1 - p
    return BurstModel(p, max(fast, 1e-9), max(slow, 1e-9))


@dataclass(frozen=True)
class Revisits:
    """For one model: at each multiplier of :data:`MULTIPLIERS`, the interval (days) after a visit that
    saw each age of :data:`AGES`, and the visits a day that policy makes in the long run."""

    intervals: np.ndarray  # (multipliers, ages)
    visits_per_day: np.ndarray  # (multipliers,)

    def interval(self, multiplier: float, age: float) -> float:
        """The interval after a visit that saw the current gap at ``age`` days, at ``multiplier``."""
        m = np.interp(np.log(multiplier), np.log(MULTIPLIERS), np.arange(MULTIPLIERS.size))
        lo = int(np.floor(m))
        hi = min(lo + 1, MULTIPLIERS.size - 1)
        x = np.log(max(age, AGES[1]))
        grid = np.log(np.maximum(AGES, AGES[1]))
        below, above = np.interp(x, grid, self.intervals[lo]), np.interp(x, grid, self.intervals[hi])
        return float(np.exp(np.log(below) + (m - lo) * (np.log(above) - np.log(below))))

    def demand(self, multiplier: float) -> float:
        return float(np.exp(np.interp(np.log(multiplier), np.log(MULTIPLIERS), np.log(self.visits_per_day))))


def _transitions(model: BurstModel, intervals: np.ndarray):
    """Per (age, interval): the fresh days expected before the first change, the chance of no change,
    and the distribution of the next visit's age over :data:`AGES` when some change came."""
    p, rates = model.p, np.array([model.fast, model.slow])
    quiet = model.quiet_share(AGES)
    phase = np.stack([1 - quiet, quiet], axis=1)  # (ages, 2)
    reward = (phase[:, None, :] * (-np.expm1(-rates * intervals[:, None]) / rates)[None]).sum(-1)
    unchanged = (phase[:, None, :] * np.exp(-rates * intervals[:, None])[None]).sum(-1)
    switch = rates[0] * (1 - p) + rates[1] * p
    stationary = np.array([rates[1] * p, rates[0] * (1 - p)]) / switch
    ages = AGES.size
    moved = np.zeros((ages, intervals.size, ages))
    for j, interval in enumerate(intervals):
        xs = AGES[AGES < interval]
        s = interval - xs
        towards = np.exp(-switch * s)
        in_phase = stationary[None, None, :] + towards[None, :, None] * (phase[:, None, :] - stationary[None, None, :])
        changed = np.maximum(in_phase - phase[:, None, :] * np.exp(-rates[None, None, :] * s[None, :, None]), 0.0)
        # P(the newest change is older than x, and there was one) for each x of the grid below the interval
        older = (changed * np.exp(-rates[None, None, :] * xs[None, :, None])).sum(-1)
        some = 1.0 - unchanged[:, j]
        older = np.minimum(older, some[:, None])
        older[:, 0] = some
        mass = -np.diff(np.concatenate([older, np.zeros((ages, 1))], axis=1), axis=1)
        moved[:, j, : xs.size] = np.maximum(mass, 0.0)
    grown = np.clip(np.searchsorted(AGES, AGES[:, None] + intervals[None, :]), 0, ages - 1)
    return reward, unchanged, moved, grown


def solve_revisits(model: BurstModel, shortest: float, longest: float, intervals: int = 96) -> Revisits:
    """The best revisit intervals for ``model`` (between ``shortest`` and ``longest`` days), at every
    multiplier of :data:`MULTIPLIERS`, by policy iteration on the age."""
    grid = np.geomspace(shortest, longest, intervals)
    reward, unchanged, moved, grown = _transitions(model, grid)
    ages = AGES.size
    rows = np.arange(ages)
    results, demand = [], []
    choice = np.full(ages, intervals // 2)
    for mu in MULTIPLIERS:
        for _ in range(50):
            # evaluate: h(s) = R − μ − g·τ + Σ P h, with h(last age) = 0
            step = np.zeros((ages, ages))
            step[rows, grown[rows, choice]] += unchanged[rows, choice]
            step += moved[rows, choice]
            system = np.eye(ages) - step
            system[:, -1] = grid[choice]  # the unknown g takes h(last)'s column
            values = _solve(system, reward[rows, choice] - mu)
            gain, h = values[-1], np.concatenate([values[:-1], [0.0]])
            q = reward - mu - gain * grid[None, :] + moved @ h + unchanged * h[grown]
            best = q.argmax(axis=1)
            keep = q[rows, choice] >= q[rows, best] - 1e-12
            new = np.where(keep, choice, best)
            if np.array_equal(new, choice):
                break
            choice = new
        step = np.zeros((ages, ages))
        step[rows, grown[rows, choice]] += unchanged[rows, choice]
        step += moved[rows, choice]
        # the long-run share of visits at each age: the stationary law of the visits' chain
        balance = (step - np.eye(ages)).T
        balance[-1] = 1.0  # one balance equation is redundant: the law sums to 1 instead
        law = np.maximum(_solve(balance, np.eye(ages)[-1]), 0.0)
        law /= law.sum()
        results.append(grid[choice])
        demand.append(1.0 / float(law @ grid[choice]))
    return Revisits(np.array(results), np.array(demand))


def _solve(system: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The solution of a square linear system, or its least-squares one where the system is singular
    (ages the chain never reaches)."""
    try:
        return np.linalg.solve(system, right)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(system, right, rcond=None)[0]
