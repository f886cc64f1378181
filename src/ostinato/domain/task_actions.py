"""What an operator may do to a task, its runs and its type: the rule of a retry, and why a task type in
use is not deleted, checked by every path (the console, the API, the CLI, Python, the store RPC) through
the store's verbs, under their locks."""

from __future__ import annotations

from .tasks import Task, TaskRun, TaskRunStatus, TaskStatus

#: the runs a retry starts again from
RETRIED_RUNS = frozenset({TaskRunStatus.FAILED, TaskRunStatus.PERMFAILED, TaskRunStatus.LOST})

#: the refusal when a run of the task is still in flight (it was disabled while it ran): making it pending
#: now would let a second copy start beside the first
IN_FLIGHT = "task {id} has a run still in flight (it was disabled while running): nothing changed; wait for its end"


def retry_refusal(run: TaskRun, task: Task) -> str | None:
    """Why the task of ``run`` cannot be made pending again now after it, in words; None when it can."""
    if run.status not in RETRIED_RUNS:
        return f"run #{run.id} is {run.status.value}: only a failed, permfailed or lost run is retried"
    if task.status is TaskStatus.NEXT_RUN_SCHEDULED:
        return f"task {task.id} is running now (a run of it is in flight): nothing changed"
    if task.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED:
        return (f"task {task.id} is already pending, its next run at {task.next_run.isoformat()}: "
                "nothing changed")
    return None


def task_type_in_use(name: str, tasks: list[int], schedules: list[str], named: int) -> str:
    """The refusal of deleting a type still used: its users named (at most ``named`` of each kind)."""
    users = []
    if tasks:
        more = " and more" if len(tasks) > named else ""
        users.append(f"tasks {', '.join(str(t) for t in tasks[:named])}{more}")
    if schedules:
        more = " and more" if len(schedules) > named else ""
        users.append(f"schedules {', '.join(schedules[:named])}{more}")
    return (f"task type {name!r} is in use by {' and by '.join(users)}: nothing deleted "
            "(archive or delete those first)")


__all__ = ["IN_FLIGHT", "RETRIED_RUNS", "retry_refusal", "task_type_in_use"]
