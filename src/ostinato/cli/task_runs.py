"""``ostinato task-run``: list task runs."""

from __future__ import annotations

import click

from ..domain.tasks import TaskRunStatus, parse_run_status
from .app import AppContext, command_group, pass_app
from .output import DomainChoice, WholeNumberType, echo_json, format_elapsed, format_time, plural, print_table, short_error

RUN_STATUSES = [s.value for s in TaskRunStatus]


@command_group("task-run", "Inspect task runs.")
def task_run() -> None:
    pass


@task_run.command("list")
@click.option("--task", "task_id", type=WholeNumberType(1, field="task"), help="Only the runs of this task.")
@click.option("--status", "statuses", multiple=True, type=DomainChoice(parse_run_status, RUN_STATUSES), help="Only this status (repeatable).")
@click.option("--limit", type=WholeNumberType(1), default=100, show_default=True, help="Most runs to show.")
@click.option("--after-id", type=WholeNumberType(0), default=0, help="Only runs with a larger id (paging).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def list_runs(app: AppContext, task_id: int | None, statuses: tuple[TaskRunStatus, ...], limit: int, after_id: int, as_json: bool) -> None:
    """List task runs by id."""
    runs = app.read_store().list_task_runs(task_id=task_id, status=list(statuses) or None, after_id=after_id, limit=limit)
    if as_json:
        echo_json([r.to_dict() for r in runs])
        return
    rows = [
        {
            "id": r.id,
            "task": r.task,
            "status": r.status.value,
            "scheduled": format_time(r.scheduled),
            "started": format_time(r.started),
            "ended": format_time(r.ended),
            "took": format_elapsed(r.ended - r.started) if r.ended and r.started else "",
            "backend_id": r.backend_id,
            "error": short_error(r.metadata or {}),
        }
        for r in runs
    ]
    columns = [("id", "Id"), ("task", "Task"), ("status", "Status"), ("scheduled", "Scheduled"), ("started", "Started"),
               ("ended", "Ended"), ("took", "Took"), ("backend_id", "Backend id")]
    if any(row["error"] for row in rows):  # why runs failed, on their line (task show --runs: the traceback too)
        columns.append(("error", "Error"))
    print_table(rows, columns, title=plural(len(runs), "task run"))
    if len(runs) == limit:
        click.echo(f"(more may follow: --after-id {runs[-1].id})")
