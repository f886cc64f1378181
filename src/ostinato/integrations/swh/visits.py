"""The protocol's visit stats, queue positions and metrics (``visit_stats/*``,
``visit_scheduler/*``, ``scheduler_metrics/*``; see docs/reference/swh-compat.md, "Visit stats", "Metrics").

The stats the protocol's journal client computes and upserts go into Ostinato's own
visit stats (``Store.merge_visit_stats``, one statement a batch: last visit, its
status, last successful visit, last snapshot, last scheduled, and the three fields
only the protocol has: queue position, position offset, successive visits), where
grabs and metrics read them; each field given replaces the stored one, as the
protocol's store does. Stats exist for the protocol once anything was recorded or
scheduled. Metrics are the protocol's counts
(``Store.count_listed_origins``), kept as compat records per (lister, visit type).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from ...domain.errors import ValidationError
from ...domain.listing_grabs import ListingCounts, ProtocolVisitStats
from ...domain.visits import VisitOutcome
from . import models, policies
from .operations import Context, Param, arg, models_arg, operation, time_arg, uuid_arg
from .origins import QUEUE_POSITIONS, lister_id_of, lister_uuid

METRICS = "swh.metrics"
#: fields Ostinato's visit stats have
_SHARED = ("last_successful", "last_visit", "last_visit_status", "last_scheduled", "last_snapshot")
#: the protocol's field names of the fields only it has, and the store's
_OWN = (("next_visit_queue_position", "queue_position"), ("next_position_offset", "position_offset"),
        ("successive_visits", "successive_visits"))


@operation("visit_stats/upsert", origin_visit_stats=models_arg("OriginVisitStats"))
def origin_visit_stats_upsert(ctx: Context, origin_visit_stats: list[dict[str, Any]]) -> None:
    stats = [ProtocolVisitStats(
        s["url"], s["visit_type"], s["last_visit"],
        None if s["last_visit_status"] is None else VisitOutcome(s["last_visit_status"]),
        s["last_successful"], s["last_snapshot"], s["last_scheduled"], s["next_visit_queue_position"],
        s["next_position_offset"], s["successive_visits"]) for s in origin_visit_stats]
    policies.feed(ctx, stats)  # the visit types that learn (policies.py), before the stats are written as told
    ctx.compat.merge_visit_stats(stats, now=ctx.clock.now())


def _stats_model(stats: ProtocolVisitStats) -> Any:
    fields: dict[str, Any] = {"url": stats.url, "visit_type": stats.visit_type,
                              **{name: getattr(stats, name) for name in _SHARED}}
    if stats.last_visit_status is not None:
        fields["last_visit_status"] = stats.last_visit_status.value
    fields.update({theirs: getattr(stats, ours) for theirs, ours in _OWN if getattr(stats, ours) is not None})
    return models.make("OriginVisitStats", **fields)


def _ids(value: Any, name: str) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        raise ValidationError(name, "a list of [url, visit_type]", value)
    pairs = []
    for index, item in enumerate(value):
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(v, str) for v in item)):
            raise ValidationError(f"{name}[{index}]", "a pair [url, visit_type]", item)
        pairs.append((item[0], item[1]))
    return pairs


def _exists_for_the_protocol(stats: ProtocolVisitStats) -> bool:
    """Stats exist for the protocol once something was recorded or scheduled (an origin only listed has a
    scheduling row here, and none there)."""
    return any(getattr(stats, name) is not None for name in (*_SHARED, *(ours for _, ours in _OWN)))


@operation("visit_stats/get", "read", ids=Param(_ids))
def origin_visit_stats_get(ctx: Context, ids: list[tuple[str, str]]) -> list[Any]:
    # one answer per id asked, an id asked twice answered twice, as the protocol's store joins them
    found = {(s.url, s.visit_type): s for s in ctx.compat.get_protocol_visit_stats(list(dict.fromkeys(ids)))
             if _exists_for_the_protocol(s)}
    return [_stats_model(found[key]) for key in ids if key in found]


@operation("visit_scheduler/get", "read")
def visit_scheduler_queue_position_get(ctx: Context) -> dict[str, int]:
    positions: dict[str, int] = {}
    after = ""
    while True:
        page = ctx.compat.list_compat_records(QUEUE_POSITIONS, after=after, limit=1000)
        positions.update({key: record["position"] for key, record in page.items()})
        if len(page) < 1000:
            return positions
        after = max(page)


@operation("visit_scheduler/set", visit_type=arg(models.TEXT), position=arg(models.WHOLE))
def visit_scheduler_queue_position_set(ctx: Context, visit_type: str, position: int) -> None:
    ctx.compat.put_compat_records(QUEUE_POSITIONS, {visit_type: {"position": position}})


def _metrics_record(counts: ListingCounts, at: datetime) -> dict[str, Any]:
    return {"lister_id": counts.lister_id, "visit_type": counts.visit_type, "last_update": at.isoformat(),
            "origins_known": counts.origins_known, "origins_enabled": counts.origins_enabled,
            "origins_never_visited": counts.origins_never_visited,
            "origins_with_pending_changes": counts.origins_with_pending_changes}


def _metrics_model(record: dict[str, Any]) -> Any:
    return models.make("SchedulerMetrics", **{**record, "lister_id": lister_uuid(record["lister_id"]),
                                              "last_update": datetime.fromisoformat(record["last_update"])})


@operation("scheduler_metrics/update", lister_id=uuid_arg(), timestamp=time_arg())
def update_metrics(ctx: Context, lister_id: UUID | None, timestamp: datetime | None) -> list[Any]:
    ours = lister_id_of(lister_id) if lister_id is not None else None
    if lister_id is not None and ours is None:
        return []
    at = timestamp or ctx.clock.now()
    records = {f"{c.lister_id} {c.visit_type}": _metrics_record(c, at)
               for c in ctx.compat.count_listed_origins(lister_id=ours)}
    ctx.compat.put_compat_records(METRICS, records)
    return [_metrics_model(record) for record in records.values()]


@operation("scheduler_metrics/get", "read", lister_id=uuid_arg(), visit_type=arg(models.nullable(models.TEXT), None))
def get_metrics(ctx: Context, lister_id: UUID | None, visit_type: str | None) -> list[Any]:
    ours = lister_id_of(lister_id) if lister_id is not None else None
    if lister_id is not None and ours is None:
        return []
    found: list[dict[str, Any]] = []
    after = ""
    while True:
        page = ctx.compat.list_compat_records(METRICS, after=after, limit=1000)
        found.extend(r for r in page.values() if (ours is None or r["lister_id"] == ours)
                     and (visit_type is None or r["visit_type"] == visit_type))
        if len(page) < 1000:
            return [_metrics_model(record) for record in found]
        after = max(page)
