"""What the console's task type and task pages say beyond the definition, tasks and runs that
:mod:`.gather_drill` gathers, each in bounded reads:

- a task's status in words (:mod:`ostinato.domain.status_words`, as the CLI says it): a task
  disabled by its runs reads ``failed``, which takes its last run: on a task's page the newest row
  of its runs, on a task type's page one read of at most :data:`LAST_RUN_READ` runs for each
  disabled task shown;
- a task type's recent failures (:func:`type_failures`): its failed, permfailed or lost runs among
  the newest :data:`~.gather_main.RUNS_WINDOW` runs, the count the main page shows beside it, and
  the newest :data:`FAILURES_SHOWN` of them with their error and traceback, each leading to its
  task's row; found among the newest :data:`FAILURES_READ` failed runs of every type
  (``Store.task_activity``, the main page's read, its counts of ready and in-flight tasks capped at one);
- the schedules whose job is the type's (:func:`type_schedules`), with their condition, found among
  at most :data:`SCHEDULES_READ` schedules (by name, a page at a time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...domain.status_words import RUN_STATUS_WORDS, failed_for_good, task_status_words
from ...domain.tasks import Task, TaskRunStatus, TaskStatus
from ..request_handling import ApiContext
from . import gather_drill as drill
from .gather_drill import RunRow, TaskPage, run_row
from .gather_main import RUNS_WINDOW, ScheduleRow, schedule_rows

#: the most runs of one disabled task read to find its last (a one-shot task has a few: one, and its retries)
LAST_RUN_READ = 100
#: a task type's failed runs shown, and the most failed runs of every type read to find them
FAILURES_SHOWN = 20
FAILURES_READ = 500
#: the last lines of each one's traceback shown (its task's page shows them all)
TRACEBACK_SHOWN = 12
#: the most schedules read to find those of a task type, in pages of SCHEDULES_PAGE
SCHEDULES_READ = 10_000
SCHEDULES_PAGE = 1000
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


@dataclass(frozen=True, slots=True)
class TypeFailures:
    """A task type's recent failures (:func:`type_failures`)."""

    #: its failed, permfailed or lost runs among the newest ``runs_window`` runs (the main page's count)
    count: int
    runs_window: int
    #: the newest of them, newest first
    shown: list[RunRow]
    #: the failed runs of every type read (FAILURES_READ) held fewer of this type than it has
    partial: bool


def type_failures(ctx: ApiContext, name: str) -> TypeFailures:
    """The failed runs of task type ``name`` among the newest runs: as many as the main page counts
    beside it, the newest :data:`FAILURES_SHOWN` of them shown."""
    activity = ctx.store.task_activity(ctx.clock.now(), count_cap=1, runs_window=RUNS_WINDOW,
                                       failures_limit=FAILURES_READ)
    mine = [run_row(run) for task_type, run in activity.recent_failures if task_type == name]
    count = activity.failed.get(name, 0)
    partial = len(mine) < min(count, FAILURES_SHOWN) and len(activity.recent_failures) >= FAILURES_READ
    return TypeFailures(count, activity.runs_window, mine[:FAILURES_SHOWN], partial)


@dataclass(frozen=True, slots=True)
class TypeSchedules:
    """The schedules whose job is a task type's (:func:`type_schedules`)."""

    #: worst first, as the main page lists them
    rows: list[ScheduleRow]
    #: there are more than SCHEDULES_READ schedules: those after them, by name, were not looked at
    cut: bool


def type_schedules(ctx: ApiContext, name: str) -> TypeSchedules:
    """The schedules whose ``task_type`` is ``name``, with their condition, among the first
    :data:`SCHEDULES_READ` schedules by name."""
    found, after, read = [], "", 0
    while True:
        limit = min(SCHEDULES_PAGE, SCHEDULES_READ - read)
        batch = ctx.store.list_schedules(after=after, limit=limit)
        read += len(batch)
        found += [s for s in batch if s.task_type == name]
        if len(batch) < limit or read >= SCHEDULES_READ:
            cut = len(batch) == limit and bool(ctx.store.list_schedules(after=batch[-1].name, limit=1))
            return TypeSchedules(schedule_rows(ctx, found, ctx.clock.now()), cut)
        after = batch[-1].name
