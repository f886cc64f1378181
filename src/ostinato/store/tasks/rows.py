"""The tasks role's rows read back as the domain's records, once for both dialects: each value
through the dialect's read conversions (``store/dialect.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...domain.tasks import (
    POLICY_OF,
    PRIORITY_OF,
    RUN_STATUS_OF,
    STATUS_OF,
    Task,
    TaskArguments,
    TaskRun,
    TaskType,
)
from ..dialect import Dialect, Row

#: the arguments of a task read without them (the outcome rules never read them)
NO_ARGUMENTS = TaskArguments()


def task_type_params(db: Dialect, task_type: TaskType) -> dict[str, Any]:
    """A task type as the parameters of its row (the inverse of :func:`task_type_of`)."""
    interval = db.interval
    backoff = task_type.backoff_factor
    return {"type": task_type.type, "description": task_type.description, "backend_name": task_type.backend_name,
            "default_interval": interval(task_type.default_interval), "min_interval": interval(task_type.min_interval),
            "max_interval": interval(task_type.max_interval),
            "backoff_factor": None if backoff is None else float(backoff),
            "max_queue_length": task_type.max_queue_length, "num_retries": task_type.num_retries,
            "retry_delay": interval(task_type.retry_delay)}


def task_type_of(db: Dialect, row: Row) -> TaskType:
    read_interval = db.read_interval
    return TaskType(
        type=row["type"],
        description=row["description"],
        backend_name=row["backend_name"],
        default_interval=read_interval(row["default_interval"]),
        min_interval=read_interval(row["min_interval"]),
        max_interval=read_interval(row["max_interval"]),
        backoff_factor=row["backoff_factor"],
        max_queue_length=row["max_queue_length"],
        num_retries=row["num_retries"],
        retry_delay=read_interval(row["retry_delay"]),
    )


def task_of(db: Dialect, row: Row) -> Task:
    arguments = db.read_json(row["arguments"])
    return Task(row["id"], row["type"], TaskArguments(tuple(arguments["args"]), arguments["kwargs"]),
                db.read_time(row["next_run"]), db.read_interval(row["current_interval"]), POLICY_OF[row["policy"]],
                STATUS_OF[row["status"]], row["retries_left"], PRIORITY_OF[row["priority"]])


def task_state_of(db: Dialect, row: Row) -> Task:
    """A task read without its arguments (``runs_with_tasks_for_update``)."""
    return Task(row["id"], row["type"], NO_ARGUMENTS, db.read_time(row["next_run"]),
                db.read_interval(row["current_interval"]), POLICY_OF[row["policy"]], STATUS_OF[row["status"]],
                row["retries_left"], PRIORITY_OF[row["priority"]])


def grabbed_tasks(db: Dialect, rows: Iterable[Sequence[Any]]) -> list[Task]:
    """The tasks of the grab's RETURNING list, read by position: the runner's hottest path."""
    read_json, read_time, read_interval = db.read_json, db.read_time, db.read_interval
    tasks = []
    for task_id, type_, arguments, next_run, interval, policy, status, retries_left, priority in rows:
        arguments = read_json(arguments)
        tasks.append(Task(task_id, type_, TaskArguments(tuple(arguments["args"]), arguments["kwargs"]),
                          read_time(next_run), read_interval(interval), POLICY_OF[policy], STATUS_OF[status],
                          retries_left, PRIORITY_OF[priority]))
    return tasks


def run_of(db: Dialect, row: Row, prefix: str = "") -> TaskRun:
    """A run from its row; ``prefix`` names the run's id, task and status columns where they sit
    beside a task's (``run_id``, ``run_task``, ``run_status``)."""
    read_time = db.read_time
    return TaskRun(
        id=row[f"{prefix}id"],
        task=row[f"{prefix}task"],
        backend_id=row["backend_id"],
        scheduled=read_time(row["scheduled"]),
        started=read_time(row["started"]),
        ended=read_time(row["ended"]),
        metadata=db.read_json(row["metadata"]),
        status=RUN_STATUS_OF[row[f"{prefix}status"]],
    )
