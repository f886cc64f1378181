"""What the archive holds of each source, and the figures measured over a window.

:class:`ArchiveTracker` follows one policy's archive: for each source the time of
its first change not yet archived (``first_unarchived``: infinite while the
archived copy is current; the birth for a source never archived), how many changes
are pending and the sum of their times. Changes and successful visits ("captures")
are applied in time order; a capture at time e archives the version the source
has at e. From these it integrates, **exactly** (no sampling), over the
measurement window [start, end):

- freshness: the share of live source-days whose archived copy was current;
- age: the time since the first unarchived change (0 when fresh), averaged over
  live source-days;
- per-change capture latency (capture time − change time, for changes captured
  in the window);
- per source, the largest age reached in the window (its worst staleness) and its
  mean age;
- visits by outcome (ended in the window), never-archived sources, and the
  first-visit latency of sources born in the window.

Dead sources are not in the population (nothing to keep fresh); visits to them
are counted. A source may also leave the population at its ``death`` (a recorded
history's origin after its last change): its stale periods end there. Instantaneous freshness is also sampled at each step's end, for the
plot over time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: outcome codes of a visit
SUCCESS, FAILED, NOT_FOUND = 0, 1, 2


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _quantiles(values: np.ndarray, qs=(0.5, 0.9, 0.99)) -> dict[str, float | None]:
    if values.size == 0:
        return {f"p{round(q * 100)}": None for q in qs}
    return {f"p{round(q * 100)}": float(np.quantile(values, q)) for q in qs}


@dataclass
class WindowMetrics:
    """One policy's figures over the measurement window (times in days)."""

    freshness: float
    mean_age: float
    change_latency: float | None
    changes_captured: int
    staleness_p99: float
    staleness_max: float
    mean_age_per_source: dict[str, float | None]
    visits: int
    visits_per_day: float
    eventful: int
    uneventful: int
    failed: int
    not_found: int
    never_visited: int
    never_visited_born_before_window: int
    new_sources: int
    first_visit_latency: dict[str, float | None]
    new_sources_not_visited: int
    source_days: float
    #: per live source: mean age in the window (for the age distribution plot); not in JSON
    age_by_source: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))

    @property
    def wasted(self) -> int:
        """Visits that archived nothing new: uneventful ones and those that found nothing."""
        return self.uneventful + self.not_found

    def as_dict(self) -> dict[str, Any]:
        return {
            "freshness": self.freshness,
            "mean_age_days": self.mean_age,
            "change_latency_days": self.change_latency,
            "changes_captured": self.changes_captured,
            "staleness_p99_days": self.staleness_p99,
            "staleness_max_days": self.staleness_max,
            "mean_age_per_source_days": self.mean_age_per_source,
            "visits": self.visits,
            "visits_per_day": self.visits_per_day,
            "eventful": self.eventful,
            "uneventful": self.uneventful,
            "failed": self.failed,
            "not_found": self.not_found,
            "wasted": self.wasted,
            "wasted_share": _share(self.wasted, self.visits),
            "never_visited": self.never_visited,
            "never_visited_born_before_window": self.never_visited_born_before_window,
            "new_sources": self.new_sources,
            "first_visit_latency_days": self.first_visit_latency,
            "new_sources_not_visited": self.new_sources_not_visited,
            "source_days": self.source_days,
        }


class ArchiveTracker:
    def __init__(self, birth: np.ndarray, dead: np.ndarray, start: float, end: float, death: np.ndarray | None = None):
        if not end > start:
            raise ValueError("the window must end after it starts")
        self.birth = birth
        self.live = ~dead
        #: when each source leaves the population (+inf: never)
        self.death = np.full(birth.size, np.inf) if death is None else death
        self.start, self.end = float(start), float(end)
        size = birth.size
        self.first_unarchived = birth.astype(float).copy()
        self.pending = np.zeros(size, dtype=np.int64)
        self.pending_time_sum = np.zeros(size)
        #: changes applied so far: the source's version, from which snapshots are named
        self.version = np.zeros(size, dtype=np.int64)
        self.archived = np.zeros(size, dtype=bool)
        self.first_capture = np.full(size, np.nan)
        self.age_integral = np.zeros(size)
        self.max_age = np.zeros(size)
        self.stale_days = 0.0
        self.age_days = 0.0
        self.latency_sum = 0.0
        self.latency_count = 0
        self.outcomes = np.zeros(3, dtype=np.int64)
        self.eventful = 0
        self.samples_t: list[float] = []
        self.samples_fresh: list[float] = []

    # -- events --------------------------------------------------------------
    def apply_changes(self, sources: np.ndarray, times: np.ndarray) -> None:
        """Changes (sources may repeat, each source's in time order)."""
        if sources.size == 0:
            return
        np.add.at(self.pending, sources, 1)
        np.add.at(self.pending_time_sum, sources, times)
        np.add.at(self.version, sources, 1)
        np.minimum.at(self.first_unarchived, sources, times)

    def _stale_period(self, sources: np.ndarray, since: np.ndarray, until: np.ndarray) -> None:
        """Account the stale periods [since, until) of distinct ``sources`` over the window."""
        lo = np.maximum(since, self.start)
        hi = np.minimum(np.minimum(until, self.end), self.death[sources])
        inside = hi > lo
        if not inside.any():
            return
        src, a, lo, hi = sources[inside], since[inside], lo[inside], hi[inside]
        self.stale_days += float((hi - lo).sum())
        area = ((hi - a) ** 2 - (lo - a) ** 2) / 2
        self.age_days += float(area.sum())
        self.age_integral[src] += area
        self.max_age[src] = np.maximum(self.max_age[src], hi - a)

    def capture(self, sources: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Successful visits of distinct ``sources`` ending at ``times``: archive what they hold then.

        Returns, per visit, whether it was eventful (a new snapshot), the changes it
        found since the last archived snapshot (−1 on a first visit: there is none to
        count from) and the version archived.
        """
        since = self.first_unarchived[sources]
        stale = np.isfinite(since)
        self._stale_period(sources[stale], since[stale], times[stale])
        in_window = (times >= self.start) & (times < self.end)
        count = self.pending[sources]
        self.latency_sum += float((count * times - self.pending_time_sum[sources])[in_window].sum())
        self.latency_count += int(count[in_window].sum())
        before = self.archived[sources]
        eventful = ~before | (count > 0)
        changes = np.where(before, count, -1)
        first = sources[~before]
        self.first_capture[first] = times[~before]
        self.archived[sources] = True
        self.first_unarchived[sources] = np.inf
        self.pending[sources] = 0
        self.pending_time_sum[sources] = 0.0
        return eventful, changes, self.version[sources].copy()

    def count_outcomes(self, ends: np.ndarray, outcomes: np.ndarray, eventful: np.ndarray) -> None:
        """Visits that ended at ``ends`` with ``outcomes`` (eventful: successful and a new snapshot)."""
        inside = (ends >= self.start) & (ends < self.end)
        self.outcomes += np.bincount(outcomes[inside], minlength=3)
        self.eventful += int((eventful & inside & (outcomes == SUCCESS)).sum())

    def sample(self, t: float) -> float:
        """Freshness now (the share of live sources born by ``t`` whose archive is current); kept for plots."""
        born = self.live & (self.birth <= t) & (self.death > t)
        population = int(born.sum())
        fresh = 1.0 - (int((born & (self.first_unarchived <= t)).sum()) / population) if population else 1.0
        self.samples_t.append(t)
        self.samples_fresh.append(fresh)
        return fresh

    # -- the result ------------------------------------------------------------
    def finish(self) -> WindowMetrics:
        """Close the stale periods still open at the window's end and compute the figures. Call once."""
        open_ = np.flatnonzero(self.live & (self.first_unarchived < self.end))
        self._stale_period(open_, self.first_unarchived[open_], np.full(open_.size, self.end))
        exposure = np.where(self.live, np.clip(np.minimum(self.end, self.death) - np.maximum(self.birth, self.start),
                                               0, None), 0.0)
        source_days = float(exposure.sum())
        measured = exposure > 0
        age_by_source = self.age_integral[measured] / exposure[measured]
        worst = self.max_age[measured]
        born_in = (self.birth >= self.start) & (self.birth < self.end) & (self.birth > 0) & self.live
        first_latency = (self.first_capture - self.birth)[born_in & self.archived]
        existing = self.live & (self.birth < self.end) & (self.death > self.start)
        visits = int(self.outcomes.sum())
        return WindowMetrics(
            freshness=1.0 - self.stale_days / source_days if source_days else 1.0,
            mean_age=self.age_days / source_days if source_days else 0.0,
            change_latency=self.latency_sum / self.latency_count if self.latency_count else None,
            changes_captured=self.latency_count,
            staleness_p99=float(np.quantile(worst, 0.99)) if worst.size else 0.0,
            staleness_max=float(worst.max()) if worst.size else 0.0,
            mean_age_per_source=_quantiles(age_by_source),
            visits=visits,
            visits_per_day=visits / (self.end - self.start),
            eventful=self.eventful,
            uneventful=int(self.outcomes[SUCCESS]) - self.eventful,
            failed=int(self.outcomes[FAILED]),
            not_found=int(self.outcomes[NOT_FOUND]),
            never_visited=int((existing & ~self.archived).sum()),
            never_visited_born_before_window=int((existing & ~self.archived & (self.birth < self.start)).sum()),
            new_sources=int(born_in.sum()),
            first_visit_latency={"mean": float(first_latency.mean()) if first_latency.size else None,
                                 **_quantiles(first_latency, (0.5, 0.9))},
            new_sources_not_visited=int((born_in & ~self.archived).sum()),
            source_days=source_days,
            age_by_source=age_by_source,
        )
