"""The console's run grids: a schedule's and a task type's newest runs at a glance, a cell a run.

Like a grid view of a workflow's runs: the newest :data:`GRID_RUNS` runs in a row, oldest first (the
newest at the right end), each cell coloured by its outcome (the page's style: ``outcome-<name>``),
with a symbol and a title in words, so that the grid reads without colour and to a screen reader, and
a legend counting each outcome. Each cell links to its run:

- a schedule's run (``Store.list_schedule_runs``, one read of its newest runs) to its row in the
  schedule page's run list: ``#run-<id>`` on the page when the list shows it, else the page whose
  list starts at that run (``?before=<id + 1>#run-<id>``);
- a task type's run (``Store.recent_task_runs``: among the newest :data:`GRID_WINDOW` runs of every
  type, a bounded walk whatever the table's size) to ``/dashboard/task-runs/<id>``, which leads to
  the run's row on its task's page.

The pages call :func:`schedule_grid` and :func:`task_type_grid` (functions of the templates, as the
audit trail's are) and draw the grid with ``_run_grid.html``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

from fastapi import Request

from ...domain.schedules import RunStatus, ScheduleRun
from ...domain.tasks import TaskRun, TaskRunStatus
from ..request_handling import ApiContext, context
from .render import human_duration, templates

#: the runs a grid shows
GRID_RUNS = 50
#: the newest runs of every type a task type's grid looks among
GRID_WINDOW = 10_000

#: each outcome a cell may have: its symbol and what the legend says of it, in the legend's order
OUTCOMES: dict[str, tuple[str, str]] = {
    "succeeded": ("✔", "succeeded"),
    "failed": ("✖", "failed"),
    "lost": ("?", "lost (its runner went silent, or another took it over)"),
    "stopped": ("■", "stopped (its longest run or a blackout reached)"),
    "running": ("▶", "running"),
    "queued": ("…", "handed out, not started"),
}
_SCHEDULE_OUTCOME = {RunStatus.SUCCEEDED: "succeeded", RunStatus.SUBMITTED: "succeeded", RunStatus.FAILED: "failed",
                     RunStatus.LOST: "lost", RunStatus.STOLEN: "lost", RunStatus.STOPPED: "stopped",
                     RunStatus.RUNNING: "running"}
_TASK_OUTCOME = {TaskRunStatus.EVENTFUL: "succeeded", TaskRunStatus.UNEVENTFUL: "succeeded",
                 TaskRunStatus.FAILED: "failed", TaskRunStatus.PERMFAILED: "failed", TaskRunStatus.LOST: "lost",
                 TaskRunStatus.STARTED: "running", TaskRunStatus.SCHEDULED: "queued"}


@dataclass(frozen=True, slots=True)
class GridCell:
    run_id: int
    #: one of :data:`OUTCOMES`
    outcome: str
    #: its status as the store names it (``eventful``, ``stolen`` …)
    status: str
    #: the run in words: its number, status, when it ended (or started) and how long it took
    title: str
    href: str

    @property
    def symbol(self) -> str:
        return OUTCOMES[self.outcome][0]


@dataclass(frozen=True, slots=True)
class RunGrid:
    #: oldest first
    cells: list[GridCell]
    #: how many runs it shows at most
    limit: int
    #: a task type's grid: the newest runs of every type it looked among (None for a schedule's)
    window: int | None = None

    @property
    def legend(self) -> list[tuple[str, str, str, int]]:
        """Each outcome of :data:`OUTCOMES`: its name, symbol, words and how many cells have it."""
        counts = Counter(cell.outcome for cell in self.cells)
        return [(name, symbol, words, counts[name]) for name, (symbol, words) in OUTCOMES.items()]


def _title(run_id: int, status: str, started: datetime | None, ended: datetime | None) -> str:
    title = f"run #{run_id}: {status}"
    if ended is not None:
        title += f", ended {ended:%Y-%m-%d %H:%M:%S %Z}"
        if started is not None:
            title += f" after {human_duration(ended - started)}"
    elif started is not None:
        title += f", started {started:%Y-%m-%d %H:%M:%S %Z}"
    return title


def schedule_cells(name: str, runs: list[ScheduleRun], shown: Collection[int]) -> list[GridCell]:
    """The cells of a schedule's runs (newest first, as the store lists them), oldest first; a run whose
    row is in ``shown`` (the page's run list) links to it on the page."""
    page = f"/dashboard/schedules/{quote(name, safe='')}"
    return [GridCell(run.id, _SCHEDULE_OUTCOME.get(run.status, "failed"), run.status.value,
                     _title(run.id, run.status.value, run.started_at, run.ended_at),
                     f"#run-{run.id}" if run.id in shown else f"{page}?before={run.id + 1}#run-{run.id}")
            for run in reversed(runs)]


def task_cells(runs: list[TaskRun]) -> list[GridCell]:
    """The cells of a task type's runs (newest first, as the store lists them), oldest first."""
    return [GridCell(run.id, _TASK_OUTCOME[run.status], run.status.value,
                     _title(run.id, run.status.value, run.started, run.ended), f"/dashboard/task-runs/{run.id}")
            for run in reversed(runs)]


def schedule_grid(request: Request, name: str, shown: Collection[ScheduleRun] = ()) -> RunGrid:
    """The grid of schedule ``name``'s newest runs; ``shown``: the runs its page lists."""
    ctx: ApiContext = context(request)
    runs = ctx.store.list_schedule_runs(name, limit=GRID_RUNS)
    return RunGrid(schedule_cells(name, runs, {run.id for run in shown}), GRID_RUNS)


def task_type_grid(request: Request, task_type: str) -> RunGrid:
    """The grid of the newest runs of ``task_type``'s tasks."""
    ctx: ApiContext = context(request)
    runs = ctx.store.recent_task_runs(task_type, limit=GRID_RUNS, window=GRID_WINDOW)
    return RunGrid(task_cells(runs), GRID_RUNS, GRID_WINDOW)


templates.env.globals.update(schedule_grid=schedule_grid, task_type_grid=task_type_grid)
