"""The console's history: samples of what the dashboard shows, per series, downsampled and bounded.

A **series** is one visit type (``visit_type:git``), one schedule (``schedule:bills``) or one task
type (``task_type:load-git``). The history pass (``services.history``) writes, every
:data:`SAMPLE_EVERY` (a minute), one sample per series for the interval it falls in, and rolls the
samples up to five minutes, hours and six hours: each :class:`Resolution` is kept for a bounded span,
so a series never holds more than :data:`ROWS_PER_SERIES` samples, whatever the number of origins or
runs. Each :class:`Window` the console shows (``1h``, ``6h``, ``24h``, ``7d``, ``30d``) reads one
resolution, fine enough to draw dozens of points across it and coarse enough to stay below a few
hundred.

A sample's figures, by name (:data:`FIELDS`), each with how a rollup merges them:

- *gauges*, as of the pass: a visit type's ``fresh`` share (enabled origins without pending
  changes), ``lag_p50`` and ``lag_p90`` (seconds), ``in_flight`` (its queue depth: visits handed
  out, not yet reported), ``visits_per_hour`` and ``eventful_share`` (of the hour before the pass);
  a rollup takes their mean over the samples it covers;
- ``late``: how far past its latest start a schedule is, or a task type's oldest ready task
  (seconds, 0 when on time); a rollup keeps the maximum;
- *counts over the interval*: ``runs`` ended, ``failures`` among them, ``duration_sum`` and
  ``duration_max`` (seconds); a rollup sums them (the maximum of ``duration_max``).

Pure rules: no store, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .errors import ValidationError
from .origin_metrics import OriginMetrics, totals_by_visit_type


@dataclass(frozen=True, slots=True)
class Resolution:
    """One step of the history: a sample per ``step``, kept for ``span``."""

    step: timedelta
    span: timedelta

    @property
    def seconds(self) -> int:
        return int(self.step.total_seconds())

    @property
    def rows(self) -> int:
        return int(self.span / self.step)


#: every minute for an hour, every five minutes for a day, every hour for a week, every six hours for a month
RESOLUTIONS: tuple[Resolution, ...] = (
    Resolution(timedelta(minutes=1), timedelta(hours=1)),
    Resolution(timedelta(minutes=5), timedelta(days=1)),
    Resolution(timedelta(hours=1), timedelta(days=7)),
    Resolution(timedelta(hours=6), timedelta(days=30)),
)


@dataclass(frozen=True, slots=True)
class Window:
    """A view of the history: the last ``span``, read at ``resolution``."""

    name: str
    span: timedelta
    resolution: Resolution

    @property
    def step(self) -> timedelta:
        return self.resolution.step

    @property
    def seconds(self) -> int:
        return self.resolution.seconds

    @property
    def points(self) -> int:
        """The most samples a series has in it."""
        return int(self.span / self.step)


#: the last hour by the minute (60 points), six hours and a day by five minutes (72 and 288), a week by
#: the hour (168), a month by six hours (120)
WINDOWS: dict[str, Window] = {w.name: w for w in (
    Window("1h", timedelta(hours=1), RESOLUTIONS[0]),
    Window("6h", timedelta(hours=6), RESOLUTIONS[1]),
    Window("24h", timedelta(days=1), RESOLUTIONS[1]),
    Window("7d", timedelta(days=7), RESOLUTIONS[2]),
    Window("30d", timedelta(days=30), RESOLUTIONS[3]),
)}
SAMPLE_EVERY = RESOLUTIONS[0].step
#: the most samples one series keeps (60 + 288 + 168 + 120)
ROWS_PER_SERIES = sum(r.rows for r in RESOLUTIONS)

MEAN, MAX, SUM = "mean", "max", "sum"
#: each figure and how a rollup merges it (module docstring)
FIELDS: dict[str, str] = {
    "fresh": MEAN, "lag_p50": MEAN, "lag_p90": MEAN, "in_flight": MEAN, "visits_per_hour": MEAN,
    "eventful_share": MEAN, "late": MAX, "runs": SUM, "failures": SUM, "duration_sum": SUM, "duration_max": MAX,
}
#: the counts over a sample's interval (recounted when the interval is over: see services.history)
COUNTS = ("runs", "failures", "duration_sum", "duration_max")
SERIES_KINDS = ("visit_type", "schedule", "task_type")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class HistorySample:
    series: str
    resolution: int
    #: the start of its interval
    at: datetime
    figures: Mapping[str, float]


def series_name(kind: str, name: str) -> str:
    """``kind:name``; ValidationError for a kind not in :data:`SERIES_KINDS`."""
    if kind not in SERIES_KINDS:
        raise ValidationError("series", f"one of {', '.join(SERIES_KINDS)}", kind)
    return f"{kind}:{name}"


def interval_start(at: datetime, step: timedelta) -> datetime:
    """The start of the interval of ``step`` (counted from 1970, UTC) that ``at`` falls in."""
    return _EPOCH + (at - _EPOCH) // step * step


def window(name: str) -> Window:
    """The view of that name (one of :data:`WINDOWS`); ValidationError naming ``window`` otherwise."""
    try:
        return WINDOWS[name]
    except KeyError:
        raise ValidationError("window", f"one of {', '.join(WINDOWS)}", name) from None


def rollup(samples: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The samples of one series merged into one, figure by figure (:data:`FIELDS`); a figure none of
    them has is left out."""
    merged: dict[str, float] = {}
    for name, rule in FIELDS.items():
        values = [s[name] for s in samples if s.get(name) is not None]
        if not values:
            continue
        merged[name] = sum(values) / len(values) if rule == MEAN else max(values) if rule == MAX else sum(values)
    return merged


def visit_type_figures(metrics: Iterable[OriginMetrics]) -> dict[str, dict[str, float]]:
    """The gauges of each visit type (its series name → figures), its listers' metrics summed."""
    figures = {}
    for t in totals_by_visit_type(metrics):
        p50, p90 = t.lag_quantile(0.5), t.lag_quantile(0.9)
        found = {"fresh": 1 - t.pending / t.origins_enabled if t.origins_enabled else None,
                 "lag_p50": None if p50 is None else p50.total_seconds(),
                 "lag_p90": None if p90 is None else p90.total_seconds(),
                 "in_flight": float(t.in_flight), "visits_per_hour": float(t.visits_last_hour),
                 "eventful_share": t.eventful_ratio}
        figures[series_name("visit_type", t.visit_type)] = {k: v for k, v in found.items() if v is not None}
    return figures


@dataclass(frozen=True, slots=True)
class EndedRun:
    """A run that ended: its series, whether it failed, and its start and end."""

    series: str
    failed: bool
    started: datetime | None
    ended: datetime


def run_counts(runs: Iterable[EndedRun], start: datetime, end: datetime) -> dict[str, dict[str, float]]:
    """The counts of the runs ended in ``[start, end)``, per series: runs, failures, durations."""
    counts: dict[str, dict[str, float]] = {}
    for run in runs:
        if not start <= run.ended < end:
            continue
        c = counts.setdefault(run.series, {"runs": 0, "failures": 0, "duration_sum": 0.0, "duration_max": 0.0})
        c["runs"] += 1
        c["failures"] += run.failed
        if run.started is not None:
            took = max(0.0, (run.ended - run.started).total_seconds())
            c["duration_sum"] += took
            c["duration_max"] = max(c["duration_max"], took)
    return counts


def lateness(should_start_by: datetime | None, now: datetime) -> float:
    """How far past ``should_start_by`` ``now`` is, in seconds (0 when not yet, or unknown)."""
    if should_start_by is None:
        return 0.0
    return max(0.0, (now - should_start_by).total_seconds())


def mean_duration(figures: Mapping[str, float]) -> float | None:
    """The mean duration of a sample's runs, in seconds (None without runs)."""
    runs = figures.get("runs") or 0
    return figures.get("duration_sum", 0.0) / runs if runs else None


def checked_figures(figures: Mapping[str, object], series: str) -> dict[str, float]:
    """Figures as stored: known names, finite numbers (ValidationError naming the figure otherwise)."""
    out: dict[str, float] = {}
    for name, value in figures.items():
        if name not in FIELDS:
            raise ValidationError(f"{series}.{name}", f"one of the figures {', '.join(FIELDS)}", name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValidationError(f"{series}.{name}", "a finite number", value)
        out[name] = float(value)
    return out
