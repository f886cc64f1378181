"""The protocol's task operations (``task_type/*``, ``task/*``, ``task_run/*``) on the store's
task verbs; where swh-scheduler answers differently from Ostinato, its answer (see
docs/reference/swh-compat.md, "Tasks")."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from dateutil import parser as dateutil_parser

from ...domain.errors import ConflictError, ValidationError
from ...domain.tasks import (
    NewTask,
    NewTaskRun,
    RunEvent,
    Task,
    TaskArguments,
    TaskPolicy,
    TaskRun,
    TaskRunStatus,
    TaskStatus,
    TaskType,
    parse_priority,
)
from . import models
from .operations import (
    Context,
    Param,
    arg,
    ids_arg,
    model_arg,
    models_arg,
    now_or,
    operation,
    texts_arg,
    time_arg,
)
from .wire import Model

#: what a peek or grab without ``num_tasks`` takes at most (the protocol's "no limit")
UNLIMITED_GRAB = 10_000
_PAGE = 1000


def task_type_model(task_type: TaskType) -> Any:
    return models.make(
        "TaskType", type=task_type.type, description=task_type.description, backend_name=task_type.backend_name,
        default_interval=task_type.default_interval, min_interval=task_type.min_interval,
        max_interval=task_type.max_interval,
        backoff_factor=None if task_type.backoff_factor is None else float(task_type.backoff_factor),
        max_queue_length=task_type.max_queue_length, num_retries=task_type.num_retries,
        retry_delay=task_type.retry_delay)


def task_model(task: Task) -> Any:
    # every field given, in the client's order (models.make's checks cost a third of a grab's encoding)
    arguments = Model("TaskArguments", {"args": list(task.arguments.args), "kwargs": dict(task.arguments.kwargs)})
    return Model("Task", {
        "type": task.type, "arguments": arguments, "next_run": task.next_run, "status": task.status.value,
        "policy": task.policy.value, "retries_left": task.retries_left, "id": task.id,
        "current_interval": task.current_interval, "priority": task.priority.value if task.priority else None})


def task_run_model(run: TaskRun) -> Any:
    # a run scheduled in bulk without metadata has none (null) until an event gives it some, as in the protocol
    return models.make(
        "TaskRun", task=run.task, id=run.id, backend_id=run.backend_id, scheduled=run.scheduled, started=run.started,
        ended=run.ended, metadata=None if run.metadata is None else dict(run.metadata), status=run.status.value)


# -- task types ------------------------------------------------------------------------
@operation("task_type/create", task_type=model_arg("TaskType"))
def create_task_type(ctx: Context, task_type: dict[str, Any]) -> None:
    try:
        # kept as given, as the protocol's store keeps it (a backoff factor of 1, retries with no delay, …)
        ctx.tasks.create_task_type(TaskType(**task_type).validated(strict=False), strict=False)
    except ConflictError:
        pass  # the protocol's create is idempotent: a type of that name stays as it is


@operation("task_type/get", "read", task_type_name=arg(models.TEXT))
def get_task_type(ctx: Context, task_type_name: str) -> Any:
    task_type = ctx.tasks.get_task_type(task_type_name)
    return None if task_type is None else task_type_model(task_type)


@operation("task_type/get_all", "read")
def get_task_types(ctx: Context) -> list[Any]:
    return [task_type_model(t) for t in ctx.tasks.list_task_types()]


# -- tasks ------------------------------------------------------------------------------
@operation("task/create", tasks=models_arg("Task"), policy=arg(models.choice(*models.TASK_POLICIES), "recurring"))
def create_tasks(ctx: Context, tasks: list[dict[str, Any]], policy: str) -> list[Any]:
    types = {t.type: t for t in ctx.tasks.list_task_types()}
    new = []
    for index, task in enumerate(tasks):
        task_type = types.get(task["type"])
        if task_type is None:
            raise ValidationError(f"tasks[{index}].type", "a task type created before", task["type"])
        # every task gets its type's interval, as the protocol's store gives it (one given is not kept there)
        interval = task_type.default_interval
        arguments = TaskArguments.parse(task["arguments"], f"tasks[{index}].arguments")
        new.append(NewTask(task["type"], task["next_run"], arguments, TaskPolicy(task["policy"] or policy),
                           parse_priority(task["priority"]), interval, task["retries_left"], TaskStatus(task["status"])))
    # the protocol keeps one-shot tasks apart by next_run, and intervals as they are
    created = ctx.tasks.create_tasks(new, one_shot_by_next_run=True, clamp=False)
    seen: set[int] = set()
    answer = []
    for stored in created:  # the protocol answers each task once, however often it was given
        if stored.id not in seen:
            seen.add(stored.id)
            answer.append(task_model(stored))
    return answer


@operation("task/set_status", task_ids=ids_arg(), status=arg(models.TEXT, "disabled"),
           next_run=time_arg(), except_completed_tasks=arg(models.BOOL, False))
def set_status_tasks(ctx: Context, task_ids: list[int], status: str, next_run: datetime | None,
                     except_completed_tasks: bool) -> None:
    if not task_ids:
        return  # nothing to set: the protocol's store looks at nothing else
    models.choice(*models.TASK_STATUSES)(status, "status")
    ctx.compat.overwrite_task_status(task_ids, TaskStatus(status), next_run=next_run,
                                    except_completed_before=ctx.clock.now() if except_completed_tasks else None)


@operation("task/disable", task_ids=ids_arg())
def disable_tasks(ctx: Context, task_ids: list[int]) -> None:
    set_status_tasks(ctx, task_ids, "disabled", None, False)


def _id_or_ids(value: Any, name: str) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, str) and value.isdigit():
        return [int(value)]
    if isinstance(value, list):
        return [models.WHOLE(v, f"{name}[{i}]") for i, v in enumerate(value)]
    raise ValidationError(name, "a task id or a list of them", value)


@operation("task/search", "read", task_id=Param(_id_or_ids, None), task_type=texts_arg(), status=texts_arg(),
           priority=texts_arg(), policy=arg(models.choice(*models.TASK_POLICIES, null=True), None),
           before=time_arg(), after=time_arg(), limit=arg(models.nullable(models.WHOLE), None))
def search_tasks(ctx: Context, task_id: list[int] | None, task_type: list[str] | None, status: list[str] | None,
                 priority: list[str] | None, policy: str | None, before: datetime | None, after: datetime | None,
                 limit: int | None) -> list[Any]:
    statuses = [TaskStatus(s) for s in status] if status else None
    priorities = [parse_priority(p) for p in priority] if priority else None

    def wanted(task: Task) -> bool:
        return ((not task_id or task.id in task_id) and (not task_type or task.type in task_type)
                and (statuses is None or task.status in statuses) and (policy is None or task.policy.value == policy)
                and (priorities is None or task.priority in priorities)
                and (before is None or task.next_run <= before) and (after is None or task.next_run >= after))

    found: list[Task] = []
    if task_id:
        found = [t for t in ctx.tasks.get_tasks(sorted(set(task_id))) if wanted(t)]
    else:
        types: list[str | None] = list(task_type) if task_type else [None]  # None: every type
        for one_type in types:
            after_id = 0
            while True:
                page = ctx.tasks.search_tasks(task_type=one_type, status=statuses, policy=TaskPolicy(policy) if policy else None,
                                              priority=priorities, before=before, after_id=after_id, limit=_PAGE)
                found.extend(t for t in page if wanted(t))
                if len(page) < _PAGE or (limit and len(found) >= limit):
                    break
                after_id = page[-1].id
        found.sort(key=lambda t: t.id)
    return [task_model(t) for t in (found[:limit] if limit else found)]


@operation("task/get", "read", task_ids=ids_arg())
def get_tasks(ctx: Context, task_ids: list[int]) -> list[Any]:
    return [task_model(t) for t in ctx.tasks.get_tasks(sorted(set(task_ids)))]


def _ready(ctx: Context, task_type: str, timestamp: datetime | None, num_tasks: int | None, *,
           priority: bool, grab: bool) -> list[Any]:
    now = now_or(ctx, timestamp)
    limit = num_tasks if num_tasks is not None else UNLIMITED_GRAB
    if limit <= 0:
        return []
    # tasks of any priority, by next run, as the protocol's store orders them
    if grab:
        return [task_model(run.task) for run in ctx.tasks.grab_ready_tasks(task_type, now, limit, priority=priority,
                                                                           by_next_run=True)]
    return [task_model(t) for t in ctx.tasks.peek_ready_tasks(task_type, now, limit, priority=priority, by_next_run=True)]


_READY = dict(task_type=arg(models.TEXT), timestamp=time_arg(), num_tasks=arg(models.nullable(models.WHOLE), None))


@operation("task/peek_ready", "read", **_READY)
def peek_ready_tasks(ctx: Context, task_type: str, timestamp: datetime | None, num_tasks: int | None) -> list[Any]:
    return _ready(ctx, task_type, timestamp, num_tasks, priority=False, grab=False)


@operation("task/grab_ready", **_READY)
def grab_ready_tasks(ctx: Context, task_type: str, timestamp: datetime | None, num_tasks: int | None) -> list[Any]:
    return _ready(ctx, task_type, timestamp, num_tasks, priority=False, grab=True)


@operation("task/peek_ready_with_priority", "read", **_READY)
def peek_ready_priority_tasks(ctx: Context, task_type: str, timestamp: datetime | None, num_tasks: int | None) -> list[Any]:
    return _ready(ctx, task_type, timestamp, num_tasks, priority=True, grab=False)


@operation("task/grab_ready_with_priority", **_READY)
def grab_ready_priority_tasks(ctx: Context, task_type: str, timestamp: datetime | None, num_tasks: int | None) -> list[Any]:
    return _ready(ctx, task_type, timestamp, num_tasks, priority=True, grab=True)


# -- task runs ----------------------------------------------------------------------------
@operation("task_run/schedule_one", task_id=arg(models.WHOLE), backend_id=arg(models.TEXT),
           metadata=arg(models.nullable(models.MAP), None), timestamp=time_arg())
def schedule_task_run(ctx: Context, task_id: int, backend_id: str, metadata: dict[str, Any] | None,
                      timestamp: datetime | None) -> Any:
    runs = ctx.compat.schedule_task_runs([NewTaskRun(task_id, backend_id, now_or(ctx, timestamp), metadata or {})])
    return task_run_model(runs[0])


@operation("task_run/schedule", task_runs=models_arg("TaskRun"))
def mass_schedule_task_runs(ctx: Context, task_runs: list[dict[str, Any]]) -> None:
    new = []
    for index, run in enumerate(task_runs):
        if run["task"] is None:
            raise ValidationError(f"task_runs[{index}].task", "the id of a task", None)
        new.append(NewTaskRun(run["task"], run["backend_id"], run["scheduled"], run["metadata"]))
    ctx.compat.schedule_task_runs(new, answer=False)  # the protocol answers nothing


def _run_event(ctx: Context, backend_id: str, status: TaskRunStatus, metadata: dict[str, Any] | None,
               timestamp: datetime | None, *, ends: bool = False) -> Any:
    runs = ctx.compat.get_task_runs_by_backend_id([backend_id])
    if not runs:
        return None
    at = now_or(ctx, timestamp)
    if status.is_final:
        # the protocol moves a task whenever one of its runs ends (again, for a second end), even a run
        # scheduled for a task that was never grabbed: such a task is marked as waiting on its run first, so
        # the store moves it (a disabled or completed task stays as it is; docs/reference/swh-compat.md, "Tasks")
        tasks = sorted({run.task for run in runs})
        waiting = [t.id for t in ctx.tasks.get_tasks(tasks) if t.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED]
        if waiting:
            ctx.compat.overwrite_task_status(waiting, TaskStatus.NEXT_RUN_SCHEDULED)
    # each event as told, as the protocol applies it: a start after the end, a second end (an executor's retry)
    # (an end told with a status that is no end stamps the end and that status, as the protocol's store does)
    ctx.tasks.record_run_events([RunEvent(run.id, status, at, metadata=metadata or {}, ends=ends) for run in runs],
                                as_told=True)
    updated = ctx.compat.get_task_runs_by_backend_id([backend_id])
    return task_run_model(updated[-1]) if updated else None


@operation("task_run/start", backend_id=arg(models.TEXT), metadata=arg(models.nullable(models.MAP), None),
           timestamp=time_arg())
def start_task_run(ctx: Context, backend_id: str, metadata: dict[str, Any] | None, timestamp: datetime | None) -> Any:
    return _run_event(ctx, backend_id, TaskRunStatus.STARTED, metadata, timestamp)


@operation("task_run/end", backend_id=arg(models.TEXT), status=arg(models.choice(*models.TASK_RUN_STATUSES)),
           metadata=arg(models.nullable(models.MAP), None), timestamp=time_arg())
def end_task_run(ctx: Context, backend_id: str, status: str, metadata: dict[str, Any] | None,
                 timestamp: datetime | None) -> Any:
    return _run_event(ctx, backend_id, TaskRunStatus(status), metadata, timestamp, ends=True)


@operation("task_run/get", "read", task_ids=ids_arg(), limit=arg(models.nullable(models.WHOLE), None))
def get_task_runs(ctx: Context, task_ids: list[int], limit: int | None) -> list[Any]:
    runs: list[TaskRun] = []
    for task_id in dict.fromkeys(task_ids):
        after_id = 0
        while True:
            page = ctx.tasks.list_task_runs(task_id=task_id, after_id=after_id, limit=_PAGE)
            runs.extend(page)
            if len(page) < _PAGE or (limit and len(runs) >= limit):
                break
            after_id = page[-1].id
        if limit and len(runs) >= limit:
            break
    return [task_run_model(r) for r in (runs[:limit] if limit else runs)]


# -- archival ------------------------------------------------------------------------------
#: the words PostgreSQL reads as times, which the protocol's store passes to it: relative to now, at UTC
_TIME_WORDS = {"now": 0, "today": 0, "yesterday": -1, "tomorrow": 1}


def _day_arg(value: Any, name: str) -> datetime | str:
    """A date or time as the protocol's store takes it (its database reads the text): a time, ISO 8601 text
    with or without a zone (UTC then), the words now, today, yesterday, tomorrow, epoch, or any other form
    of a date dateutil reads; the words are resolved against the clock by :func:`_resolve_day`."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _TIME_WORDS or text.lower() == "epoch":
            return text.lower()
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            try:
                parsed = dateutil_parser.parse(text)
            except (ValueError, OverflowError):
                raise ValidationError(name, "a date or time, e.g. 2026-11-22 or 2026-11-22T10:00:00+00:00", value) from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValidationError(name, "a date or time, e.g. 2026-11-22", value)


def _resolve_day(value: datetime | str, now: datetime) -> datetime:
    if isinstance(value, datetime):
        return value
    if value == "epoch":
        return datetime(1970, 1, 1, tzinfo=UTC)
    if value == "now":
        return now
    midnight = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight + timedelta(days=_TIME_WORDS[value])


def jsonb_text(value: Any) -> str:
    """``value`` as the protocol's store writes a document it read back from PostgreSQL (``json.dumps`` of
    a ``jsonb``): keys in jsonb's order (shorter first, then by their bytes), Python's default separators,
    non-ASCII escaped."""
    return json.dumps(_jsonb_order(value))


def _jsonb_order(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonb_order(value[key]) for key in sorted(value, key=lambda k: (len(k.encode()), k.encode()))}
    if isinstance(value, list):
        return [_jsonb_order(item) for item in value]
    return value


def _page_token(value: Any, name: str) -> tuple[int, int]:
    """The (task id, run id) a page starts after: its token is "TASK-RUN", from the previous page."""
    if value is None:
        return (0, 0)
    parts = value.split("-") if isinstance(value, str) else []
    if len(parts) != 2 or not all(p.isdigit() and len(p) < 20 for p in parts):
        raise ValidationError(name, "a token from a previous page", value)
    return (int(parts[0]), int(parts[1]))


def _archive_row(task: Task, run: TaskRun) -> dict[str, Any]:
    return {
        "task_id": task.id, "task_policy": task.policy.value, "task_status": task.status.value, "task_run_id": run.id,
        "arguments": {"args": {i: v for i, v in enumerate(task.arguments.args)},
                      "kwargs": jsonb_text(dict(task.arguments.kwargs))},
        "type": task.type, "backend_id": run.backend_id,
        "metadata": None if run.metadata is None else dict(run.metadata), "scheduled": run.scheduled,
        "started": run.started, "ended": run.ended, "task_run_status": run.status.value,
    }


@operation("task/filter_for_archive", "read", after_ts=Param(_day_arg), before_ts=Param(_day_arg),
           limit=arg(models.WHOLE, 10), page_token=Param(_page_token, (0, 0)))
def filter_task_to_archive(ctx: Context, after_ts: datetime | str, before_ts: datetime | str, limit: int,
                           page_token: tuple[int, int]) -> dict[str, Any]:
    # the runs dated in [after_ts, before_ts) of the tasks over by the protocol's rule, paged by (task, run):
    # the token names the last row answered, so a task whose runs straddle two pages loses none
    # (docs/reference/swh-compat.md, "Tasks")
    now = ctx.clock.now()
    found = ctx.compat.list_runs_to_archive(_resolve_day(after_ts, now), _resolve_day(before_ts, now),
                                            after_run=page_token, limit=limit + 1)
    rows = [_archive_row(task, run) for task, run in found[:limit]]
    if len(found) > limit and rows:
        return {"tasks": rows, "next_page_token": f"{rows[-1]['task_id']}-{rows[-1]['task_run_id']}"}
    return {"tasks": rows}


def _archived_pairs(value: Any, name: str) -> list[tuple[int, int]]:
    if not isinstance(value, list):
        raise ValidationError(name, "a list of {task_id, task_run_id}", value)
    pairs = []
    for index, item in enumerate(value):
        if not isinstance(item, dict) or "task_id" not in item or "task_run_id" not in item:
            raise ValidationError(f"{name}[{index}]", "an object {task_id, task_run_id}", item)
        pairs.append((models.WHOLE(item["task_id"], f"{name}[{index}].task_id"),
                      models.WHOLE(item["task_run_id"], f"{name}[{index}].task_run_id")))
    return pairs


@operation("task/delete_archived", task_ids=Param(_archived_pairs))
def delete_archived_tasks(ctx: Context, task_ids: list[tuple[int, int]]) -> None:
    # these runs, then the tasks no run is left of, as the protocol's store cleans up after an archive
    ctx.compat.delete_archived_runs(sorted({task for task, _ in task_ids}), sorted({run for _, run in task_ids}))
