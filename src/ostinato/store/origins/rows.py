"""The origins role's rows, read and written once for both SQL dialects.

Each converter takes the dialect (``db``: anything with the value conversions of
:class:`~ostinato.store.dialect.Dialect`) and a row read by column name. The compat
and import roles read listers and listed origins with these too.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ...domain.change_rates import RevisitThreshold
from ...domain.origin_metrics import OriginMetrics, in_bucket_order
from ...domain.origins import ListedOrigin, Lister, StoredListedOrigin
from ...domain.visit_changes import VisitChanges
from ...domain.visits import VisitOutcome, VisitStats
from ..dialect import Dialect, Row

#: the times of a visit stats row
VISIT_TIMES = ("last_visit", "last_successful", "last_eventful", "last_uneventful", "last_scheduled",
               "next_visit_target", "last_status_date", "cooldown_until", "next_optimal_visit", "last_update")


def row_to_lister(db: Dialect, row: Row) -> Lister:
    return Lister(row["id"], row["name"], row["instance_name"], db.read_json(row["current_state"]),
                  db.read_time(row["last_listing_finished_at"]), db.read_time(row["updated"]))


def row_to_listed_origin(db: Dialect, row: Row) -> StoredListedOrigin:
    is_fork = row["is_fork"]
    origin = ListedOrigin(row["url"], row["visit_type"], db.read_json(row["extra_loader_arguments"]),
                          db.read_time(row["last_update"]), bool(row["enabled"]),
                          None if is_fork is None else bool(is_fork), row["forked_from_url"])
    return StoredListedOrigin(row["lister_id"], origin, db.read_time(row["first_seen"]), db.read_time(row["last_seen"]))


def row_to_visit_stats(db: Dialect, row: Row) -> VisitStats:
    read_time = db.read_time
    times = {name: read_time(row[name]) for name in VISIT_TIMES}
    status = row["last_visit_status"]
    return VisitStats(row["url"], row["visit_type"], last_visit_status=VisitOutcome(status) if status else None,
                      last_snapshot=row["last_snapshot"], failure_count=row["failure_count"],
                      successful_visits=row["successful_visits"], rate_changes=row["rate_changes"],
                      rate_days=row["rate_days"], rate_evidence=rate_evidence(db, row["rate_evidence"]),
                      hint_wait_days=row["hint_wait_days"], **times)


def tuple_to_visit_stats(db: Dialect, row: Sequence[Any]) -> VisitStats:
    """Visit stats read by position, the fields in :class:`VisitStats`'s order (``visit_stats_for_update``)."""
    read_time = db.read_time
    (url, visit_type, last_visit, status, last_successful, snapshot, last_eventful, last_uneventful, failures,
     last_scheduled, target, last_status_date, successes, cooldown, rate_changes, rate_days, evidence, optimal,
     hint_wait, last_update) = row
    return VisitStats(url, visit_type, read_time(last_visit), VisitOutcome(status) if status else None,
                      read_time(last_successful), snapshot, read_time(last_eventful), read_time(last_uneventful),
                      failures, read_time(last_scheduled), read_time(target), read_time(last_status_date), successes,
                      read_time(cooldown), rate_changes, rate_days, rate_evidence(db, evidence), read_time(optimal),
                      hint_wait, read_time(last_update))


def rate_evidence(db: Dialect, value: Any) -> tuple[float, ...] | None:
    """A change rate's evidence as stored (None: none yet)."""
    return None if value is None else tuple(db.read_array(value))


# -- what a visit saw of its changes (migrations/0020) ------------------------------------------
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class VisitChangesRecord:
    """A row of ``origin_visit_changes`` as written (``upsert_visit_changes``), in its columns' order."""

    url: str
    visit_type: str
    status_date: datetime
    newest_change: datetime | None
    change_times: bytes | None


def pack_times(times: Sequence[datetime] | None) -> bytes | None:
    """Times (aware) as stored: big-endian signed 64-bit microseconds since 1970-01-01 UTC, in the order given."""
    if times is None:
        return None
    return struct.pack(f">{len(times)}q", *((t - _EPOCH) // _MICROSECOND for t in times))


def unpack_times(value: bytes | None) -> tuple[datetime, ...] | None:
    """The times :func:`pack_times` stored, in UTC."""
    if value is None:
        return None
    raw = bytes(value)
    return tuple(_EPOCH + timedelta(microseconds=m) for m in struct.unpack(f">{len(raw) // 8}q", raw))


def row_to_visit_changes(db: Dialect, row: Row) -> VisitChanges:
    """A row of ``origin_visit_changes``, its times in UTC (PostgreSQL answers in the session's zone)."""
    newest = row["newest_change"]
    return VisitChanges(row["url"], row["visit_type"], db.read_time(row["status_date"]).astimezone(UTC),
                        None if newest is None else db.read_time(newest).astimezone(UTC), unpack_times(row["change_times"]))


def newest_changes(db: Dialect, rows: Sequence[Sequence[Any]]) -> dict[tuple[str, str], datetime]:
    """(url, visit_type) -> the newest change, of the rows of ``visit_changes_in`` read by position (the
    change times left packed) that have one."""
    read_time = db.read_time
    return {(r[0], r[1]): read_time(r[3]).astimezone(UTC) for r in rows if r[3] is not None}


def row_to_threshold(db: Dialect, row: Row) -> RevisitThreshold:
    return RevisitThreshold(row["visit_type"], row["threshold"], row["visits_per_day"], row["origins"],
                            db.read_time(row["computed_at"]))


def row_to_metrics(db: Dialect, row: Row) -> OriginMetrics:
    return OriginMetrics(
        row["lister_id"], row["visit_type"], db.read_time(row["computed_at"]), row["origins_known"],
        row["origins_enabled"], row["origins_never_visited"], row["origins_with_pending_changes"],
        in_bucket_order(db.read_json(row["lag_histogram"])), db.read_interval(row["lag_max"]), row["lister_name"],
        row["lister_instance_name"], row["visits_in_flight"], row["visits_last_hour"], row["eventful_visits_last_hour"],
        row["uneventful_visits_last_hour"], row["origins_never_successful"],
    )


def metrics_params(db: Dialect, m: OriginMetrics) -> dict[str, Any]:
    """The parameters of ``upsert_origin_metrics`` (a count, or an imported one)."""
    return {
        "lister_id": m.lister_id, "visit_type": m.visit_type, "computed_at": db.time(m.computed_at),
        "origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
        "origins_never_visited": m.origins_never_visited,
        "origins_with_pending_changes": m.origins_with_pending_changes,
        "lag_histogram": db.json(dict(m.lag_histogram)), "lag_max": db.interval(m.lag_max),
        "visits_in_flight": m.visits_in_flight, "visits_last_hour": m.visits_last_hour,
        "eventful_visits_last_hour": m.eventful_visits_last_hour,
        "uneventful_visits_last_hour": m.uneventful_visits_last_hour,
        "origins_never_successful": m.origins_never_successful,
    }
