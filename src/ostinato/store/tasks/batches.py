"""The tasks role's batch helpers, free of any dialect: a batch of new tasks checked against
their types and keyed for the duplicate check part by part, and the answer put back in input order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ...domain.errors import ValidationError
from ...domain.limits import MAX_TYPE_BYTES, check_stored_text
from ...domain.tasks import NewTask, Task, TaskPolicy, TaskType, prepared_task

PENDING = "next_run_not_scheduled"

#: type, canonical arguments, policy, priority, status, and the next run of a one-shot task when the caller
#: keeps one-shot tasks apart by it (``create_tasks(one_shot_by_next_run=True)``), else None; the index of a
#: task made in another status than pending (never the same as another)
DedupKey = tuple[str, str, str, str | None, str, datetime | None, int | None]


def check_type_names(tasks: Sequence[NewTask]) -> set[str]:
    """The names of the batch's task types, each checked once: a name the database cannot even look up (NUL)
    is bad input too. Raises ValidationError (located at ``task N``, the first task naming it)."""
    names: set[str] = set()
    for index, task in enumerate(tasks):
        name = task.type
        if isinstance(name, str) and name in names:
            continue
        try:
            if not isinstance(name, str):
                raise ValidationError("type", "a task type's name", name)
            check_stored_text(name, "type", MAX_TYPE_BYTES)
        except ValidationError as exc:
            raise exc.at(f"task {index}") if len(tasks) > 1 else exc from None
        names.add(name)
    return names


def apart_by(policy: TaskPolicy | str, next_run: datetime, one_shot_by_next_run: bool) -> datetime | None:
    """The last part of a deduplication key: the next run of a one-shot task kept apart by it, else None."""
    return next_run if one_shot_by_next_run and policy == TaskPolicy.ONESHOT else None


@dataclass(slots=True)
class TaskRow:
    """One task of ``find_pending_duplicates`` and ``insert_tasks`` (a record of ``Dialect.records``): its
    arguments as canonical JSON and their digest (``Dialect.digest``), its type's defaults filled in."""

    type: str
    arguments: str
    digest: Any
    next_run: datetime
    current_interval: timedelta | None
    policy: str
    retries_left: int
    priority: str | None
    status: str


#: a task of a part: its slot in ``TaskBatch.found``, the task as given, its row
Part = tuple[int, NewTask, TaskRow]


class TaskBatch:
    """A batch of new tasks checked against their types and keyed for the duplicate check, part by part (so that
    a part is checked while the server writes the one before).

    Tasks with one deduplication key share a slot of ``found``: ``part`` answers the tasks of a part whose key no
    earlier task had, each with its row (the canonical JSON, the costly part, and its digest computed once); the
    caller fills their slots, and ``in_input_order`` gives each task its slot's."""

    def __init__(self, tasks: Sequence[NewTask], types: Mapping[str, TaskType], digest: Callable[[str], Any], *,
                 one_shot_by_next_run: bool = False, clamp: bool = True) -> None:
        self.tasks, self.types, self.digest, self.apart = tasks, types, digest, one_shot_by_next_run
        self.clamp = clamp
        self.slots: list[int] = []
        self.found: list[Task | None] = []
        self.seen: dict[DedupKey, int] = {}

    def part(self, start: int, stop: int) -> list[Part]:
        """Raises ValidationError (located at ``task N``) on the part's first bad task."""
        tasks, types, digest, apart, slots, seen = self.tasks, self.types, self.digest, self.apart, self.slots, self.seen
        found = self.found
        fresh = []
        for index in range(start, stop):
            task = tasks[index]
            task_type = types.get(task.type)
            try:
                if task_type is None:
                    raise ValidationError("type", "a known task type (see `ostinato task-type list`)", task.type)
                interval, retries, arguments = prepared_task(task, task_type, clamp=self.clamp)
            except ValidationError as exc:
                raise exc.at(f"task {index}") if len(tasks) > 1 else exc from None
            policy = task.policy.value
            priority = task.priority.value if task.priority else None
            status = task.status.value
            # only pending tasks are deduplicated (store.create_tasks): a task made in another status is new
            key = (task.type, arguments, policy, priority, status, apart_by(policy, task.next_run, apart),
                   None if status == PENDING else index)
            slot = seen.get(key)
            if slot is None:
                slot = seen[key] = len(found)
                found.append(None)
                fresh.append((slot, task, TaskRow(task.type, arguments, digest(arguments), task.next_run, interval,
                                                  policy, retries, priority, status)))
            slots.append(slot)
        return fresh

    def in_input_order(self) -> list[Task]:
        found = self.found
        return [found[slot] for slot in self.slots]  # type: ignore[misc]  # the parts received filled every slot
