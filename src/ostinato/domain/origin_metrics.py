"""Metrics per (lister, visit type): how many origins are known, enabled, never
visited, waiting with changes not yet archived, and how long they have waited.

The lag of an origin with pending changes is *at least* ``now - last_update``
(its newest change is not archived; older ones may not be either). It is kept
as a histogram over :data:`LAG_BOUNDS`, the stores count it in SQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Mapping

_HOUR = 3600.0
_DAY = 24 * _HOUR

#: upper bounds of the lag histogram's buckets, in seconds; a last bucket holds the rest
LAG_BOUNDS: tuple[float, ...] = (
    _HOUR, 6 * _HOUR, _DAY, 3 * _DAY, 7 * _DAY, 30 * _DAY, 90 * _DAY, 180 * _DAY, 365 * _DAY, 730 * _DAY,
)


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
    origins_never_visited: int
    origins_with_pending_changes: int
    #: bucket label (see :func:`bucket_label`) → origins, in bucket order, empty buckets left out
    lag_histogram: Mapping[str, int] = field(default_factory=dict)
    lag_max: timedelta | None = None
    lister_name: str | None = None
    lister_instance_name: str | None = None


def fold_metrics(
    now: datetime,
    counts: list[Mapping],
    lag_rows: list[Mapping],
) -> list[OriginMetrics]:
    """Join the stores' two aggregate queries into one record per (lister, visit type).

    ``counts`` rows have lister_id, visit_type and the four counts; ``lag_rows``
    have lister_id, visit_type, bucket (0-based, as :func:`bucket_label`), n
    and lag_max in seconds.
    """
    histograms: dict[tuple[int, str], dict[int, int]] = {}
    maxima: dict[tuple[int, str], float] = {}
    for row in lag_rows:
        key = (row["lister_id"], row["visit_type"])
        histograms.setdefault(key, {})[int(row["bucket"])] = int(row["n"])
        maxima[key] = max(maxima.get(key, 0.0), float(row["lag_max"]))
    metrics = []
    for row in counts:
        key = (row["lister_id"], row["visit_type"])
        buckets = histograms.get(key, {})
        metrics.append(OriginMetrics(
            lister_id=key[0], visit_type=key[1], computed_at=now,
            origins_known=int(row["origins_known"]), origins_enabled=int(row["origins_enabled"]),
            origins_never_visited=int(row["origins_never_visited"]),
            origins_with_pending_changes=int(row["origins_with_pending_changes"]),
            lag_histogram={bucket_label(i): buckets[i] for i in sorted(buckets)},
            lag_max=timedelta(seconds=maxima[key]) if key in maxima else None,
        ))
    return metrics
