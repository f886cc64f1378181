"""What the console's task type and task pages say beyond the definition, tasks and runs that
:mod:`.dashboard_drill` gathers, each in bounded reads:

- a task's status in words (:mod:`ostinato.domain.status_words`, as the CLI says it): a task
  disabled by its runs reads ``failed``, which takes its last run: on a task's page the newest row
  of its runs, on a task type's page one read of at most :data:`LAST_RUN_READ` runs for each
  disabled task shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.status_words import RUN_STATUS_WORDS, failed_for_good, task_status_words
from ..domain.tasks import Task, TaskRunStatus, TaskStatus
from . import dashboard_drill as drill
from .dashboard_drill import TaskPage
from .request_handling import ApiContext

#: the most runs of one disabled task read to find its last (a one-shot task has a few: one, and its retries)
LAST_RUN_READ = 100
#: a task's status as the page writes it: a symbol and words, readable without colour
TASK_SYMBOL = {"pending": "○", "in flight": "▶", "completed": "✔", "disabled": "✖", "failed": "✖"}


def task_state(task: Task, last_run: TaskRunStatus | None = None) -> str:
    """``✖ failed``, ``○ pending``: a task's status as its pages show it."""
    words = task_status_words(task, last_run)
    return f"{TASK_SYMBOL[words]} {words}"


def last_runs(ctx: ApiContext, tasks: Sequence[Task]) -> dict[int, TaskRunStatus]:
    """The last run's status of each disabled task of ``tasks`` whose runs are fewer than
    :data:`LAST_RUN_READ` (one read each); the others' words do not depend on it."""
    found = {}
    for task in tasks:
        if task.status is TaskStatus.DISABLED:
            runs = ctx.store.list_task_runs(task_id=task.id, limit=LAST_RUN_READ)
            if runs and len(runs) < LAST_RUN_READ:
                found[task.id] = runs[-1].status
    return found


def last_run_of_page(ctx: ApiContext, page: TaskPage) -> TaskRunStatus | None:
    """The status of the task's newest run, when its words depend on it (a disabled task): the first
    row of its first page; on a page of older runs, one read of the runs after the page's."""
    if page.task.status is not TaskStatus.DISABLED:
        return None
    if page.first_page:
        return page.runs[0].run.status if page.runs and not page.cut else None
    after = page.runs[0].run.id if page.runs else 0
    newer = ctx.store.list_task_runs(task_id=page.task.id, after_id=after, limit=drill.RUNS_READ)
    if len(newer) == drill.RUNS_READ:
        return None
    return newer[-1].status if newer else (page.runs[0].run.status if page.runs else None)


def task_note(page: TaskPage, last_run: TaskRunStatus | None) -> str:
    """When the task runs next, in words: the drill-down's sentence, or why a task its runs disabled is over."""
    if failed_for_good(page.task, last_run):
        why = "failed for good" if last_run is TaskRunStatus.PERMFAILED else "failed with no retry left"
        return f"its last run {why}: not run until respawned (ostinato task respawn, or Enable)"
    return page.next_run_text


def run_state(status: TaskRunStatus) -> str:
    """A run's status in words (``failed for good``)."""
    return RUN_STATUS_WORDS[status]
