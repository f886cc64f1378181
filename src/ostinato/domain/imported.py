"""What a store checks of records written as they are given, ids and states included: the
``import_*`` verbs that copy another scheduler's database (see docs/reference/swh-import.md).

Records made by Ostinato's own verbs are checked where they are made (``prepared_task``,
``check_listed_origin``, ``check_visit_status``); an imported record skips those paths, so each
rule here says what any stored record of its kind must satisfy, with the same limits
(``domain.limits``). Every check raises :class:`ValidationError` naming the field; the stores
locate it (``task 17``) and write nothing of the batch.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from .errors import ValidationError
from .limits import (
    MAX_DURATION,
    MAX_TYPE_BYTES,
    MAX_URL_BYTES,
    check_json_value,
    check_stored_text,
    check_time_range,
    check_whole,
)
from .origin_metrics import OriginMetrics
from .origins import Lister, StoredListedOrigin, check_listed_origin
from .tasks import Task, TaskArguments, TaskPolicy, TaskPriority, TaskRun, TaskRunStatus, TaskStatus
from .visits import VisitOutcome, VisitStats


def check_time(value: Any, field: str, *, nullable: bool = True) -> datetime | None:
    """``value`` if it is an aware time within the stores' range (or None, when ``nullable``)."""
    if value is None and nullable:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValidationError(field, "a time with a zone" + (", or null" if nullable else ""), value)
    return check_time_range(value, field)


def check_duration(value: Any, field: str, *, nullable: bool = True) -> timedelta | None:
    """``value`` if it is a positive duration of at most ``MAX_DURATION`` (or None, when ``nullable``)."""
    if value is None and nullable:
        return None
    if not isinstance(value, timedelta) or not timedelta(0) < value <= MAX_DURATION:
        raise ValidationError(field, f"a positive duration of at most {MAX_DURATION.days} days", value)
    return value


def _check_enum(value: Any, enum_cls: type[enum.Enum], field: str, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, enum_cls):
        allowed = ", ".join(m.value for m in enum_cls)
        raise ValidationError(field, f"one of {allowed}" + (", or null" if nullable else ""), value)


def check_task(task: Task) -> Task:
    """``task`` if a store can hold it as given (its type is checked by the store)."""
    check_whole(task.id, "id", 1)
    if not isinstance(task.type, str) or not task.type.strip():
        raise ValidationError("type", "a task type's name", task.type)
    check_stored_text(task.type, "type", MAX_TYPE_BYTES)
    if not isinstance(task.arguments, TaskArguments):
        raise ValidationError("arguments", 'an object {"args": [...], "kwargs": {...}}', task.arguments)
    check_json_value(list(task.arguments.args), "arguments.args")
    check_json_value(dict(task.arguments.kwargs), "arguments.kwargs")
    check_time(task.next_run, "next_run", nullable=False)
    _check_enum(task.policy, TaskPolicy, "policy")
    _check_enum(task.status, TaskStatus, "status")
    _check_enum(task.priority, TaskPriority, "priority", nullable=True)
    check_duration(task.current_interval, "current_interval", nullable=task.policy is not TaskPolicy.RECURRING)
    check_whole(task.retries_left, "retries_left")
    return task


def check_task_run(run: TaskRun) -> TaskRun:
    """``run`` if a store can hold it as given."""
    check_whole(run.id, "id", 1)
    check_whole(run.task, "task", 1)
    if run.backend_id is not None:
        if not isinstance(run.backend_id, str):
            raise ValidationError("backend_id", "text or null", run.backend_id)
        check_stored_text(run.backend_id, "backend_id")
    for name in ("scheduled", "started", "ended"):
        check_time(getattr(run, name), name)
    if not isinstance(run.metadata, Mapping):
        raise ValidationError("metadata", "a JSON object", run.metadata)
    check_json_value(run.metadata, "metadata")
    _check_enum(run.status, TaskRunStatus, "status")
    return run


def check_lister(lister: Lister) -> Lister:
    """``lister`` if a store can hold it as given (its id is the store's own, not checked)."""
    for name in ("name", "instance_name"):
        value = getattr(lister, name)
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(name, "a non-empty name", value)
        check_stored_text(value, name)
    if not isinstance(lister.current_state, Mapping):
        raise ValidationError("current_state", "a JSON object", lister.current_state)
    check_json_value(lister.current_state, "current_state")
    check_time(lister.last_listing_finished_at, "last_listing_finished_at")
    check_time(lister.updated, "updated", nullable=False)
    return lister


def check_stored_listed_origin(listed: StoredListedOrigin) -> StoredListedOrigin:
    """``listed`` if a store can hold it as given, its first and last sightings included."""
    check_whole(listed.lister_id, "lister_id", 1)
    check_listed_origin(listed.origin)
    check_time(listed.origin.last_update, "last_update")
    check_time(listed.first_seen, "first_seen", nullable=False)
    check_time(listed.last_seen, "last_seen", nullable=False)
    return listed


_STATS_TIMES = ("last_visit", "last_successful", "last_eventful", "last_uneventful", "last_scheduled",
                "next_visit_target", "last_status_date", "cooldown_until", "next_optimal_visit")


def check_visit_stats(stats: VisitStats) -> VisitStats:
    """``stats`` if a store can hold them as given."""
    for name, limit in (("url", MAX_URL_BYTES), ("visit_type", MAX_TYPE_BYTES)):
        value = getattr(stats, name)
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(name, "non-empty text", value)
        check_stored_text(value, name, limit)
    for name in _STATS_TIMES:
        check_time(getattr(stats, name), name)
    _check_enum(stats.last_visit_status, VisitOutcome, "last_visit_status", nullable=True)
    if stats.last_snapshot is not None and (not isinstance(stats.last_snapshot, bytes) or not stats.last_snapshot):
        raise ValidationError("last_snapshot", "a non-empty identifier (bytes) or null", stats.last_snapshot)
    check_whole(stats.failure_count, "failure_count")
    check_whole(stats.successful_visits, "successful_visits")
    for name in ("rate_changes", "rate_days"):
        value = getattr(stats, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0):
            raise ValidationError(name, "a number of 0 or more, or null", value)
    return stats


def check_origin_metrics(metrics: OriginMetrics) -> OriginMetrics:
    """``metrics`` if a store can hold them as given."""
    check_whole(metrics.lister_id, "lister_id", 1)
    if not isinstance(metrics.visit_type, str) or not metrics.visit_type.strip():
        raise ValidationError("visit_type", "a visit type such as git", metrics.visit_type)
    check_stored_text(metrics.visit_type, "visit_type", MAX_TYPE_BYTES)
    check_time(metrics.computed_at, "computed_at", nullable=False)
    for name in ("origins_known", "origins_enabled", "origins_never_visited", "origins_with_pending_changes",
                 "visits_in_flight", "visits_last_hour", "eventful_visits_last_hour", "uneventful_visits_last_hour",
                 "origins_never_successful"):
        check_whole(getattr(metrics, name), name)
    if not isinstance(metrics.lag_histogram, Mapping):
        raise ValidationError("lag_histogram", "a JSON object", metrics.lag_histogram)
    check_json_value(metrics.lag_histogram, "lag_histogram")
    if metrics.lag_max is not None and (not isinstance(metrics.lag_max, timedelta) or metrics.lag_max < timedelta(0)):
        raise ValidationError("lag_max", "a duration of 0 or more, or null", metrics.lag_max)
    return metrics


__all__ = ["check_duration", "check_lister", "check_origin_metrics", "check_stored_listed_origin", "check_task",
           "check_task_run", "check_time", "check_visit_stats"]
