"""A schedule as a JSON object with its full state (``ostinato schedule export`` and ``import``, the
HTTP API): every field by the proposal's names, durations in seconds, times in ISO 8601, and the
reading back, checked field by field."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .blackouts import parse_blackout_periods
from .errors import ValidationError
from .firings import CatchUp
from .limits import check_whole
from .run_items import check_threshold
from .schedule_checks import TIME_FIELDS as _TIME_FIELDS
from .schedules import RunMode, Schedule, ScheduleKind
from .tasks import TaskArguments

_DURATION_FIELDS = ("scheduling_period", "cooldown_duration", "cron_max_schedule_duration", "max_expected_duration",
                    "max_allowed_duration", "average_good_duration", "expected_duration", "duration_spread")


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    """Every field by the proposal's names: durations in seconds, times in ISO 8601."""
    data: dict[str, Any] = {
        "name": schedule.name, "kind": schedule.kind.value, "task_type": schedule.task_type,
        "arguments": {"args": list(schedule.arguments.args), "kwargs": dict(schedule.arguments.kwargs)},
        "mode": schedule.mode.value, "cron_schedule": schedule.cron_schedule, "tz": schedule.tz,
        "enabled": schedule.enabled, "blackout_periods": [b.to_dict() for b in schedule.blackout_periods],
        "dont_run_on_nodes": list(schedule.dont_run_on_nodes), "catch_up": str(schedule.catch_up),
        "retry_backoff": None if schedule.retry_backoff is None else [b.total_seconds() for b in schedule.retry_backoff],
        "options": dict(schedule.options), "declared_by": schedule.declared_by, "declaration": schedule.declaration,
        "failure_count": schedule.failure_count, "partial_failure_threshold": schedule.partial_failure_threshold,
        "last_items_done": schedule.last_items_done, "last_items_failed": schedule.last_items_failed,
        "owner_node": schedule.owner_node, "owner_name": schedule.owner_name, "owner_tag": schedule.owner_tag,
    }
    for name in _DURATION_FIELDS:
        value = getattr(schedule, name)
        data[name] = None if value is None else value.total_seconds()
    for name in _TIME_FIELDS:
        value = getattr(schedule, name)
        data[name] = None if value is None else value.isoformat()
    return data


def schedule_from_dict(data: Any) -> Schedule:
    """The inverse of :func:`schedule_to_dict`, checked; ValidationError names the field."""
    from .durations import parse_duration, parse_iso_time

    if not isinstance(data, Mapping):
        raise ValidationError("schedule", "a JSON object", type(data).__name__)
    known = set(schedule_to_dict(Schedule("x", ScheduleKind.PERIODIC, "t", datetime(2000, 1, 1))))
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValidationError(unknown[0], f"one of the fields {', '.join(sorted(known))}", data[unknown[0]])
    for required in ("name", "kind", "task_type", "created_at"):
        if data.get(required) is None:
            raise ValidationError(required, "a value (the field is required)", None)
    try:
        kind = ScheduleKind(data["kind"])
    except (ValueError, TypeError):
        raise ValidationError("kind", "periodic or calendar", data["kind"]) from None
    try:
        mode = RunMode(data.get("mode") or "run")
    except (ValueError, TypeError):
        raise ValidationError("mode", "run, submit or send", data.get("mode")) from None
    arguments = data.get("arguments") or {}
    if (not isinstance(arguments, Mapping) or not isinstance(arguments.get("args", []), list)
            or not isinstance(arguments.get("kwargs", {}), Mapping)):
        raise ValidationError("arguments", 'an object {"args": [...], "kwargs": {...}}', arguments)
    task_arguments = TaskArguments.parse(arguments, "arguments")
    values: dict[str, Any] = {}
    for name in _DURATION_FIELDS:
        value = data.get(name)
        values[name] = None if value is None else parse_duration(value, name, allow_zero=True)
    for name in _TIME_FIELDS:
        value = data.get(name)
        values[name] = None if value is None else parse_iso_time(value, name)
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ValidationError("enabled", "true or false", enabled)
    failures = data.get("failure_count")
    if failures is not None and (isinstance(failures, bool) or not isinstance(failures, int) or failures < 0):
        raise ValidationError("failure_count", "a whole number of 0 or more, or null", failures)
    for name in ("last_items_done", "last_items_failed"):
        check_whole(data.get(name), name, nullable=True)
    threshold = check_threshold(data.get("partial_failure_threshold"), "partial_failure_threshold", nullable=True)
    nodes = data.get("dont_run_on_nodes") or []
    if not isinstance(nodes, list):
        raise ValidationError("dont_run_on_nodes", "a list of node names", nodes)
    backoff = data.get("retry_backoff")
    if backoff is not None and not isinstance(backoff, list):
        raise ValidationError("retry_backoff", "a list of durations, or null", backoff)
    options = data.get("options") or {}
    if not isinstance(options, Mapping):
        raise ValidationError("options", "an object (Celery's options of a send)", options)
    return Schedule(
        name=data["name"], kind=kind, task_type=data["task_type"], mode=mode,
        arguments=task_arguments,
        cron_schedule=data.get("cron_schedule"), tz=data.get("tz") or "UTC", enabled=enabled,
        blackout_periods=parse_blackout_periods(data.get("blackout_periods")), dont_run_on_nodes=tuple(nodes),
        catch_up=CatchUp.parse(data.get("catch_up") or "latest"),
        retry_backoff=None if backoff is None else tuple(
            parse_duration(b, f"retry_backoff[{i}]", allow_zero=True) for i, b in enumerate(backoff)),
        options=dict(options), declared_by=data.get("declared_by"), declaration=data.get("declaration"),
        failure_count=failures, partial_failure_threshold=threshold, last_items_done=data.get("last_items_done"),
        last_items_failed=data.get("last_items_failed"), owner_node=data.get("owner_node"), owner_name=data.get("owner_name"),
        owner_tag=data.get("owner_tag"), **values,
    ).validated()
