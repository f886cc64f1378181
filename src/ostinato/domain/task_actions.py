"""What an operator may do to a task and its runs: the rule of a retry, checked by every path
(the console, the API, the CLI, Python, the store RPC) through the store's verb, under the run's lock."""

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


__all__ = ["IN_FLIGHT", "RETRIED_RUNS", "retry_refusal"]
