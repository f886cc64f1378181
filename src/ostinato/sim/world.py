"""The simulated world: sources that are born, change as Poisson (or self-exciting) processes, or are dead.

Time is a float, days since the start of the simulation. All state is numpy
arrays indexed by source number (0 … size − 1): the first ``sources`` exist at
time 0, the others are born over the run (a Poisson process of
``new_sources_per_day``), in birth order. A share ``dead_share`` of the initial
sources is dead: it never changes and every visit finds nothing. A share
``share_last_update`` of the sources lives on forges whose lister reports
``last_update`` (the time of the newest change); the others' listers report none.

A bursty workload (``git_bursty``) makes each change excite more: source i's
change intensity is νᵢ + Σ n β e^{−β(t − tⱼ)} over its past changes tⱼ (a Hawkes
process with branching ratio n and kernel mean 1/β), with νᵢ = λᵢ(1 − n) so that
its mean rate stays λᵢ. Its next change is drawn exactly, not by thinning: the
sooner of a baseline one (exponential, rate νᵢ) and an excited one (the excess E
decays as E e^{−βs}, so none comes with probability e^{−E/β}, else at
s = −ln(1 + β ln U / E) / β for a uniform U).

Every random stream is seeded from the seed and a stream number, so two worlds
with the same configuration replay exactly the same births and changes, whatever
the policy visiting them does: policies are compared on the same history.

The engine reads a world through what :class:`World` has; a recorded history
replays through the same names (``trace_world.TraceWorld``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .workloads import WORKLOADS

#: the random streams of one seed
STREAM_RATES, STREAM_BIRTHS, STREAM_CHANGES, STREAM_DEAD, STREAM_FORGES = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class WorldConfig:
    workload: str
    sources: int
    seed: int
    #: how long the run lasts, days (births are drawn up to here)
    horizon: float
    new_sources_per_day: float = 0.0
    dead_share: float = 0.0
    share_last_update: float = 0.0


@dataclass(frozen=True)
class Changes:
    """The changes of one time step: source and time of each, a source's in time order."""

    sources: np.ndarray
    times: np.ndarray


class World:
    def __init__(self, config: WorldConfig):
        self.config = config
        workload = WORKLOADS[config.workload]
        births = np.random.default_rng([config.seed, STREAM_BIRTHS])
        new = births.poisson(config.new_sources_per_day * config.horizon) if config.new_sources_per_day > 0 else 0
        #: when each source appears (0 for the initial ones), sorted
        self.birth = np.concatenate([np.zeros(config.sources), np.sort(births.uniform(0, config.horizon, new))])
        self.size = self.birth.size
        dead = np.random.default_rng([config.seed, STREAM_DEAD]).random(config.sources) < config.dead_share
        #: dead sources: never change, every visit finds nothing
        self.dead = np.concatenate([dead, np.zeros(new, dtype=bool)])
        #: the true change rate, per day (0 for dead sources)
        self.rates = np.where(self.dead, 0.0, workload.rates(config.seed, self.size))
        #: the source's forge's lister reports last_update
        #: after this a source's visits find nothing (dead sources: from the start); listers stop listing it
        #: after ``listed_until`` (never here: a dead source stays listed, broken)
        self.death = np.where(self.dead, self.birth, np.inf)
        self.listed_until = np.full(self.size, np.inf)
        #: changes are Poisson processes (the closed forms of ``oracle`` hold)
        self.poisson = workload.burst is None
        self.reports_last_update = (
            np.random.default_rng([config.seed, STREAM_FORGES]).random(self.size) < config.share_last_update)
        #: changes so far (a snapshot is derived from it: same version, same snapshot)
        self.version = np.zeros(self.size, dtype=np.int64)
        #: time of the newest change, or the birth (what a forge's last_update says)
        self.last_change = self.birth.copy()
        self.counts_changes = workload.counts_changes
        self._rng = np.random.default_rng([config.seed, STREAM_CHANGES])
        if workload.burst is not None:
            branching, days = workload.burst
            self._branching, self._kick, self._decay = branching, branching / days, 1 / days
            #: the excited intensity just after each source's last change (changes a day)
            self._excess = np.zeros(self.size)
            self.next_change = self._next(np.arange(self.size), self.birth)
        else:
            with np.errstate(divide="ignore"):
                self.next_change = self.birth + self._rng.exponential(size=self.size) / self.rates

    def advance(self, t0: float, t1: float) -> Changes:
        """Every change in [t0, t1) (the world must have been advanced to t0)."""
        found_sources, found_times = [], []
        idx = np.flatnonzero(self.next_change < t1)
        while idx.size:
            when = self.next_change[idx]
            found_sources.append(idx)
            found_times.append(when)
            self.version[idx] += 1
            self.last_change[idx] = when
            if self.poisson:
                self.next_change[idx] = when + self._rng.exponential(size=idx.size) / self.rates[idx]
            else:
                self.next_change[idx] = self._next(idx, when)
            idx = idx[self.next_change[idx] < t1]
        if not found_sources:
            return Changes(np.empty(0, dtype=np.int64), np.empty(0))
        return Changes(np.concatenate(found_sources), np.concatenate(found_times))

    def _next(self, idx: np.ndarray, when: np.ndarray) -> np.ndarray:
        """The next change of the self-exciting sources ``idx``, whose last change (or birth) was at ``when``."""
        with np.errstate(divide="ignore", invalid="ignore"):
            base = self._rng.exponential(size=idx.size) / (self.rates[idx] * (1 - self._branching))
            excess = self._excess[idx]
            room = 1 + self._decay * np.log(self._rng.random(idx.size)) / excess
            excited = np.where(room > 0, -np.log(room) / self._decay, np.inf)
        wait = np.minimum(base, excited)
        # the excess just after that change: decayed over the wait, plus the change's own kick
        self._excess[idx] = np.where(np.isfinite(wait), excess * np.exp(-self._decay * wait) + self._kick, 0.0)
        return when + wait

    def born_by(self, t: float) -> int:
        """How many sources exist at ``t`` (they are numbered in birth order)."""
        return int(np.searchsorted(self.birth, t, side="right"))
