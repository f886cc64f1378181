"""The tasks role's batch helpers, free of any dialect: a batch of new tasks checked against
their types and keyed for the duplicate check, and the answer put back in input order."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping, Sequence

from ...domain.errors import ValidationError
from ...domain.limits import MAX_TYPE_BYTES, check_stored_text
from ...domain.tasks import NewTask, Task, TaskPolicy, TaskType, prepare_new_task

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
        key = (*ready.dedup_key(), apart_by(ready.policy, ready.next_run, one_shot_by_next_run))
        keys.append(key)
        unique.setdefault(key, ready)
    return keys, unique


def apart_by(policy: TaskPolicy | str, next_run: datetime, one_shot_by_next_run: bool) -> datetime | None:
    """The last part of a deduplication key: the next run of a one-shot task kept apart by it, else None."""
    return next_run if one_shot_by_next_run and policy == TaskPolicy.ONESHOT else None


def in_input_order(keys: Sequence[DedupKey], stored: Mapping[DedupKey, Task]) -> list[Task]:
    return [stored[key] for key in keys]


@dataclass(frozen=True, slots=True)
class DuplicateProbe:
    """One key of ``find_pending_duplicates`` (a record of ``Dialect.records``): a next run of None matches any."""

    type: str
    digest: Any
    arguments: str
    policy: str
    priority: str | None
    next_run: datetime | None


@dataclass(frozen=True, slots=True)
class TaskRow:
    """One task of ``insert_tasks`` (a record of ``Dialect.records``): its arguments as canonical JSON."""

    type: str
    arguments: str
    digest: Any
    next_run: datetime
    current_interval: timedelta | None
    policy: str
    retries_left: int
    priority: str | None
