"""Idealised policies simulated directly, with no store: the yardsticks of the report.

- :class:`UniformScheduler`: each step, the quota of sources visited longest ago
  (never visited first, in discovery order): every source every N/C days.
- :class:`MultiplicativeScheduler`: the ×2 / ÷2 interval rule without its store
  and cooldowns: after a success the next target is the time since the previous
  success ÷ ``adjust_factor`` (eventful, at least ``minimum_interval``) or ×
  ``adjust_factor`` (uneventful); after a failure ``failure_delay``. Each step
  it visits the quota of sources with the earliest targets, due or not, so it
  uses the whole capacity.
- :class:`OracleScheduler`: Cho & Garcia-Molina's optimum for the true rates
  (``oracle.allocate``): source i is visited at fixed intervals 1/fᵢ from a
  random phase, whatever the quota (Σ fᵢ = C on average). The archive starts empty: the
  first visit of each initial source is spread over one sweep (sources / C days), that
  of a later one over the listing period, or its period 1/fᵢ when shorter. The allocation is over
  the live sources listed so far; a new source gets the frequency the current
  Lagrange multiplier gives it, and the multiplier is solved again once the
  population has grown (or shrunk) by :data:`RESOLVE_GROWTH`. It knows which sources
  are dead, and when a recorded history's origins die, and never visits them then.

The uniform and multiplicative schedulers see only what a scheduler sees (the
listings and the visits' outcomes), disable a source after ``max_failures``
failures in a row, and enable it again when a listing reports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..domain.visits import FeedbackPolicy
from .archive_tracker import SUCCESS
from .hosts import host_room, polite_choice
from .oracle import Allocation, allocate

#: the oracle solves its multiplier again when the population has grown by this share
RESOLVE_GROWTH = 0.005


class QuotaScheduler:
    """Shared by the uniform and multiplicative rules: discovery, in-flight visits, failures."""

    def __init__(self, size: int, feedback: FeedbackPolicy, *, polite: tuple | None = None):
        self.feedback = feedback
        #: politeness per host: (each source's host, max in flight per host, min spacing of starts), or None
        self.polite = polite
        if polite is not None:
            self.host_last_start = np.full(int(polite[0].max(initial=0)) + 1, -np.inf)
        self.discovered_at = np.full(size, np.nan)
        self.known = np.zeros(size, dtype=bool)
        self.busy = np.zeros(size, dtype=bool)
        self.disabled = np.zeros(size, dtype=bool)
        self.failures = np.zeros(size, dtype=np.int64)

    def listing(self, t: float, sources: np.ndarray, last_change: np.ndarray) -> None:
        new = sources[~self.known[sources]]
        self.known[new] = True
        self.discovered_at[new] = t
        self._discovered(t, new)
        relisted = sources[self.disabled[sources]]
        self.disabled[relisted] = False
        self.failures[relisted] = 0

    def _discovered(self, t: float, sources: np.ndarray) -> None:
        pass

    def _order(self, t: float, candidates: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def pick(self, t: float, until: float, quota: int) -> tuple[np.ndarray, np.ndarray]:
        candidates = np.flatnonzero(self.known & ~self.busy & ~self.disabled)
        if quota <= 0 or candidates.size == 0:
            chosen = np.empty(0, dtype=np.int64)
        elif self.polite is not None:
            chosen = self._polite_pick(t, candidates, quota)
        elif quota >= candidates.size:
            chosen = candidates
        else:
            key = self._order(t, candidates)
            chosen = candidates[np.argpartition(key, quota - 1)[:quota]]
        self.busy[chosen] = True
        self._picked(t, chosen)
        return chosen, np.full(chosen.size, t)

    def _polite_pick(self, t: float, candidates: np.ndarray, quota: int) -> np.ndarray:
        """The order's best candidates that their hosts' room allows (``hosts.polite_choice``)."""
        assert self.polite is not None  # pick() calls this only then
        hosts, max_per_host, min_spacing = self.polite
        in_flight = np.bincount(hosts[self.busy], minlength=self.host_last_start.size)
        room = host_room(in_flight, self.host_last_start, t, max_per_host, min_spacing)
        ordered = candidates[np.argsort(self._order(t, candidates), kind="stable")]
        chosen = polite_choice(ordered, quota, hosts, room)
        self.host_last_start[hosts[chosen]] = t
        return chosen

    def _picked(self, t: float, sources: np.ndarray) -> None:
        pass

    def feed(self, t: float, visits: Mapping[str, np.ndarray]) -> None:
        sources, outcome = visits["source"], visits["outcome"]
        self.busy[sources] = False
        ok = outcome == SUCCESS
        self.failures[sources[ok]] = 0
        failed = sources[~ok]
        self.failures[failed] += 1
        self.disabled[failed[self.failures[failed] >= self.feedback.max_failures]] = True
        self._learn(visits)

    def _learn(self, visits: Mapping[str, np.ndarray]) -> None:
        pass

    def notes(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


class UniformScheduler(QuotaScheduler):
    def __init__(self, size: int, feedback: FeedbackPolicy, **kw: Any):
        super().__init__(size, feedback, **kw)
        self.last_pick = np.full(size, np.nan)

    def _order(self, t: float, candidates: np.ndarray) -> np.ndarray:
        last = self.last_pick[candidates]
        # never visited first, in discovery order
        return np.where(np.isnan(last), self.discovered_at[candidates] - 1e9, last)

    def _picked(self, t: float, sources: np.ndarray) -> None:
        self.last_pick[sources] = t


class MultiplicativeScheduler(QuotaScheduler):
    def __init__(self, size: int, feedback: FeedbackPolicy, **kw: Any):
        super().__init__(size, feedback, **kw)
        self.target = np.full(size, np.inf)
        self.last_success = np.full(size, np.nan)
        self.factor = float(feedback.adjust_factor)
        self.minimum = feedback.minimum_interval.total_seconds() / 86400
        self.failure_delay = feedback.failure_delay.total_seconds() / 86400

    def _discovered(self, t: float, sources: np.ndarray) -> None:
        self.target[sources] = t

    def _order(self, t: float, candidates: np.ndarray) -> np.ndarray:
        return self.target[candidates]

    def _learn(self, visits: Mapping[str, np.ndarray]) -> None:
        sources, end, ok = visits["source"], visits["end"], visits["outcome"] == SUCCESS
        good, when = sources[ok], end[ok]
        last = self.last_success[good]
        since = np.where(np.isnan(last), self.minimum, when - last)
        eventful = visits["eventful"][ok]
        interval = np.where(eventful, np.maximum(since / self.factor, self.minimum), since * self.factor)
        self.target[good] = when + interval
        self.last_success[good] = when
        self.target[sources[~ok]] = end[~ok] + self.failure_delay


class OracleScheduler:
    def __init__(self, rates: np.ndarray, dead: np.ndarray, capacity: float, *, objective: str, floor: float,
                 rng: np.random.Generator, first_visit_within: float = 1.0, death: np.ndarray | None = None):
        self.rates = rates
        self.dead = dead
        #: when each source dies (+inf: never)
        self.death = np.full(rates.size, np.inf) if death is None else death
        self.capacity = capacity
        self.objective = objective
        self.floor = floor
        self.rng = rng
        #: days within which a source listed after the start gets its first visit (at most its period)
        self.first_visit_within = first_visit_within
        self.known = np.zeros(rates.size, dtype=bool)
        self.freq = np.zeros(rates.size)
        self.next_visit = np.full(rates.size, np.inf)
        self.allocation: Allocation | None = None
        self.solved_for = 0
        self.solves = 0

    def listing(self, t: float, sources: np.ndarray, last_change: np.ndarray) -> None:
        gone = np.flatnonzero(self.known & (self.death <= t))
        self.known[gone] = False
        self.freq[gone] = 0.0
        self.next_visit[gone] = np.inf
        new = sources[~self.known[sources] & ~self.dead[sources] & (self.death[sources] > t)]
        if new.size == 0 and gone.size == 0:
            return
        started = self.known.any() or self.solves > 0
        self.known[new] = True
        members = np.flatnonzero(self.known)
        if members.size == 0:
            return
        if self.allocation is None or abs(members.size - self.solved_for) >= self.solved_for * RESOLVE_GROWTH:
            self.allocation = allocate(self.rates[members], self.capacity, objective=self.objective, floor=self.floor)
            self.freq[members] = self.allocation.freqs
            self.solved_for = members.size
            self.solves += 1
            # a source the last solution left alone (it changed too fast to be worth it) and this one does not
            new = members[np.isinf(self.next_visit[members]) & (self.freq[members] > 0)]
        else:
            self.freq[new] = self.allocation.freqs_for(self.rates[new])
        # the first visit comes within a sweep of the capacity (every source it knows once), or the
        # period when that is sooner: the archive starts empty and a source waiting a whole slow period
        # for its first visit would count as stale all that time
        sweep = max(self.known.sum() / self.capacity, self.first_visit_within) if self.solves == 1 and not started \
            else self.first_visit_within
        with np.errstate(divide="ignore"):
            self.next_visit[new] = t + self.rng.random(new.size) * np.minimum(1 / self.freq[new], sweep)

    def pick(self, t: float, until: float, quota: int) -> tuple[np.ndarray, np.ndarray]:
        found_sources, found_starts = [], []
        due = np.flatnonzero(self.next_visit < until)
        while due.size:
            found_sources.append(due)
            found_starts.append(np.maximum(self.next_visit[due], t))
            with np.errstate(divide="ignore"):
                self.next_visit[due] += 1 / self.freq[due]
            due = due[self.next_visit[due] < until]
        if not found_sources:
            return np.empty(0, dtype=np.int64), np.empty(0)
        return np.concatenate(found_sources), np.concatenate(found_starts)

    def feed(self, t: float, visits: Mapping[str, np.ndarray]) -> None:
        pass

    def notes(self) -> dict[str, Any]:
        members = self.known
        return {"multiplier": self.allocation.multiplier if self.allocation else None, "solves": self.solves,
                "sources_never_visited_by_design": int((members & (self.freq == 0)).sum()),
                "max_visits_per_day": float(self.freq.max()) if self.freq.size else 0.0}

    def close(self) -> None:
        pass
