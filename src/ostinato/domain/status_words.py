"""How a task's status and a task run's status are said to people, in one place: the console's
pages and the CLI's text read these words (``--json`` and the API keep the stored codes).

A task's stored status is the swh protocol's code (``next_run_not_scheduled``, …). One of them,
``disabled``, covers two different stories: a person disabled the task, or its runs did (a one-shot
task whose last run failed with no retry left, or any task whose last run failed for good, see
:func:`~ostinato.domain.tasks.apply_run_outcome`). Given the task's last run, :func:`task_status_words`
tells them apart: the second reads ``failed``.
"""

from __future__ import annotations

from .tasks import Task, TaskPolicy, TaskRunStatus, TaskStatus

#: a task's status in words
TASK_STATUS_WORDS: dict[TaskStatus, str] = {
    TaskStatus.NEXT_RUN_NOT_SCHEDULED: "pending",
    TaskStatus.NEXT_RUN_SCHEDULED: "in flight",
    TaskStatus.COMPLETED: "completed",
    TaskStatus.DISABLED: "disabled",
}
#: a disabled task whose runs disabled it (:func:`failed_for_good`)
FAILED = "failed"
#: a task run's status in words (the others are words already)
RUN_STATUS_WORDS: dict[TaskRunStatus, str] = {s: s.value for s in TaskRunStatus} | {
    TaskRunStatus.PERMFAILED: "failed for good",
}


def failed_for_good(task: Task, last_run: TaskRunStatus | None) -> bool:
    """Whether ``task`` is disabled because its runs failed rather than by a person: its last run
    (``last_run``, None when unknown) failed for good, or failed or was lost on a one-shot task
    with no retry left."""
    if task.status is not TaskStatus.DISABLED or last_run is None:
        return False
    if last_run is TaskRunStatus.PERMFAILED:
        return True
    return task.policy is TaskPolicy.ONESHOT and last_run in (TaskRunStatus.FAILED, TaskRunStatus.LOST) \
        and task.retries_left == 0


def task_status_words(task: Task, last_run: TaskRunStatus | None = None) -> str:
    """``pending``, ``in flight``, ``completed``, ``disabled``, or ``failed`` (:func:`failed_for_good`)."""
    return FAILED if failed_for_good(task, last_run) else TASK_STATUS_WORDS[task.status]


def with_code(words: str, code: str) -> str:
    """``pending (next_run_not_scheduled)``: the words, and the stored code when it differs (for a
    reader who greps or types it, as ``--status`` takes it)."""
    return words if words == code else f"{words} ({code})"
