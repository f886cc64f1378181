"""The protocol's visit stats, queue positions and metrics (``visit_stats/*``,
``visit_scheduler/*``, ``scheduler_metrics/*``; see docs/reference/swh-compat.md, "Origins").

The stats the protocol's journal client computes and upserts are kept as it wrote
them, in compat records keyed by visit type and URL: an upsert merges each field over
the stored one unless null, as the protocol's store does. Metrics are Ostinato's own
per (lister, visit type), recounted by the store's verb.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from ...domain.errors import ValidationError
from . import models
from .operations import Context, Param, arg, models_arg, operation, time_arg, uuid_arg
from .origins import QUEUE_POSITIONS, VISIT_STATS, lister_id_of, lister_uuid

_TIMES = ("last_successful", "last_visit", "last_scheduled")


def _key(url: str, visit_type: str) -> str:
    return f"{visit_type} {url}"


def _to_record(stats: dict[str, Any]) -> dict[str, Any]:
    record = dict(stats)
    for name in _TIMES:
        record[name] = None if record[name] is None else record[name].isoformat()
    record["last_snapshot"] = None if record["last_snapshot"] is None else record["last_snapshot"].hex()
    return record


def _from_record(record: dict[str, Any]) -> Any:
    fields = dict(record)
    for name in _TIMES:
        fields[name] = None if fields.get(name) is None else datetime.fromisoformat(fields[name])
    fields["last_snapshot"] = None if fields.get("last_snapshot") is None else bytes.fromhex(fields["last_snapshot"])
    return models.make("OriginVisitStats", **fields)


@operation("visit_stats/upsert", origin_visit_stats=models_arg("OriginVisitStats"))
def origin_visit_stats_upsert(ctx: Context, origin_visit_stats: list[dict[str, Any]]) -> None:
    incoming: dict[str, dict[str, Any]] = {}
    for stats in origin_visit_stats:  # a later one for the same key merges over an earlier one
        key = _key(stats["url"], stats["visit_type"])
        previous = incoming.get(key)
        incoming[key] = stats if previous is None else {
            name: value if value is not None else previous[name] for name, value in stats.items()}
    stored = ctx.store.get_compat_records(VISIT_STATS, list(incoming))
    merged = {}
    for key, stats in incoming.items():
        record = _to_record(stats)
        old = stored.get(key)
        if old is not None:
            record = {name: value if value is not None else old.get(name) for name, value in record.items()}
        merged[key] = record
    ctx.store.put_compat_records(VISIT_STATS, merged)


def _ids(value: Any, name: str) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        raise ValidationError(name, "a list of [url, visit_type]", value)
    pairs = []
    for index, item in enumerate(value):
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(v, str) for v in item)):
            raise ValidationError(f"{name}[{index}]", "a pair [url, visit_type]", item)
        pairs.append((item[0], item[1]))
    return pairs


@operation("visit_stats/get", "read", ids=Param(_ids))
def origin_visit_stats_get(ctx: Context, ids: list[tuple[str, str]]) -> list[Any]:
    keys = [_key(url, visit_type) for url, visit_type in ids]
    stored = ctx.store.get_compat_records(VISIT_STATS, keys)
    return [_from_record(stored[key]) for key in dict.fromkeys(keys) if key in stored]


@operation("visit_scheduler/get", "read")
def visit_scheduler_queue_position_get(ctx: Context) -> dict[str, int]:
    positions: dict[str, int] = {}
    after = ""
    while True:
        page = ctx.store.list_compat_records(QUEUE_POSITIONS, after=after, limit=1000)
        positions.update({key: record["position"] for key, record in page.items()})
        if len(page) < 1000:
            return positions
        after = max(page)


@operation("visit_scheduler/set", visit_type=arg(models.TEXT), position=arg(models.WHOLE))
def visit_scheduler_queue_position_set(ctx: Context, visit_type: str, position: int) -> None:
    ctx.store.put_compat_records(QUEUE_POSITIONS, {visit_type: {"position": position}})


def _metrics(metrics: list[Any], visit_type: str | None = None) -> list[Any]:
    return [models.make("SchedulerMetrics", lister_id=lister_uuid(m.lister_id), visit_type=m.visit_type,
                        last_update=m.computed_at, origins_known=m.origins_known, origins_enabled=m.origins_enabled,
                        origins_never_visited=m.origins_never_visited,
                        origins_with_pending_changes=m.origins_with_pending_changes)
            for m in metrics if visit_type is None or m.visit_type == visit_type]


@operation("scheduler_metrics/update", lister_id=uuid_arg(), timestamp=time_arg())
def update_metrics(ctx: Context, lister_id: UUID | None, timestamp: datetime | None) -> list[Any]:
    metrics = ctx.store.update_origin_metrics(timestamp or ctx.clock.now())
    if lister_id is not None:
        ours = lister_id_of(lister_id)
        metrics = [m for m in metrics if m.lister_id == ours]
    return _metrics(metrics)


@operation("scheduler_metrics/get", "read", lister_id=uuid_arg(), visit_type=arg(models.nullable(models.TEXT), None))
def get_metrics(ctx: Context, lister_id: UUID | None, visit_type: str | None) -> list[Any]:
    ours = lister_id_of(lister_id) if lister_id is not None else None
    if lister_id is not None and ours is None:
        return []
    return _metrics(ctx.store.get_origin_metrics(lister_id=ours, visit_type=visit_type))
