"""How each row of an swh-scheduler 3.6 database becomes Ostinato's: pure functions over the
tuples ``db_source`` reads, in the order of its queries (the mapping is documented, field by
field, in docs/reference/swh-import.md).

Most fields carry over as they are. What differs:

- task types are kept as given (``TaskType.validated(strict=False)``): a ``backoff_factor`` of 1, retries
  without a ``retry_delay`` (an hour, by the rule both schedulers share), a queue length of 0;
- listers are known by (name, instance name), not by the peer's UUID;
- visit stats: the peer's ``last_visit`` is the date of the newest final status, which
  Ostinato calls ``last_status_date``; Ostinato's ``last_visit`` (kept on a failure) is the last
  successful one; ``successive_visits`` (visits in a row with the same status) gives the
  failure count, and a lower bound of the successful visits; the queue position becomes a
  ``next_visit_target`` in time (:func:`queue_target`); the cooldowns the peer applies at
  each grab become Ostinato's ``cooldown_until`` (:func:`cooldown_of`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ...domain.errors import ValidationError
from ...domain.limits import MAX_TIME, MIN_TIME
from ...domain.listing_grabs import ProtocolVisitStats
from ...domain.origin_metrics import OriginMetrics
from ...domain.origins import ListedOrigin, Lister, StoredListedOrigin
from ...domain.tasks import (
    PRIORITY_OF,
    Task,
    TaskArguments,
    TaskPolicy,
    TaskRun,
    TaskRunStatus,
    TaskStatus,
    TaskType,
)
from ...domain.visits import VisitOutcome, VisitStats

_FAILED, _NOT_FOUND, _SUCCESSFUL = "failed", "not_found", "successful"
_LAST_TIME = MAX_TIME - timedelta(microseconds=1)


def _enum(cls: type[enum.Enum], value: Any, field: str) -> Any:
    try:
        return cls(value)
    except ValueError:
        raise ValidationError(field, f"one of {', '.join(m.value for m in cls)}", value) from None


def task_type_of(row: tuple) -> TaskType:
    """A ``task_type`` row (type, description, backend_name, default/min/max_interval,
    backoff_factor, max_queue_length, num_retries, retry_delay)."""
    (type_, description, backend_name, default_interval, min_interval, max_interval, backoff_factor,
     max_queue_length, num_retries, retry_delay) = row
    return TaskType(type_, description, backend_name, default_interval, min_interval, max_interval, backoff_factor,
                    max_queue_length, num_retries, retry_delay).validated(strict=False)


def task_of(row: tuple) -> Task:
    """A ``task`` row (id, type, arguments, next_run, current_interval, status, policy, retries_left, priority)."""
    id_, type_, arguments, next_run, interval, status, policy, retries_left, priority = row
    return Task(id_, type_, TaskArguments.parse(arguments), next_run, interval, _enum(TaskPolicy, policy, "policy"),
                _enum(TaskStatus, status, "status"), retries_left, PRIORITY_OF[priority])


def task_run_of(row: tuple) -> TaskRun:
    """A ``task_run`` row (id, task, backend_id, scheduled, started, ended, metadata, status)."""
    id_, task, backend_id, scheduled, started, ended, metadata, status = row
    return TaskRun(id_, task, backend_id, scheduled, started, ended, metadata if metadata is not None else {},
                   _enum(TaskRunStatus, status, "status"))


def lister_of(row: tuple) -> Lister:
    """A ``listers`` row (id, name, instance_name, current_state, last_listing_finished_at, updated); the
    id is Ostinato's own once imported."""
    _uuid, name, instance_name, current_state, last_listing_finished_at, updated = row
    return Lister(0, name, instance_name, current_state, last_listing_finished_at, updated)


def listed_origin_of(row: tuple, lister_ids: Mapping[Any, int]) -> StoredListedOrigin:
    """A ``listed_origins`` row (lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen,
    last_seen, last_update, is_fork, forked_from_url); ``lister_ids`` maps the peer's lister UUIDs to ours."""
    lister, url, visit_type, extra, enabled, first_seen, last_seen, last_update, is_fork, forked_from_url = row
    origin = ListedOrigin(url, visit_type, extra if extra is not None else {}, last_update, enabled, is_fork,
                          forked_from_url)
    return StoredListedOrigin(lister_ids[lister], origin, first_seen, last_seen)


def metrics_of(row: tuple, lister_ids: Mapping[Any, int]) -> OriginMetrics:
    """A ``scheduler_metrics`` row (lister_id, visit_type, last_update, origins_known, origins_enabled,
    origins_never_visited, origins_with_pending_changes): the peer keeps no lag nor activity."""
    lister, visit_type, last_update, known, enabled, never_visited, pending = row
    return OriginMetrics(lister_ids[lister], visit_type, last_update, known, enabled, never_visited, pending)


@dataclass(frozen=True, slots=True)
class Queues:
    """Each visit type's queue: its head position, and when it stood there (its last activity)."""

    heads: Mapping[str, int]
    anchors: Mapping[str, datetime]


def queue_target(position: int | None, visit_type: str, queues: Queues) -> datetime | None:
    """The time an origin's queue position stands for: as far after its visit type's last activity
    as the position lies beyond the queue's head, in seconds (the queue's own unit: a visit
    interval of d days moves an origin d × 86400 positions on), within Ostinato's time range."""
    anchor = queues.anchors.get(visit_type)
    if position is None or anchor is None:
        return None
    ahead = position - queues.heads.get(visit_type, 0)  # the peer's head starts at 0
    ahead = max(min(ahead, (_LAST_TIME - anchor) // timedelta(seconds=1)), -((anchor - MIN_TIME) // timedelta(seconds=1)))
    return anchor + timedelta(seconds=ahead)


@dataclass(frozen=True, slots=True)
class Cooldowns:
    """Ostinato's cooldowns (settings ``absolute_cooldown``, ``failed_cooldown``,
    ``not_found_cooldown``, ``in_flight_timeout``)."""

    absolute: timedelta
    failed: timedelta
    not_found: timedelta
    in_flight: timedelta


def cooldown_of(last_visit: datetime | None, status: str | None, last_scheduled: datetime | None,
                cooldowns: Cooldowns) -> datetime | None:
    """Until when an origin waits, by Ostinato's rules (``domain.visit_policies``): while a visit grabbed
    after its last visit is out. The cooldowns after a visit are left to the peer's own rules, which the
    swh protocol's grabs compute at each grab from its times (Ostinato's, stored, would hide an origin
    those grabs take: its absolute cooldown counts from the visit, the peer's from the grab); the next
    visits set Ostinato's."""
    if last_scheduled is not None and (last_visit is None or last_scheduled > last_visit):
        return last_scheduled + cooldowns.in_flight
    return None


def visit_stats_of(row: tuple, queues: Queues, cooldowns: Cooldowns) -> VisitStats:
    """An ``origin_visit_stats`` row (url, visit_type, last_successful, last_visit, last_visit_status,
    last_scheduled, last_snapshot, next_visit_queue_position, next_position_offset, successive_visits)."""
    (url, visit_type, last_successful, last_visit, status, last_scheduled, snapshot, position, _offset,
     successive) = row
    outcome = _enum(VisitOutcome, status, "last_visit_status") if status is not None else None
    in_a_row = successive if last_visit is not None else 0
    failures = in_a_row if status in (_FAILED, _NOT_FOUND) else 0
    if status == _SUCCESSFUL:
        successes = in_a_row
    else:
        successes = 1 if last_successful is not None else 0
    return VisitStats(
        url, visit_type,
        last_visit=last_visit,  # the peer's (its newest final status): what the swh protocol's face answers
        last_visit_status=outcome,
        last_successful=last_successful,
        last_snapshot=bytes(snapshot) if snapshot is not None else None,
        failure_count=failures,
        last_scheduled=last_scheduled,
        next_visit_target=queue_target(position, visit_type, queues),
        last_status_date=last_visit,
        successful_visits=successes,
        cooldown_until=cooldown_of(last_visit, status, last_scheduled, cooldowns),
    )


def protocol_stats_of(row: tuple) -> ProtocolVisitStats:
    """An ``origin_visit_stats`` row as the swh protocol has it, every field as it is (the face answers
    them): written over what :func:`visit_stats_of` made of the row (``Store.merge_visit_stats``)."""
    (url, visit_type, last_successful, last_visit, status, last_scheduled, snapshot, position, offset, successive) = row
    outcome = _enum(VisitOutcome, status, "last_visit_status") if status is not None else None
    return ProtocolVisitStats(url, visit_type, last_visit, outcome, last_successful,
                              bytes(snapshot) if snapshot is not None else None, last_scheduled, position, offset,
                              successive)
