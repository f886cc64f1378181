"""Dialect-free helpers the stores share: batch preparation and result ordering."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ..domain.errors import ValidationError
from ..domain.tasks import NewTask, Task, TaskType, prepare_new_task

DedupKey = tuple[str, str, str, str | None]


def prepare_task_batch(
    tasks: Sequence[NewTask], lookup_types: Callable[[set[str]], Mapping[str, TaskType]]
) -> tuple[list[NewTask], dict[DedupKey, NewTask]]:
    """Validate a batch of new tasks against their types; return them and the distinct ones by key.

    Raises ValidationError (located at ``task N``) on the first bad task: the
    caller has written nothing yet.
    """
    types = lookup_types({t.type for t in tasks})
    prepared: list[NewTask] = []
    unique: dict[DedupKey, NewTask] = {}
    for index, task in enumerate(tasks):
        task_type = types.get(task.type)
        try:
            if task_type is None:
                raise ValidationError("type", "a known task type (see `ostinato task-type list`)", task.type)
            ready = prepare_new_task(task, task_type)
        except ValidationError as exc:
            raise exc.at(f"task {index}") if len(tasks) > 1 else exc from None
        prepared.append(ready)
        unique.setdefault(ready.dedup_key(), ready)
    return prepared, unique


def task_key(task: Task) -> DedupKey:
    return (task.type, task.arguments.to_json(), task.policy.value, task.priority.value if task.priority else None)


def in_input_order(prepared: Sequence[NewTask], stored: Sequence[Task]) -> list[Task]:
    by_key = {task_key(t): t for t in stored}
    return [by_key[t.dedup_key()] for t in prepared]
