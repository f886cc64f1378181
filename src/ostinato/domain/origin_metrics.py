"""Metrics per (lister, visit type): how many origins are known, enabled, never
visited, visited but never successfully (every visit failed or found nothing),
waiting with changes not yet archived, and how long they have waited.

The lag of an origin with pending changes is *at least* ``now - last_update``
(its newest change is not archived; older ones may not be either). It is kept
as a histogram over :data:`LAG_BOUNDS`, the stores count it in SQL.

Activity, as of the same pass: visits handed out and not yet reported (in
flight), and visits, eventful and uneventful, within :data:`ACTIVITY_WINDOW`
before it. An origin's activity counts once, for the listing its loader gets
(``origin_visit_stats.lister_id``), so that it adds up over listers; the other
counts count an origin several listers list once for each.

The stores keep these counts up to date as listings and statuses arrive (each
write adds its changes to per-lister cells: see ``store/origins``), so a pass
reads a few cells whatever the number of origins. Cells have a resolution, and
the counts are exact at it (:class:`MetricClock`): the lag is counted in whole
hours below a week and in whole days beyond (:func:`lag_of`), the window of
activity ends at the pass's minute, and "in flight" is exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

_HOUR = 3600.0
_DAY = 24 * _HOUR

#: how far back a metrics pass counts visits (visits per hour, eventful ratio)
ACTIVITY_WINDOW = timedelta(hours=1)

#: upper bounds of the lag histogram's buckets, in seconds; a last bucket holds the rest
LAG_BOUNDS: tuple[float, ...] = (
    _HOUR, 6 * _HOUR, _DAY, 3 * _DAY, 7 * _DAY, 30 * _DAY, 90 * _DAY, 180 * _DAY, 365 * _DAY, 730 * _DAY,
)


#: lags from this on are counted in whole days, shorter ones in whole hours
DAY_LAGS_FROM = timedelta(days=7)
#: the bounds of the lags counted in hours, and of those counted in days
HOUR_BOUNDS = tuple(b for b in LAG_BOUNDS if b < DAY_LAGS_FROM.total_seconds())
DAY_BOUNDS = tuple(b for b in LAG_BOUNDS if b >= DAY_LAGS_FROM.total_seconds())

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ceil(value: datetime, unit: timedelta) -> int:
    """``value`` in whole ``unit``s since 1970, rounded up."""
    return -((_EPOCH - value) // unit)


def lag_of(last_update: datetime, now: datetime) -> float:
    """The lag the metrics count for an origin whose newest change is at ``last_update``, at ``now``, in
    seconds: the day boundaries crossed since (in days) from :data:`DAY_LAGS_FROM` on, below it the hour
    boundaries crossed since (in hours). The stores count it in SQL; this is its definition."""
    days = _ceil(now, timedelta(days=1)) - _ceil(last_update, timedelta(days=1))
    if days >= DAY_LAGS_FROM / timedelta(days=1):
        return days * _DAY
    return (_ceil(now, timedelta(hours=1)) - _ceil(last_update, timedelta(hours=1))) * _HOUR


@dataclass(frozen=True, slots=True)
class MetricClock:
    """The times of one metrics pass at ``now``, and the cells they fall on (whole units since 1970)."""

    now: datetime

    @property
    def until(self) -> datetime:
        """The end of the activity window: ``now`` to the minute."""
        return _EPOCH + (self.now - _EPOCH) // timedelta(minutes=1) * timedelta(minutes=1)

    @property
    def since(self) -> datetime:
        """The start of the activity window (excluded). A writer at ``now`` passes it to the store as the
        horizon before which activity can count in no later pass (and after which a ``last_update`` a
        :data:`DAY_LAGS_FROM` earlier can only have a lag in days)."""
        return self.until - ACTIVITY_WINDOW

    @property
    def lag_hour(self) -> int:
        """The hour at or after ``now``, in hours since 1970: what lags in hours run to."""
        return _ceil(self.now, timedelta(hours=1))

    @property
    def lag_day(self) -> int:
        """The day at or after ``now``, in days since 1970: what lags in days run to."""
        return _ceil(self.now, timedelta(days=1))

    def params(self) -> dict[str, object]:
        """These times as the stores' metric queries take them."""
        return {"now_us": (self.now - _EPOCH) // timedelta(microseconds=1),
                "since_minute": (self.since - _EPOCH) // timedelta(minutes=1),
                "until_minute": (self.until - _EPOCH) // timedelta(minutes=1),
                "lag_hour": self.lag_hour, "lag_day": self.lag_day,
                "lag_hour_at": _EPOCH + timedelta(hours=self.lag_hour),
                "lag_day_at": _EPOCH + timedelta(days=self.lag_day),
                "day_lags_from": DAY_LAGS_FROM // timedelta(days=1)}


def bucket_label(index: int) -> str:
    """``"<1h"``, ``"<6h"``, … ``">=730d"`` for bucket ``index`` (0 = below the first bound)."""
    if index >= len(LAG_BOUNDS):
        return f">={_short(LAG_BOUNDS[-1])}"
    return f"<{_short(LAG_BOUNDS[index])}"


def in_bucket_order(histogram: Mapping[str, int]) -> dict[str, int]:
    """A stored histogram with its buckets in order again (a JSON store may reorder keys)."""
    rank = {bucket_label(i): i for i in range(len(LAG_BOUNDS) + 1)}
    return dict(sorted(histogram.items(), key=lambda item: rank.get(item[0], len(rank))))


def _short(seconds: float) -> str:
    return f"{int(seconds // _DAY)}d" if seconds >= _DAY else f"{int(seconds // _HOUR)}h"


def lag_quantile(histogram: Mapping[str, int], q: float, lag_max: float | None = None) -> float | None:
    """The ``q`` quantile of a lag histogram (bucket label → origins), interpolated linearly
    within its bucket as Prometheus's ``histogram_quantile`` does; the open last bucket ends at
    ``lag_max`` when known (else at its lower bound). None for an empty histogram."""
    counts = [int(histogram.get(bucket_label(i), 0)) for i in range(len(LAG_BOUNDS) + 1)]
    total = sum(counts)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for index, count in enumerate(counts):
        if count and seen + count >= rank:
            lower = 0.0 if index == 0 else LAG_BOUNDS[index - 1]
            if index < len(LAG_BOUNDS):
                upper = LAG_BOUNDS[index]
            else:
                upper = max(lower, lag_max) if lag_max is not None else lower
            if lag_max is not None:
                upper = min(upper, max(lower, lag_max))
            return lower + (upper - lower) * (rank - seen) / count
        seen += count
    return lag_max


@dataclass(frozen=True, slots=True)
class OriginMetrics:
    lister_id: int
    visit_type: str
    computed_at: datetime
    origins_known: int
    origins_enabled: int
    #: enabled origins without any final visit status
    origins_never_visited: int
    origins_with_pending_changes: int
    #: bucket label (see :func:`bucket_label`) → origins, in bucket order, empty buckets left out
    lag_histogram: Mapping[str, int] = field(default_factory=dict)
    lag_max: timedelta | None = None
    lister_name: str | None = None
    lister_instance_name: str | None = None
    #: visits grabbed and not yet reported, their in-flight timeout not over
    visits_in_flight: int = 0
    #: visits (any outcome), eventful ones and uneventful ones within ACTIVITY_WINDOW before computed_at
    visits_last_hour: int = 0
    eventful_visits_last_hour: int = 0
    uneventful_visits_last_hour: int = 0
    #: enabled origins visited, never successfully: every final status so far failed or not found
    origins_never_successful: int = 0

    @property
    def eventful_ratio(self) -> float | None:
        """Eventful among the successful visits of the last hour; None without any."""
        successful = self.eventful_visits_last_hour + self.uneventful_visits_last_hour
        return self.eventful_visits_last_hour / successful if successful else None


def fold_metrics(now: datetime, rows: Sequence[Mapping]) -> list[OriginMetrics]:
    """Add up the stores' aggregate rows into one record per (lister, visit type).

    Each row has lister_id, visit_type, bucket (the lag bucket of origins with
    pending changes, as :func:`bucket_label`, or None for the others), origins,
    enabled, never_visited and lag_max (seconds, or None), and may have
    never_successful, in_flight, visits, eventful and uneventful (0 when absent);
    a (lister, visit type) comes in several rows.
    """
    totals: dict[tuple[int, str], dict] = {}
    activity = ("never_successful", "in_flight", "visits", "eventful", "uneventful")
    for row in rows:
        key = (row["lister_id"], row["visit_type"])
        total = totals.setdefault(key, {"known": 0, "enabled": 0, "never": 0, "pending": 0, "lag_max": None,
                                        "buckets": {}, **{name: 0 for name in activity}})
        total["known"] += int(row["origins"])
        total["enabled"] += int(row["enabled"])
        total["never"] += int(row["never_visited"])
        for name in activity:
            total[name] += int(row.get(name) or 0)
        if row["bucket"] is not None:
            total["pending"] += int(row["origins"])
            bucket = int(row["bucket"])
            total["buckets"][bucket] = total["buckets"].get(bucket, 0) + int(row["origins"])
            if row["lag_max"] is not None:
                total["lag_max"] = max(total["lag_max"] or 0.0, float(row["lag_max"]))
    return [
        OriginMetrics(
            lister_id=key[0], visit_type=key[1], computed_at=now, origins_known=total["known"],
            origins_enabled=total["enabled"], origins_never_visited=total["never"],
            origins_with_pending_changes=total["pending"],
            lag_histogram={bucket_label(i): total["buckets"][i] for i in sorted(total["buckets"])},
            lag_max=timedelta(seconds=total["lag_max"]) if total["lag_max"] is not None else None,
            visits_in_flight=total["in_flight"], visits_last_hour=total["visits"],
            eventful_visits_last_hour=total["eventful"], uneventful_visits_last_hour=total["uneventful"],
            origins_never_successful=total["never_successful"],
        )
        for key, total in sorted(totals.items())
    ]


@dataclass(frozen=True, slots=True)
class LagBar:
    label: str
    count: int


@dataclass(slots=True)
class VisitTypeTotals:
    """One visit type's origin metrics summed over its listers (the dashboard's row, the history's gauges)."""

    visit_type: str
    computed_at: datetime
    origins_known: int = 0
    origins_enabled: int = 0
    never_visited: int = 0
    #: visited, never successfully (every visit failed or found nothing)
    never_successful: int = 0
    pending: int = 0
    #: queue depth: visits handed out and not yet reported
    in_flight: int = 0
    visits_last_hour: int = 0
    eventful: int = 0
    uneventful: int = 0
    histogram: dict[str, int] = field(default_factory=dict)
    lag_max: timedelta | None = None

    @property
    def eventful_ratio(self) -> float | None:
        successful = self.eventful + self.uneventful
        return self.eventful / successful if successful else None

    @property
    def bars(self) -> list[LagBar]:
        """Every bucket of the lag histogram in order, empty ones too."""
        return [LagBar(bucket_label(i), int(self.histogram.get(bucket_label(i), 0))) for i in range(len(LAG_BOUNDS) + 1)]

    def lag_quantile(self, q: float) -> timedelta | None:
        """The ``q`` quantile of the lag of its origins with pending changes (:func:`lag_quantile`)."""
        value = lag_quantile(self.histogram, q, self.lag_max.total_seconds() if self.lag_max is not None else None)
        return None if value is None else timedelta(seconds=value)

    def add(self, m: OriginMetrics) -> None:
        """Count one lister's metrics of this visit type in."""
        self.computed_at = min(self.computed_at, m.computed_at)
        self.origins_known += m.origins_known
        self.origins_enabled += m.origins_enabled
        self.never_visited += m.origins_never_visited
        self.never_successful += m.origins_never_successful
        self.pending += m.origins_with_pending_changes
        self.in_flight += m.visits_in_flight
        self.visits_last_hour += m.visits_last_hour
        self.eventful += m.eventful_visits_last_hour
        self.uneventful += m.uneventful_visits_last_hour
        for label, count in m.lag_histogram.items():
            self.histogram[label] = self.histogram.get(label, 0) + int(count)
        if m.lag_max is not None:
            self.lag_max = m.lag_max if self.lag_max is None else max(self.lag_max, m.lag_max)


def totals_by_visit_type(metrics: Iterable[OriginMetrics]) -> list[VisitTypeTotals]:
    """The origin metrics summed over listers, one :class:`VisitTypeTotals` per visit type, by name."""
    totals: dict[str, VisitTypeTotals] = {}
    for m in metrics:
        totals.setdefault(m.visit_type, VisitTypeTotals(m.visit_type, m.computed_at)).add(m)
    return [totals[name] for name in sorted(totals)]
