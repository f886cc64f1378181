"""``ostinato task``: create, list, show, disable, respawn, retry and archive tasks."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import click
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from ..domain.errors import NotFoundError, ValidationError
from ..domain.tasks import (
    NewTask,
    Task,
    TaskArguments,
    TaskPolicy,
    TaskPriority,
    TaskRun,
    TaskStatus,
    parse_policy,
    parse_priority,
    parse_status,
)
from ..services.archiver import archive_tasks
from ..store import Store
from .app import AppContext, command_group, pass_app
from .output import DomainChoice, DurationType, TimeType, WholeNumberType, console, echo_json, plural, print_task

POLICIES = [p.value for p in TaskPolicy]
PRIORITIES = [p.value for p in TaskPriority]
STATUSES = [s.value for s in TaskStatus]
_KEYWORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
ids_argument = click.argument("ids", metavar="ID...", nargs=-1, required=True, type=WholeNumberType(1, field="id"))


@command_group("task", "Create, inspect and archive tasks.")
def task() -> None:
    pass


# -- add ------------------------------------------------------------------------
@task.command("add")
@click.argument("type_name", metavar="TYPE")
@click.argument("args", metavar="[ARG]...", nargs=-1)
@click.option("--policy", type=DomainChoice(parse_policy, POLICIES), default="recurring", show_default=True, help="Run once or on an interval.")
@click.option("--priority", type=DomainChoice(parse_priority, PRIORITIES), help="Serve from the priority runner (default: no priority).")
@click.option("--next-run", type=TimeType(), default="now", show_default=True, help="First run on or after: now, +2h or an ISO time with a zone.")
@click.option("--interval", "current_interval", type=DurationType(), help="Interval of a recurring task (default: the type's default_interval).")
@click.option("--args-json", help='Positional arguments as a JSON array, e.g. \'["a", 1]\' (before the ARGs).')
@click.option("--kwargs-json", help='Keyword arguments as a JSON object, e.g. \'{"depth": 2}\'.')
@json_option
@pass_app
def add(
    app: AppContext,
    type_name: str,
    args: tuple[str, ...],
    policy: TaskPolicy,
    priority: TaskPriority | None,
    next_run: datetime,
    current_interval: timedelta | None,
    args_json: str | None,
    kwargs_json: str | None,
    as_json: bool,
) -> None:
    """Create a task of type TYPE, unless an equal pending one exists.

    Each ARG is a positional argument; an ARG written key=value is a keyword
    argument. Values are read as JSON when they parse (42, true, [1,2]) and as
    text otherwise.

    Example: ostinato task add load-git https://github.com/turtl/mobile depth=1 --policy oneshot
    """
    arguments = build_arguments(args, args_json, kwargs_json)
    new = NewTask(type=type_name, next_run=next_run, arguments=arguments, policy=policy, priority=priority, current_interval=current_interval)
    [stored] = app.store().create_tasks([new])
    # A new task carries the next_run asked for; an existing pending duplicate keeps its own.
    created = stored.next_run == next_run
    if as_json:
        echo_json({**stored.to_dict(), "created": created})
        return
    click.echo(f"Created task {stored.id}" if created else f"Task {stored.id} already exists")
    click.echo()
    print_task(stored, app.clock.now())


def build_arguments(args: Sequence[str], args_json: str | None, kwargs_json: str | None) -> TaskArguments:
    """Positional and keyword arguments from ``--args-json``, ``--kwargs-json`` and ``ARG``/``key=value``."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    if args_json is not None:
        value = _load_json(args_json, "a JSON array for --args-json")
        if not isinstance(value, list):
            raise ValidationError("arguments", "a JSON array for --args-json", args_json)
        positional.extend(value)
    if kwargs_json is not None:
        value = _load_json(kwargs_json, "a JSON object for --kwargs-json")
        if not isinstance(value, dict):
            raise ValidationError("arguments", "a JSON object for --kwargs-json", kwargs_json)
        keywords.update(value)
    for arg in args:
        match = _KEYWORD.fullmatch(arg)
        if match:
            keywords[match.group(1)] = _json_or_text(match.group(2))
        else:
            positional.append(_json_or_text(arg))
    return TaskArguments.parse({"args": positional, "kwargs": keywords})


def _load_json(text: str, expected: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValidationError("arguments", f"{expected} ({exc})", text) from None
    except RecursionError:
        raise ValidationError("arguments", f"{expected}, not nested thousands deep", text[:80]) from None


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


# -- list -----------------------------------------------------------------------
@task.command("list")
@click.option("-t", "--task-type", "task_type", metavar="TYPE", help="Only tasks of this type.")
@click.option("--status", "statuses", multiple=True, type=DomainChoice(parse_status, STATUSES), help="Only this status (repeatable).")
@click.option("--policy", type=DomainChoice(parse_policy, POLICIES), help="Only this policy.")
@click.option("--priority", "priorities", multiple=True, type=DomainChoice(parse_priority, PRIORITIES + ["none"]), help="Only this priority, or none (repeatable).")
@click.option("--before", type=TimeType(), help="Only tasks whose next run is at or before this time.")
@click.option("--limit", type=WholeNumberType(1), default=100, show_default=True, help="Most tasks to show.")
@click.option("--after-id", type=WholeNumberType(0), default=0, help="Only tasks with a larger id (paging).")
@json_option
@pass_app
def list_tasks(
    app: AppContext,
    task_type: str | None,
    statuses: tuple[TaskStatus, ...],
    policy: TaskPolicy | None,
    priorities: tuple[TaskPriority | None, ...],
    before: datetime | None,
    limit: int,
    after_id: int,
    as_json: bool,
) -> None:
    """List tasks matching every filter given, by id."""
    store = app.read_store()
    if task_type is not None:
        _check_type(store, task_type)
    found = store.search_tasks(
        task_type=task_type,
        status=list(statuses) or None,
        policy=policy,
        priority=list(priorities) or None,
        before=before,
        after_id=after_id,
        limit=limit,
    )
    _print_tasks(app, found, as_json, header=f"Found {plural(len(found), 'task')}")
    if not as_json and len(found) == limit:
        click.echo(f"(more may follow: --after-id {found[-1].id})")


@task.command("list-pending")
@click.argument("type_name", metavar="TYPE")
@click.option("--limit", type=WholeNumberType(1), default=100, show_default=True, help="Most tasks to show.")
@click.option("--before", type=TimeType(), default="now", show_default=True, help="Ready at this time.")
@click.option("--priority/--no-priority", default=False, help="Tasks for the priority runner, high first (default: tasks without priority).")
@json_option
@pass_app
def list_pending(app: AppContext, type_name: str, limit: int, before: datetime, priority: bool, as_json: bool) -> None:
    """Tasks of TYPE a runner would take now (changes nothing)."""
    store = app.store()
    _check_type(store, type_name)
    found = store.peek_ready_tasks(type_name, before, limit, priority=priority)
    _print_tasks(app, found, as_json, header=f"Found {len(found)} {type_name} task{'' if len(found) == 1 else 's'}", show_status=False)


@task.command("show")
@ids_argument
@click.option("--runs", is_flag=True, help="Show each task's runs too.")
@json_option
@pass_app
def show(app: AppContext, ids: tuple[int, ...], runs: bool, as_json: bool) -> None:
    """Show tasks by id."""
    store = app.read_store()
    found = _get_tasks(store, ids)
    runs_of = {t.id: _all_runs(store, t.id) for t in found} if runs else {}
    if as_json:
        echo_json([{**t.to_dict(), **({"runs": [r.to_dict() for r in runs_of[t.id]]} if runs else {})} for t in found])
        return
    now = app.clock.now()
    for index, item in enumerate(found):
        if index:
            click.echo()
        print_task(item, now, runs=runs_of.get(item.id) if runs else None)


# -- status changes -------------------------------------------------------------
@task.command("disable")
@ids_argument
@pass_app
def disable(app: AppContext, ids: tuple[int, ...]) -> None:
    """Disable tasks: they will not run until respawned."""
    store = app.store()
    _get_tasks(store, ids)
    changed = len(store.disable_tasks(list(dict.fromkeys(ids)), app.clock.now(), actor=app.actor))
    click.echo(f"Disabled {plural(changed, 'task')}" + _unchanged(len(set(ids)) - changed, "already disabled"))


@task.command("respawn")
@ids_argument
@click.option("--next-run", type=TimeType(), help="Next run of the respawned tasks (default: keep their next run).")
@pass_app
def respawn(app: AppContext, ids: tuple[int, ...], next_run: datetime | None) -> None:
    """Make completed or disabled tasks pending again, retries refilled."""
    store = app.store()
    _get_tasks(store, ids)
    changed = len(store.respawn_tasks(list(dict.fromkeys(ids)), app.clock.now(), next_run=next_run, actor=app.actor))
    click.echo(f"Respawned {plural(changed, 'task')}" + _unchanged(
        len(set(ids)) - changed, "neither completed nor disabled, or with a run still in flight"))


@task.command("retry")
@click.argument("run_id", metavar="RUN", type=WholeNumberType(1))
@pass_app
def retry(app: AppContext, run_id: int) -> None:
    """Retry after a failed, permfailed or lost run: its task pending again now, retries refilled."""
    task = app.store().retry_task_run(run_id, app.clock.now(), actor=app.actor)
    click.echo(f"Task {task.id} pending again now ({task.next_run.isoformat()}), retries refilled, after run #{run_id}")


def _unchanged(count: int, why: str) -> str:
    return f" ({count} {why}, left alone)" if count > 0 else ""


# -- archive --------------------------------------------------------------------
@task.command("archive")
@click.option("--before", type=TimeType(), required=True, help="Archive tasks whose last activity is older than this.")
@click.option("--out", default="-", show_default=True, metavar="FILE|-", help="JSON lines file to append to, or - for stdout.")
@click.option("--batch-size", type=WholeNumberType(1), default=1000, show_default=True, help="Tasks exported and deleted per batch.")
@click.option("--keep", is_flag=True, help="Export only: do not delete the archived tasks.")
@pass_app
def archive(app: AppContext, before: datetime, out: str, batch_size: int, keep: bool) -> None:
    """Export completed one-shot and disabled tasks, with their runs, as JSON lines; then delete them.

    One line per task: {"task": {...}, "runs": [...]}. Each batch is written
    and flushed before it is deleted.
    """
    store = app.store()
    err = console(stderr=True)
    progress = Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed} tasks"), TimeElapsedColumn(),
        console=err, transient=True, disable=not err.is_terminal,
    )
    with progress, click.open_file(out, "a", encoding="utf-8") as stream:
        bar = progress.add_task("exporting" if keep else "archiving", total=None)
        count = archive_tasks(
            store, before, stream, batch_size=batch_size, delete=not keep,
            on_batch=lambda n: progress.advance(bar, n),
        )
    where = "stdout" if out == "-" else out
    verb = "Exported" if keep else "Archived"
    suffix = " (kept in the database)" if keep else ""
    click.echo(f"{verb} {plural(count, 'task')} to {where}{suffix}", err=out == "-")


# -- helpers --------------------------------------------------------------------
def _check_type(store: Store, name: str) -> None:
    if store.get_task_type(name) is None:
        raise ValidationError("type", "a known task type (see `ostinato task-type list`)", name)


def _get_tasks(store: Store, ids: Sequence[int]) -> list[Task]:
    found = store.get_tasks(list(dict.fromkeys(ids)))
    missing = sorted(set(ids) - {t.id for t in found})
    if missing:
        raise NotFoundError("task", ", ".join(str(i) for i in missing))
    return found


def _all_runs(store: Store, task_id: int, page: int = 1000) -> list[TaskRun]:
    runs: list[TaskRun] = []
    while True:
        batch = store.list_task_runs(task_id=task_id, after_id=runs[-1].id if runs else 0, limit=page)
        runs.extend(batch)
        if len(batch) < page:
            return runs


def _print_tasks(app: AppContext, found: list[Task], as_json: bool, *, header: str, show_status: bool = True) -> None:
    if as_json:
        echo_json([t.to_dict() for t in found])
        return
    now = app.clock.now()
    click.echo(header)
    for item in found:
        click.echo()
        print_task(item, now, show_status=show_status)


__all__ = ["build_arguments", "task"]
