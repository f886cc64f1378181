"""The history pass: every minute, a sample per series for the console's charts (``domain.history``).

One pass at ``now``:

1. counts the origin metrics (``update_origin_metrics``: a read of the metric cells, whatever the
   number of origins; the dashboard's snapshot is refreshed with it) and takes each visit type's
   gauges; each schedule's lateness (its start times, as every interface assesses them) and each task
   type's (its oldest ready task: one index walk each);
2. counts the runs ended in the current minute, and recounts those of every minute of the current
   five minutes and of the previous ones (among the newest runs by id: ``ended_runs``), so that a run
   that ended after the previous pass is counted in its own minute, even when passes come only every
   five minutes; a minute's sample is rewritten only when its counts changed, and keeps its gauges;
3. rolls the minutes up to five minutes, those up to the hour, and the hours up to six hours, over
   the intervals of the minutes it wrote (``domain.history.rollup``);
4. prunes what is older than each resolution's span.

Several passes at once (two API servers) write the same samples: each replaces the one of its series,
resolution and start. A pass missed (everything stopped) leaves a gap in the charts, not a wrong figure.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..domain.clock import Clock
from ..domain.history import (
    COUNTS,
    RESOLUTIONS,
    SAMPLE_EVERY,
    HistorySample,
    interval_start,
    lateness,
    rollup,
    run_counts,
    series_name,
    visit_type_figures,
)
from ..domain.schedules import ScheduleTiming, assess
from ..store import Store

log = logging.getLogger(__name__)

#: schedules read per page while taking their lateness
_PAGE = 1000


@dataclass(frozen=True, slots=True)
class HistoryOutcome:
    at: datetime
    series: int
    written: int
    pruned: int


def _zero_counts(series: str) -> dict[str, float]:
    """Schedules and task types count their runs (0 when none ended); visit types have no runs."""
    return {} if series.startswith("visit_type:") else {name: 0.0 for name in COUNTS}


class HistoryPass:
    """One pass of the history (module docstring), over a store, at the clock's time."""

    def __init__(self, store: Store, clock: Clock, *, timing: ScheduleTiming = ScheduleTiming()):
        self.store, self.clock, self.timing = store, clock, timing

    def run_once(self) -> HistoryOutcome:
        now = self.clock.now()
        step, fine = SAMPLE_EVERY, RESOLUTIONS[0].seconds
        current = interval_start(now, step)
        recount = RESOLUTIONS[1].step
        since = interval_start(current, recount) - recount
        gauges = self._gauges(now)
        runs = self.store.ended_runs(since)
        counts_now = run_counts(runs, current, current + step)
        samples = [HistorySample(series, fine, current, {**figures, **_zero_counts(series), **counts_now.get(series, {})})
                   for series, figures in gauges.items()]
        samples += [HistorySample(series, fine, current, {**_zero_counts(series), **figures})
                    for series, figures in counts_now.items() if series not in gauges]
        kept: dict[datetime, dict[str, Mapping[str, float]]] = {}
        for sample in self.store.read_history(fine, since, current):
            kept.setdefault(sample.at, {})[sample.series] = sample.figures
        minute = since
        while minute < current:
            counts, there = run_counts(runs, minute, minute + step), kept.get(minute, {})
            for series in sorted(set(there) | set(counts)):
                if series.startswith("visit_type:"):
                    continue
                figures = {**there.get(series, {}), **_zero_counts(series), **counts.get(series, {})}
                if figures != there.get(series):
                    samples.append(HistorySample(series, fine, minute, figures))
            minute += step
        written = self.store.record_history(samples)
        written += self._roll_up({sample.at for sample in samples})
        pruned = self.store.prune_history(now)
        return HistoryOutcome(now, len(gauges) + len(set(counts_now) - set(gauges)), written, pruned)

    def _gauges(self, now: datetime) -> dict[str, dict[str, float]]:
        gauges = visit_type_figures(self.store.update_origin_metrics(now))
        after = ""
        while True:
            page = self.store.list_schedules(after=after, limit=_PAGE)
            for schedule in page:
                times = assess(schedule, now, self.timing).start_times
                late = lateness(times.should_start_by if times is not None and not schedule.running else None, now)
                gauges[series_name("schedule", schedule.name)] = {"late": late}
            if len(page) < _PAGE:
                break
            after = page[-1].name
        for task_type in self.store.list_task_types():
            oldest = self.store.peek_ready_tasks(task_type.type, now, 1)
            gauges[series_name("task_type", task_type.type)] = {
                "late": lateness(oldest[0].next_run if oldest else None, now)}
        return gauges

    def _roll_up(self, moments: Iterable[datetime]) -> int:
        """Each coarser resolution's samples over the intervals of ``moments``, from the next finer one."""
        written = 0
        for fine, coarse in zip(RESOLUTIONS, RESOLUTIONS[1:], strict=False):
            starts = {interval_start(moment, coarse.step) for moment in moments}
            samples = []
            for start in sorted(starts):
                by_series: dict[str, list[Mapping[str, float]]] = {}
                for sample in self.store.read_history(fine.seconds, start, start + coarse.step):
                    by_series.setdefault(sample.series, []).append(sample.figures)
                samples += [HistorySample(series, coarse.seconds, start, rollup(figures))
                            for series, figures in by_series.items()]
            written += self.store.record_history(samples)
        return written


def run_history(store: Store, clock: Clock, stop: threading.Event, *, every: timedelta = SAMPLE_EVERY,
                timing: ScheduleTiming = ScheduleTiming()) -> None:
    """A pass every ``every`` until ``stop``; a failed pass is logged in one line and the next one tried."""
    history = HistoryPass(store, clock, timing=timing)
    while not stop.is_set():
        try:
            outcome = history.run_once()
            log.debug("history: %d series sampled, %d samples written, %d pruned", outcome.series, outcome.written,
                      outcome.pruned)
        except Exception as exc:  # the next pass may succeed: a store outage must not end the loop
            log.error("history pass failed: %s: %s", type(exc).__name__, exc)
        stop.wait(every.total_seconds())
