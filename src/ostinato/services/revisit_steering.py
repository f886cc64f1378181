"""Steering ``change_rate_optimal``'s threshold to the visit capacity (see docs/design/beyond.md).

Every ``every`` (10 minutes), for each visit type whose ratios give
``change_rate_optimal`` a share, the orchestrator's :class:`ThresholdSteering`:

1. takes the visits a day the policy has: the ``revisit_capacity`` setting, or
   else what this orchestrator measured it dispatched of that visit type over
   the last day (at least an hour of it), times the policy's share of the ratios;
2. samples the enabled origins' change rates (``sample_change_rates``: a share
   of the table's pages, never the whole table): the Gamma belief's mean, or,
   for the freshness objective, the bits' posterior where an origin has one;
3. solves for the threshold μ at which those origins ask for that many visits
   (:func:`ostinato.domain.change_rates.solve_threshold`) and stores it, so that
   the feedback of every process (embedded workers, the listener, the journal
   client) spaces the next revisits by it.
"""

from __future__ import annotations

import collections
import logging
from datetime import datetime, timedelta

from ..domain import rate_posterior
from ..domain.change_rates import (
    RevisitModel,
    RevisitThreshold,
    estimated_rate,
    plans_from_evidence,
    solve_threshold,
)
from ..store.interface import OriginStore

log = logging.getLogger(__name__)

#: the capacity is measured over this much of the orchestrator's recent dispatching …
MEASURE_WINDOW = timedelta(days=1)
#: … once it has dispatched for at least this long
MEASURE_AT_LEAST = timedelta(hours=1)


class ThresholdSteering:
    def __init__(self, store: OriginStore, model: RevisitModel, *, capacity: float = 0.0,
                 every: timedelta = timedelta(minutes=10), sample_size: int = 500):
        self.store = store
        self.model = model.validated()
        self.capacity = capacity
        self.every = every
        self.sample_size = sample_size
        self._dispatched: dict[str, collections.deque[tuple[datetime, int]]] = collections.defaultdict(collections.deque)
        self._started: dict[str, datetime] = {}
        self._last: dict[str, datetime] = {}

    def dispatched(self, visit_type: str, visits: int, now: datetime) -> None:
        """Count visits of ``visit_type`` dispatched at ``now`` (the measured capacity)."""
        self._started.setdefault(visit_type, now)
        log_ = self._dispatched[visit_type]
        log_.append((now, visits))
        while log_ and log_[0][0] < now - MEASURE_WINDOW:
            log_.popleft()

    def measured(self, visit_type: str, now: datetime) -> float | None:
        """Visits a day dispatched lately, or None before ``MEASURE_AT_LEAST`` of dispatching."""
        started = self._started.get(visit_type)
        if started is None or now - started < MEASURE_AT_LEAST:
            return None
        span = min(now - started, MEASURE_WINDOW)
        return sum(n for at, n in self._dispatched[visit_type] if at >= now - span) / (span / timedelta(days=1))

    def due(self, visit_type: str, now: datetime) -> bool:
        last = self._last.get(visit_type)
        return last is None or now - last >= self.every

    def steer(self, visit_type: str, share: float, now: datetime) -> RevisitThreshold | None:
        """Steer ``visit_type``'s threshold for the policy's ``share`` of the capacity; None if nothing to steer by."""
        self._last[visit_type] = now
        capacity = self.capacity if self.capacity > 0 else self.measured(visit_type, now)
        if not capacity or share <= 0:
            return None
        sample = self.store.sample_change_rates(visit_type, self.sample_size, seed=int(now.timestamp()))
        if not sample.beliefs or sample.enabled_origins <= 0:
            return None
        rates = [estimated_rate(changes, days, self.model) for changes, days, evidence in sample.beliefs
                 if not plans_from_evidence(self.model, evidence)]
        evidences = [evidence for _, _, evidence in sample.beliefs
                     if evidence is not None and plans_from_evidence(self.model, evidence)]
        beliefs = rate_posterior.posteriors(evidences, self.model.prior_rate) if evidences else None
        visits = capacity * share
        threshold = RevisitThreshold(
            visit_type, solve_threshold(rates, visits / sample.enabled_origins, self.model, beliefs),
            visits, sample.enabled_origins, now)
        self.store.set_revisit_threshold(threshold)
        log.info("change_rate_optimal: %s threshold %.4g for %.0f visits a day over %d origins", visit_type,
                 threshold.threshold, visits, sample.enabled_origins)
        return threshold
