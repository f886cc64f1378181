"""A recorded history replayed as the simulator's world (``ostinato simulate --trace``).

The simulation's day 0 is the trace's time ``start``; the run lasts ``horizon``
days. Each origin of the trace is a source:

- it is **born** at its first recorded change (day 0 for an origin that existed
  before ``start``): its lister lists it from then on, and the archive, empty,
  holds nothing of it;
- it **changes** at each later recorded change;
- with ``deaths`` (the default), it **dies** at its last recorded change: it
  leaves the population, its lister stops listing it and visits find nothing;
  an origin with a single recorded change is born and gone at once, and is left
  out. Without ``deaths`` it stays, quiet, to the end;
- its forge reports ``last_update`` (its newest change before the listing) for a
  share ``share_last_update`` of the origins, drawn from the seed.

Origins born after the run, or gone before it, are left out. Sources are numbered
in birth order, as in :class:`~ostinato.sim.world.World`, whose names this class
has, so the engine runs either. ``rates`` (what the rate oracle knows) is each
origin's mean rate over the whole trace: its changes after the first, over the
time from its first change to its death (or to the trace's end).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..domain.errors import ValidationError
from .trace import Trace
from .workloads import RATE_MIN
from .world import STREAM_FORGES, Changes

DAY_SECONDS = 86_400.0


@dataclass(frozen=True)
class TracePopulation:
    """Which origins of a trace a run holds, and when each lives (days since ``start``)."""

    #: indices into the trace's origins, in birth order
    origins: np.ndarray
    #: first and last recorded change, days since ``start``; the number of changes
    first: np.ndarray
    last: np.ndarray
    count: np.ndarray
    #: born at the first change, clipped to day 0; gone at the last change (deaths) or never
    birth: np.ndarray
    death: np.ndarray

    @property
    def at_start(self) -> int:
        """Origins alive at day 0."""
        return int((self.birth <= 0).sum())


def trace_population(trace: Trace, start: float, horizon: float, deaths: bool) -> TracePopulation:
    """The origins of ``trace`` alive at some time of a run from ``start`` (seconds since the epoch)
    lasting ``horizon`` days; ValidationError when there are none."""
    first, last, count = trace.bounds()
    first, last = (first - start) / DAY_SECONDS, (last - start) / DAY_SECONDS
    death = last if deaths else np.full(first.size, np.inf)
    keep = (first < horizon) & (death > np.maximum(first, 0.0))
    if not keep.any():
        raise ValidationError("trace_start", "a start that leaves some origin of the trace alive during the run "
                              f"(the trace runs from {_iso(trace.start)} to {_iso(trace.end)})", _iso(start))
    index = np.flatnonzero(keep)
    birth = np.maximum(first[index], 0.0)
    order = np.argsort(birth, kind="stable")
    index = index[order]
    return TracePopulation(index, first[index], last[index], count[index], birth[order], death[index])


def _iso(seconds: float) -> str:
    from .trace import iso_time

    return iso_time(seconds)


class TraceWorld:
    """The world of a recorded history (see the module's text)."""

    def __init__(self, trace: Trace, *, start: float, horizon: float, deaths: bool = True,
                 share_last_update: float = 0.0, seed: int = 0):
        population = trace_population(trace, start, horizon, deaths)
        self.trace = trace
        self.population = population
        self.size = population.origins.size
        self.birth = population.birth
        self.death = population.death
        self.listed_until = population.death
        self.dead = np.zeros(self.size, dtype=bool)
        self.poisson = False
        self.counts_changes = True
        trace_end = (trace.end - start) / DAY_SECONDS
        span = np.where(np.isfinite(population.death), population.last, trace_end) - population.first
        with np.errstate(divide="ignore", invalid="ignore"):
            rates = np.where(span > 0, (population.count - 1) / span, 0.0)
        #: each origin's mean rate over the trace (changes a day), the rate oracle's knowledge
        self.rates = np.maximum(rates, RATE_MIN)
        self.reports_last_update = np.random.default_rng([seed, STREAM_FORGES]).random(self.size) < share_last_update
        number = np.full(len(trace.origins), -1)
        number[population.origins] = np.arange(self.size)
        source = number[trace.source]
        days = (trace.time - start) / DAY_SECONDS
        kept = source >= 0
        source, days = source[kept], days[kept]
        # the first change is the birth, the last one (with deaths) the death: neither is a change of the run
        change = (days > population.first[source]) & (days < population.death[source])
        before = change & (days < 0)
        #: time of the newest change (the first one, or the birth), what a forge's last_update says
        self.last_change = np.where(population.first < 0, population.first, population.birth)
        np.maximum.at(self.last_change, source[before], days[before])
        self._all_source, self._all_time = source, days
        run = change & (days >= 0) & (days < horizon)
        order = np.argsort(days[run], kind="stable")
        self._source, self._time = source[run][order], days[run][order]
        self._next = 0
        self.version = np.zeros(self.size, dtype=np.int64)

    def advance(self, t0: float, t1: float) -> Changes:
        """Every recorded change in [t0, t1) (the world must have been advanced to t0)."""
        end = int(np.searchsorted(self._time, t1, side="left"))
        sources, times = self._source[self._next:end], self._time[self._next:end]
        self._next = end
        np.add.at(self.version, sources, 1)
        np.maximum.at(self.last_change, sources, times)
        return Changes(sources, times)

    def recorded(self, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
        """Every recorded change in [t0, t1), births and deaths included (source, day)."""
        inside = (self._all_time >= t0) & (self._all_time < t1)
        return self._all_source[inside], self._all_time[inside]

    def born_by(self, t: float) -> int:
        """How many sources exist at ``t`` (they are numbered in birth order)."""
        return int(np.searchsorted(self.birth, t, side="right"))
