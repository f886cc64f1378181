"""Dialect-free helpers the stores share: batch preparation and result ordering."""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from datetime import datetime
from typing import Any, Callable, Mapping, Sequence

from ..domain.change_rates import RevisitThreshold
from ..domain.errors import ValidationError
from ..domain.limits import MAX_TYPE_BYTES, check_stored_text
from ..domain.origins import ListedOrigin, check_listed_origin
from ..domain.tasks import NewTask, Task, TaskPolicy, TaskType, prepare_new_task
from ..domain.schedules import RunStatus, Schedule, ScheduleRun
from ..domain.visit_policies import POLICY_PICKS, GrabRequest, NextVisit, VisitPolicy
from .interface import TaskActivity

#: type, canonical arguments, policy, priority, and the next run of a one-shot task when the caller keeps
#: one-shot tasks apart by it (``create_tasks(one_shot_by_next_run=True)``), else None
DedupKey = tuple[str, str, str, str | None, datetime | None]


def prepare_task_batch(
    tasks: Sequence[NewTask], lookup_types: Callable[[set[str]], Mapping[str, TaskType]], *,
    one_shot_by_next_run: bool = False,
) -> tuple[list[DedupKey], dict[DedupKey, NewTask]]:
    """Validate a batch of new tasks against their types.

    Returns each task's deduplication key, in input order, and the distinct
    tasks by key (keys are computed once: the canonical JSON is the costly part).

    Raises ValidationError (located at ``task N``) on the first bad task: the
    caller has written nothing yet.
    """
    for index, task in enumerate(tasks):  # a name the database cannot even look up (NUL) is bad input too
        try:
            if not isinstance(task.type, str):
                raise ValidationError("type", "a task type's name", task.type)
            check_stored_text(task.type, "type", MAX_TYPE_BYTES)
        except ValidationError as exc:
            raise exc.at(f"task {index}") if len(tasks) > 1 else exc from None
    types = lookup_types({t.type for t in tasks})
    keys: list[DedupKey] = []
    unique: dict[DedupKey, NewTask] = {}
    for index, task in enumerate(tasks):
        task_type = types.get(task.type)
        try:
            if task_type is None:
                raise ValidationError("type", "a known task type (see `ostinato task-type list`)", task.type)
            ready = prepare_new_task(task, task_type)
        except ValidationError as exc:
            raise exc.at(f"task {index}") if len(tasks) > 1 else exc from None
        key = (*ready.dedup_key(), _apart_by(ready.policy, ready.next_run, one_shot_by_next_run))
        keys.append(key)
        unique.setdefault(key, ready)
    return keys, unique


def _apart_by(policy: TaskPolicy, next_run: datetime, one_shot_by_next_run: bool) -> datetime | None:
    return next_run if one_shot_by_next_run and policy is TaskPolicy.ONESHOT else None


def task_key(task: Task, *, one_shot_by_next_run: bool = False) -> DedupKey:
    return (task.type, task.arguments.to_json(), task.policy.value, task.priority.value if task.priority else None,
            _apart_by(task.policy, task.next_run, one_shot_by_next_run))


def in_input_order(keys: Sequence[DedupKey], stored: Mapping[DedupKey, Task]) -> list[Task]:
    return [stored[key] for key in keys]


def latest_listed(origins: Sequence[ListedOrigin]) -> list[ListedOrigin]:
    """One record per (url, visit_type), the last one of the batch winning; each checked first
    (``check_listed_origin``, located at ``origin N``), so a bad one writes nothing."""
    for index, origin in enumerate(origins):
        try:
            check_listed_origin(origin)
        except ValidationError as exc:
            raise exc.at(f"origin {index}") from None
    return list({(o.url, o.visit_type): o for o in origins}.values())


def next_visit(visit_type: str, policy: VisitPolicy, url: str, lister_id: int | None,
               extra_loader_arguments: Mapping[str, Any] | None, last_update: datetime | None,
               listers: Mapping[int, tuple[str, str]]) -> NextVisit:
    """A picked origin with what its loader needs; ``listers`` maps lister id to (name, instance name)."""
    name, instance = listers.get(lister_id, (None, None)) if lister_id is not None else (None, None)
    return NextVisit(url, visit_type, policy, lister_id, name, instance, extra_loader_arguments or {}, last_update)


def check_limit(limit: int | None, requests: Sequence[GrabRequest]) -> int:
    """The most a grab may take in all: ``limit``, or every request's count."""
    if limit is None:
        return sum(r.count for r in requests)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValidationError("limit", "a whole number of 0 or more", limit)
    return limit


def run_picks(requests: Sequence[GrabRequest], total: int,
              pick: Callable[[str, int], Sequence[tuple]]) -> list[tuple[VisitPolicy, tuple]]:
    """A grab's walk through its requests: each policy's picks tried in order, none taking more
    than the request's count or the room left under ``total``. ``pick(name, limit)`` runs the
    named pick (and marks what it took) and returns its rows."""
    picked: list[tuple[VisitPolicy, tuple]] = []
    for request in requests:
        remaining = min(request.count, total - len(picked))
        for name in POLICY_PICKS[request.policy]:
            if remaining <= 0:
                break
            rows = pick(name, remaining)
            picked.extend((request.policy, row) for row in rows)
            remaining -= len(rows)
    return picked


def picked_schedules(rows: Sequence[Schedule], tags: Sequence[str], run_ids: Mapping[str, int], *, node: str,
                     owner_name: str, now: datetime) -> list[tuple[Schedule, ScheduleRun]]:
    """The schedules a pick took, as now owned, with their open runs."""
    picked = []
    for row, tag in zip(rows, tags):
        schedule = replace(row, owner_started_at=now, owner_node=node, owner_name=owner_name, owner_tag=tag,
                           owner_last_ping_at=now, steal_start_at=None)
        picked.append((schedule, ScheduleRun(run_ids[schedule.name], schedule.name, tag, node, owner_name, now, None,
                                             RunStatus.RUNNING, {})))
    return picked


# -- change_rate_optimal's threshold -----------------------------------------------
#: below this many rows a sample reads the whole table
SMALL_TABLE = 50_000
#: a page sample reads this many times the rows asked for (other visit types, disabled origins)
SAMPLE_OVERREAD = 3


#: the schedule pick's choice of walk: when fewer schedules than this can start now (the steady
#: state: most periodic schedules sit in their cooldown), it reads all of them through the wake
#: index (can_start_by order) and sorts them by should_start_by; when more can, it walks the pick
#: index (should_start_by order), which meets one that can start within a few rows. Either way the
#: cost is bounded by the window or the batch, not by the number of schedules.
PICK_WINDOW = 1000


def pick_query(queries: Any, startable: int) -> str:
    """The pick query for ``startable`` schedules that can start (counted up to :data:`PICK_WINDOW`)."""
    return queries.pick_few_schedules if startable < PICK_WINDOW else queries.pick_schedule


def task_activity(read: Callable[..., list], queries: Any, task_types: Sequence[TaskType], now: Any,
                  row_to_run: Callable[[Mapping[str, Any]], Any], *, count_cap: int, runs_window: int,
                  failures_limit: int) -> TaskActivity:
    """``Store.task_activity`` over a dialect's ``read(query, params)``, its named ``queries``, its
    ``now`` as the database takes it, and its run-row reader: the same four queries on both."""
    for name, value in (("count_cap", count_cap), ("runs_window", runs_window), ("failures_limit", failures_limit)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValidationError(name, "a positive whole number", value)
    ready = {}
    for task_type in task_types:
        rows = read(queries.count_ready_tasks, {"type": task_type.type, "now": now, "cap": count_cap})
        ready[task_type.type] = min(int(rows[0]["ready"]), count_cap)
    in_flight = {r["type"]: int(r["in_flight"]) for r in read(queries.in_flight_runs_by_type, {"cap": count_cap})}
    window = {"window": runs_window}
    failed = {r["type"]: int(r["failed"]) for r in read(queries.recent_failed_runs_by_type, window)}
    recent = tuple((r["task_type"], row_to_run(r))
                   for r in read(queries.recent_failed_runs, {**window, "limit": failures_limit}))
    return TaskActivity(ready, in_flight, count_cap, failed, runs_window, recent)


def thin_sample(found: list[Any], size: int, seed: int) -> list[Any]:
    """At most ``size`` of ``found``, chosen at random (reproducibly)."""
    if len(found) <= size:
        return found
    return random.Random(seed).sample(found, size)


def check_revisit_threshold(threshold: RevisitThreshold) -> None:
    """ValidationError naming the field unless the threshold can be stored."""
    if not isinstance(threshold.visit_type, str) or not threshold.visit_type.strip():
        raise ValidationError("visit_type", "a visit type such as git", threshold.visit_type)
    for name in ("threshold", "visits_per_day"):
        value = getattr(threshold, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValidationError(name, "a positive number", value)
    if isinstance(threshold.origins, bool) or not isinstance(threshold.origins, int) or threshold.origins < 0:
        raise ValidationError("origins", "a whole number of 0 or more", threshold.origins)
    if not isinstance(threshold.computed_at, datetime) or threshold.computed_at.tzinfo is None:
        raise ValidationError("computed_at", "a time with a zone", threshold.computed_at)


def arguments_digest(arguments_json: str) -> bytes:
    """The md5 of a task's canonical arguments (``TaskArguments.to_json()``): what PostgreSQL keeps in
    ``task.arguments_digest``, which the duplicate check of ``create_tasks`` and the imports' check that
    an id is the same task probe."""
    return hashlib.md5(arguments_json.encode(), usedforsecurity=False).digest()


# -- imports: records written as given ------------------------------------------------
def checked_records(records: Sequence[Any], check: Callable[[Any], Any], where: Callable[[int, Any], str]) -> list[Any]:
    """Every record of an import batch checked before a store writes any: a bad one is a
    ValidationError located at ``where(index, record)`` (``task 17``, ``origin 3``)."""
    checked = list(records)
    for index, record in enumerate(checked):
        try:
            check(record)
        except ValidationError as exc:
            raise exc.at(where(index, record)) from None
    return checked


def at_index(kind: str) -> Callable[[int, Any], str]:
    """``kind N``, N the record's place in the batch."""
    return lambda index, _record: f"{kind} {index}"


def at_id(kind: str) -> Callable[[int, Any], str]:
    """``kind ID``, ID the record's own id when it is a whole number, else its place in the batch."""
    return lambda index, record: f"{kind} {record.id}" if type(getattr(record, "id", None)) is int else f"{kind} {index}"
