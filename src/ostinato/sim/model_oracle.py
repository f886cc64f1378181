"""The model oracle: a scheduler told each origin's burst model, fitted on its recorded changes, but
not the change times. It measures how much a policy that learns from the past could reach.

Each origin's :class:`~ostinato.sim.burst_model.BurstModel` is fitted on its recorded changes
during the run (warm-up and window; the gap still open at the run's end censored) — the model, not
the history: the oracle never reads a change time before a visit has seen it. A successful visit
sees, as a git fetch does, the time of the newest change, hence the current gap's age; the next
visit is planned at the best interval for that model and age
(:func:`~ostinato.sim.burst_model.solve_revisits`), for one multiplier μ shared by all origins,
solved again whenever the population changes so that the visits planned match the capacity. Each
step it visits the quota of sources with the earliest planned visits, due or not (never visited
first, in discovery order), as the multiplicative rule does; a failed visit is tried again the next
step. No cooldown holds it back: the shortest interval is the simulation's step. The multiplier is
solved again when the population has changed by ``baselines.RESOLVE_GROWTH``, as the rate oracle's.

Fitted on the run's changes rather than on the whole recorded history: a repository's pace drifts
over years (many of ``../shared/traces`` fall quiet), and a model of eight years of history would
plan for a past pace. This is the better ceiling of the two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..domain.visits import FeedbackPolicy
from .archive_tracker import SUCCESS
from .baselines import RESOLVE_GROWTH, QuotaScheduler
from .burst_model import MULTIPLIERS, BurstModel, Revisits, fit, solve_revisits

#: the longest interval the oracle plans, days
LONGEST = 1000.0


def fitted_models(sources: np.ndarray, days: np.ndarray, size: int, horizon: float) -> list[BurstModel]:
    """Each source's model, fitted on its changes (``sources``, ``days``: sorted by source, then time)
    before ``horizon`` (the gap still open then, censored)."""
    starts = np.searchsorted(sources, np.arange(size + 1))
    models = []
    for k in range(size):
        times = days[starts[k]:starts[k + 1]]
        times = times[times < horizon]
        if times.size == 0:
            models.append(BurstModel(0.5, 1 / (2 * horizon), 1 / (2 * horizon)))
            continue
        models.append(fit(np.diff(times), censored=horizon - times[-1]))
    return models


class ModelOracleScheduler(QuotaScheduler):
    def __init__(self, size: int, feedback: FeedbackPolicy, *, changes: tuple[np.ndarray, np.ndarray],
                 horizon: float, capacity: float, shortest: float, **kw: Any):
        super().__init__(size, feedback, **kw)
        order = np.lexsort((changes[1], changes[0]))
        sources, days = changes[0][order], changes[1][order]
        self.models = fitted_models(sources, days, size, horizon)
        solved: dict[tuple[float, float, float], Revisits] = {}
        self.revisits = []
        for model in self.models:
            key = (round(model.p, 3), float(f"{model.fast:.3g}"), float(f"{model.slow:.3g}"))
            if key not in solved:
                solved[key] = solve_revisits(BurstModel(*key), shortest, LONGEST)
            self.revisits.append(solved[key])
        self.distinct_models = len(solved)
        #: each source's log visits a day at each multiplier of MULTIPLIERS (for the steering)
        self._log_demand = np.log(np.array([revisits.visits_per_day for revisits in self.revisits])).reshape(
            size, MULTIPLIERS.size)
        # what a visit sees: each source's change times, sorted (read only at a visit's end)
        self._seen_sources, self._seen_days = sources, days
        self.capacity = capacity
        self.shortest = shortest
        self.multiplier = float(MULTIPLIERS[MULTIPLIERS.size // 2])
        self.next_visit = np.full(size, np.inf)
        self.solved_for = -1

    def _discovered(self, t: float, sources: np.ndarray) -> None:
        self.next_visit[sources] = self.discovered_at[sources] - 1e9  # never visited: first, in discovery order
        members = int(self.known.sum())
        if abs(members - self.solved_for) > self.solved_for * RESOLVE_GROWTH:
            self.multiplier = self._steer(np.flatnonzero(self.known))
            self.solved_for = members

    def _steer(self, members: np.ndarray) -> float:
        """μ at which the members' planned visits a day add up to the capacity (bisection on log μ)."""
        lo, hi = np.log(MULTIPLIERS[0]), np.log(MULTIPLIERS[-1])
        table = self._log_demand[members]
        grid = np.log(MULTIPLIERS)

        def excess(log_mu: float) -> float:
            k = min(int(np.searchsorted(grid, log_mu, side="right")) - 1, grid.size - 2)
            share = (log_mu - grid[k]) / (grid[k + 1] - grid[k])
            return float(np.exp(table[:, k] + share * (table[:, k + 1] - table[:, k])).sum()) - self.capacity

        if excess(lo) <= 0:
            return float(np.exp(lo))
        if excess(hi) >= 0:
            return float(np.exp(hi))
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
        return float(np.exp((lo + hi) / 2))

    def _order(self, t: float, candidates: np.ndarray) -> np.ndarray:
        return self.next_visit[candidates]

    def _newest_change(self, source: int, at: float) -> float | None:
        lo, hi = np.searchsorted(self._seen_sources, [source, source + 1])
        times = self._seen_days[lo:hi]
        k = int(np.searchsorted(times, at, side="right"))
        return float(times[k - 1]) if k else None

    def _learn(self, visits: Mapping[str, np.ndarray]) -> None:
        for source, end, outcome in zip(visits["source"], visits["end"], visits["outcome"], strict=True):
            if outcome != SUCCESS:
                self.next_visit[source] = end + self.shortest
                continue
            newest = self._newest_change(int(source), float(end))
            age = float(end - (newest if newest is not None else self.discovered_at[source]))
            self.next_visit[source] = end + self.revisits[source].interval(self.multiplier, max(age, 0.0))

    def notes(self) -> dict[str, Any]:
        return {"multiplier": self.multiplier, "distinct_models": self.distinct_models}
