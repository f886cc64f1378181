"""The simulated world: sources that are born, change as Poisson processes, or are dead.

Time is a float, days since the start of the simulation. All state is numpy
arrays indexed by source number (0 … size − 1): the first ``sources`` exist at
time 0, the others are born over the run (a Poisson process of
``new_sources_per_day``), in birth order. A share ``dead_share`` of the initial
sources is dead: it never changes and every visit finds nothing. A share
``share_last_update`` of the sources lives on forges whose lister reports
``last_update`` (the time of the newest change); the others' listers report none.

Every random stream is seeded from the seed and a stream number, so two worlds
with the same configuration replay exactly the same births and changes, whatever
the policy visiting them does: policies are compared on the same history.
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
        self.reports_last_update = (
            np.random.default_rng([config.seed, STREAM_FORGES]).random(self.size) < config.share_last_update)
        self._rng = np.random.default_rng([config.seed, STREAM_CHANGES])
        with np.errstate(divide="ignore"):
            self.next_change = self.birth + self._rng.exponential(size=self.size) / self.rates
        #: changes so far (a snapshot is derived from it: same version, same snapshot)
        self.version = np.zeros(self.size, dtype=np.int64)
        #: time of the newest change, or the birth (what a forge's last_update says)
        self.last_change = self.birth.copy()
        self.counts_changes = workload.counts_changes

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
            self.next_change[idx] = when + self._rng.exponential(size=idx.size) / self.rates[idx]
            idx = idx[self.next_change[idx] < t1]
        if not found_sources:
            return Changes(np.empty(0, dtype=np.int64), np.empty(0))
        return Changes(np.concatenate(found_sources), np.concatenate(found_times))

    def born_by(self, t: float) -> int:
        """How many sources exist at ``t`` (they are numbered in birth order)."""
        return int(np.searchsorted(self.birth, t, side="right"))
