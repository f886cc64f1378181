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

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Mapping

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

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


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


def fold_metrics(now: datetime, rows: list[Mapping]) -> list[OriginMetrics]:
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
