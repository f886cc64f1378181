"""The tasks role: task types, tasks, their runs and the runs' outcomes, a glance at the activity, archival (see docs/design/tasks.md).

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ...domain.tasks import (
    NewTask,
    RunEvent,
    ScheduledRun,
    Task,
    TaskPolicy,
    TaskPriority,
    TaskRun,
    TaskRunStatus,
    TaskStatus,
    TaskType,
)


@dataclass(frozen=True, slots=True)
class ArchivedTask:
    task: Task
    runs: tuple[TaskRun, ...]


@dataclass(frozen=True, slots=True)
class TaskActivity:
    """What a glance at the tasks shows (see :meth:`TaskStore.task_activity`), from bounded reads."""

    #: task type → tasks ready now (status next_run_not_scheduled, next_run past), counted up to ``count_cap``
    ready: Mapping[str, int]
    #: task type → runs dispatched and not final (scheduled or started), counted up to ``count_cap`` in all
    in_flight: Mapping[str, int]
    count_cap: int
    #: task type → runs failed, permfailed or lost among the newest ``runs_window`` runs (by id)
    failed: Mapping[str, int]
    runs_window: int
    #: the newest of those runs, newest first, each with its task type
    recent_failures: tuple[tuple[str, TaskRun], ...]


#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
#: Every verb is served.
REMOTE_SCOPES: dict[str, str] = {
    "archivable_tasks": "read", "count_tasks": "read", "create_task_type": "worker", "create_tasks": "worker",
    "delete_tasks": "worker", "get_task_type": "read", "get_tasks": "read", "grab_ready_tasks": "worker",
    "in_flight_backend_ids": "read", "list_task_runs": "read", "list_task_types": "read", "mark_lost_runs": "worker",
    "peek_ready_tasks": "read", "record_run_events": "worker", "search_tasks": "read", "set_task_status": "admin",
    "task_activity": "read", "disable_tasks": "admin", "respawn_tasks": "admin", "retry_task_run": "admin",
    "add_task_type": "admin", "update_task_type": "admin", "delete_task_type": "admin", "recent_task_runs": "read",
}
NOT_REMOTE: dict[str, str] = {}


class TaskStore(abc.ABC):
    """task types, tasks, their runs and the runs' outcomes, a glance at the activity, archival (see docs/design/tasks.md)."""

    # -- task types -------------------------------------------------------
    @abc.abstractmethod
    def create_task_type(self, task_type: TaskType, *, strict: bool = True) -> TaskType:
        """Store a new task type; ConflictError if its name is taken. ``strict=False`` keeps a type the
        swh protocol's store keeps, as given (``TaskType.validated``); ValidationError naming the field
        for what cannot be kept."""

    @abc.abstractmethod
    def add_task_type(self, task_type: TaskType, now: datetime, *, actor: str) -> TaskType:
        """An operator's :meth:`create_task_type` (strict), with the audit event ``task-type.add`` of ``actor``
        in the same transaction."""

    @abc.abstractmethod
    def update_task_type(self, task_type: TaskType, now: datetime, *, fields: Sequence[str] | None = None,
                         actor: str) -> TaskType:
        """Set the knobs named in ``fields`` (every knob if None) to ``task_type``'s (its name says which type),
        the others as stored, under the type's lock, with the audit event ``task-type.update`` of ``actor``
        naming the knobs changed; the type as kept. NotFoundError if there is none, ValidationError naming
        the field for a knob that cannot be kept (nothing changed then)."""

    @abc.abstractmethod
    def delete_task_type(self, name: str, now: datetime, *, actor: str) -> None:
        """Delete a type no task and no schedule uses, with the audit event ``task-type.delete`` of ``actor``;
        NotFoundError if there is none; ConflictError naming a few of its users if it is used (nothing
        deleted). Task creators wait for it: no task of it is created meanwhile."""

    @abc.abstractmethod
    def get_task_type(self, name: str) -> TaskType | None: ...

    @abc.abstractmethod
    def list_task_types(self) -> list[TaskType]: ...

    # -- tasks ------------------------------------------------------------
    @abc.abstractmethod
    def create_tasks(self, tasks: Sequence[NewTask], *, one_shot_by_next_run: bool = False,
                     clamp: bool = True) -> list[Task]:
        """Create tasks in one transaction; return them in input order.

        A task equal to a pending one (same type, arguments, policy and priority,
        status ``next_run_not_scheduled``) is not created again: the existing one
        is returned. With ``one_shot_by_next_run`` (the swh protocol's rule, see
        docs/reference/swh-compat.md), a one-shot task is equal to a pending one
        only if its ``next_run`` is the same too. A task made in another status
        (``NewTask.status``: the swh protocol lets a caller create one disabled) is
        always new. Tasks get ids in input order. ``clamp=False`` (the swh protocol's
        store) keeps a recurring task's interval as given, outside its type's bounds
        too. Unknown task types or invalid tasks raise ValidationError and nothing is
        written.
        """

    @abc.abstractmethod
    def get_tasks(self, ids: Sequence[int]) -> list[Task]:
        """The tasks with these ids that exist, in id order."""

    @abc.abstractmethod
    def search_tasks(
        self,
        *,
        task_type: str | None = None,
        status: Sequence[TaskStatus] | None = None,
        policy: TaskPolicy | None = None,
        priority: Sequence[TaskPriority | None] | None = None,
        before: datetime | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[Task]:
        """Tasks matching every filter given, by id, paged by ``after_id``."""

    @abc.abstractmethod
    def peek_ready_tasks(self, task_type: str, now: datetime, limit: int, *, priority: bool = False,
                         by_next_run: bool = False) -> list[Task]:
        """Tasks a runner would grab now, changing nothing."""

    @abc.abstractmethod
    def grab_ready_tasks(
        self,
        task_type: str,
        now: datetime,
        limit: int,
        *,
        priority: bool = False,
        backend_id: str | None = None,
        by_next_run: bool = False,
    ) -> list[ScheduledRun]:
        """Take up to ``limit`` ready tasks and record a ``scheduled`` run for each.

        Ready: ``next_run <= now`` and status ``next_run_not_scheduled``. Without
        ``priority`` only tasks with no priority are taken, oldest ``next_run``
        first; with it only prioritised tasks, high before normal before low
        (``by_next_run``: of any priority, oldest ``next_run`` first, as the swh
        protocol's runner takes them).
        Concurrent callers never take the same task.
        """

    @abc.abstractmethod
    def set_task_status(self, ids: Sequence[int], status: TaskStatus, *, next_run: datetime | None = None) -> int:
        """Disable or respawn tasks; respawning refills retries. Returns the count changed. Not audited: for
        programs (the swh face's protocol); an operator's change goes through :meth:`disable_tasks` or
        :meth:`respawn_tasks`."""

    @abc.abstractmethod
    def disable_tasks(self, ids: Sequence[int], now: datetime, *, actor: str) -> list[int]:
        """Disable tasks (they do not run until respawned), each in one statement that checks its status,
        with the audit event ``task.disable`` of ``actor`` for each task changed, in the same transaction.
        The ids changed, in the order given (those already disabled or unknown are left out). Over the
        store RPC, ``actor`` is the token's name, whatever the client sent."""

    @abc.abstractmethod
    def respawn_tasks(self, ids: Sequence[int], now: datetime, *, next_run: datetime | None = None,
                      actor: str) -> list[int]:
        """Make completed or disabled tasks pending again, retries refilled (``next_run`` if given, else
        their own), those with no run in flight only (a task disabled while it ran waits for that run's end:
        never a second copy beside it), with the audit event ``task.enable`` of ``actor`` for each task changed (its next run
        said), in the same transaction. The ids changed, in the order given."""

    @abc.abstractmethod
    def retry_task_run(self, run_id: int, now: datetime, *, actor: str) -> Task:
        """Retry after a failed, permfailed or lost run: its task pending again at ``now``, retries refilled,
        with the audit event ``task.retry`` of ``actor``, all under the run's and the task's lock; the task.
        NotFoundError for an unknown run; ConflictError saying why when the run is not one a retry starts
        from, or the task is pending, running, or has a run still in flight (nothing changed then)."""

    # -- task runs --------------------------------------------------------
    @abc.abstractmethod
    def record_run_events(self, events: Sequence[RunEvent], *, as_told: bool = False) -> int:
        """Record runs starting and ending, and move their tasks (see docs/design/tasks.md).

        Idempotent and order-tolerant: an event for a run already final changes
        nothing. Returns the number of runs that reached a final status.
        ``as_told`` (the swh protocol's start and end): each event applies in order,
        whatever came before (``domain.tasks.fold_run_events``).
        """

    @abc.abstractmethod
    def mark_lost_runs(self, now: datetime, timeout: timedelta, *, backend_ids: Sequence[str] | None = None) -> list[int]:
        """Runs ``scheduled`` or ``started`` with no sign of life for ``timeout`` become ``lost``.

        A lost run counts as a failure of its task. With ``backend_ids``, only
        runs of those executors are considered, whatever their age (for an
        executor known to be dead). Returns the ids of the runs marked.
        """

    @abc.abstractmethod
    def in_flight_backend_ids(self, prefix: str) -> list[str]:
        """Distinct ``backend_id`` values starting with ``prefix`` of runs not yet final."""

    @abc.abstractmethod
    def list_task_runs(
        self,
        *,
        task_id: int | None = None,
        status: Sequence[TaskRunStatus] | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[TaskRun]: ...

    def recent_task_runs(self, task_type: str, *, limit: int = 50, window: int = 10_000) -> list[TaskRun]:
        """The newest runs of ``task_type``'s tasks, newest first: at most ``limit``, among the newest
        ``window`` runs of every type (a walk of the runs' primary key from its end, each run's task
        one primary key lookup: bounded, whatever the table's size). ValidationError naming the bound
        that is not a positive whole number. Implemented by the SQL stores (another store raises
        NotImplementedError)."""
        raise NotImplementedError(f"{type(self).__name__} has no recent_task_runs")

    @abc.abstractmethod
    def count_tasks(self) -> dict[tuple[str, str], int]:
        """Number of tasks per (task type, status)."""

    def task_activity(self, now: datetime, *, count_cap: int = 10_000, runs_window: int = 10_000,
                      failures_limit: int = 20) -> TaskActivity:
        """Per task type, the tasks ready at ``now`` and the runs in flight (each counted up to
        ``count_cap``: index walks of at most that many entries), the failed, permfailed or lost runs
        among the newest ``runs_window`` runs (a walk of at most that many by id), and the newest
        ``failures_limit`` of those runs. ValidationError naming the bound that is not a positive
        whole number. Implemented by the SQL stores (another store raises NotImplementedError)."""
        raise NotImplementedError(f"{type(self).__name__} has no task_activity")

    # -- archival ---------------------------------------------------------
    @abc.abstractmethod
    def archivable_tasks(self, before: datetime, *, after_id: int = 0, limit: int = 1000) -> list[ArchivedTask]:
        """Completed or disabled tasks whose last activity is older than ``before``, with their runs."""

    @abc.abstractmethod
    def delete_tasks(self, ids: Iterable[int]) -> int:
        """Delete tasks and their runs; returns the number of tasks deleted."""
