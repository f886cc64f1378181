"""``ostinato task-type``: declare, change, delete and list task types (each change audited)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import click

from ..domain.errors import NotFoundError, ValidationError, known_names
from ..domain.tasks import TaskType
from .app import AppContext, command_group, pass_app, readable
from .output import DurationType, NumberType, WholeNumberType, echo_json, format_interval


@command_group("task-type", "Declare, change, delete and list task types.")
def task_type() -> None:
    pass


def knob_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the knobs ``add`` and ``update`` both take (the default interval aside)."""
    for option in reversed((
        click.option("--min-interval", type=DurationType(), help="Shortest interval the backoff may reach."),
        click.option("--max-interval", type=DurationType(), help="Longest interval the backoff may reach."),
        click.option("--backoff-factor", type=NumberType(), help="Interval factor after a run (> 1)."),
        click.option("--max-queue-length", type=WholeNumberType(1), help="Most tasks of this type in flight."),
        click.option("--num-retries", type=WholeNumberType(0), help="Retries after a transient failure."),
        click.option("--retry-delay", type=DurationType(), help="Delay before a retry (needed when --num-retries > 0)."),
    )):
        command = option(command)
    return command


@task_type.command("add")
@click.argument("type_name", metavar="TYPE")
@click.argument("backend_name")
@click.argument("description")
@click.option("--default-interval", type=DurationType(), help="Interval of new recurring tasks (e.g. 1d); required, unless --no-default-interval.")
@click.option("--no-default-interval", "no_default_interval", is_flag=True,
              help="A type without one: its tasks run once (loaders, one-shot jobs) or are given --interval.")
@knob_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def add(
    app: AppContext,
    type_name: str,
    backend_name: str,
    description: str,
    default_interval: timedelta | None,
    no_default_interval: bool,
    min_interval: timedelta | None,
    max_interval: timedelta | None,
    backoff_factor: float | None,
    max_queue_length: int | None,
    num_retries: int | None,
    retry_delay: timedelta | None,
    as_json: bool,
) -> None:
    """Declare task type TYPE run by the callable BACKEND_NAME.

    Example: ostinato task-type add load-git myproject.tasks:load_git "Update a git origin"
    --default-interval 1d --min-interval 12h --max-interval 64d --backoff-factor 2

    BACKEND_NAME is checked here: if it cannot be imported in this process, a
    warning names the import error (it may exist only where the workers run).
    """
    candidate = TaskType(
        type=type_name,
        description=description,
        backend_name=backend_name,
        default_interval=default_interval,
        min_interval=min_interval,
        max_interval=max_interval,
        backoff_factor=backoff_factor,
        max_queue_length=max_queue_length,
        num_retries=num_retries,
        retry_delay=retry_delay,
    )
    try:
        candidate.validated()
    except ValidationError as exc:
        raise readable(exc) from None
    if default_interval is None and not no_default_interval:
        raise ValidationError("default_interval", "a duration such as 1d (--default-interval), or --no-default-interval "
                              "for a type whose tasks run once or are each given --interval", None)
    if default_interval is not None and no_default_interval:
        raise ValidationError("default_interval", "either --default-interval or --no-default-interval, not both",
                              format_interval(default_interval))
    store = app.store()
    created = store.add_task_type(candidate, app.clock.now(), actor=app.actor)
    _warn_if_not_importable(app, created)
    if as_json:
        echo_json(created.to_dict())
    else:
        click.echo(f"Created task type {created.type}.")
        _print_task_type(created, verbose=True)


#: ``task-type update``'s options: the knob each sets, and whether ``none`` clears it
_KNOBS = {"backend_name": "backend-name", "description": "description", "default_interval": "default-interval",
          "min_interval": "min-interval", "max_interval": "max-interval", "backoff_factor": "backoff-factor",
          "max_queue_length": "max-queue-length", "num_retries": "num-retries", "retry_delay": "retry-delay"}


@task_type.command("update")
@click.argument("type_name", metavar="TYPE")
@click.option("--backend-name", help="The callable its workers run.")
@click.option("--description", help="What it does, in words.")
@click.option("--default-interval", type=DurationType(), help="Interval of new recurring tasks.")
@knob_options
@click.option("--clear", "cleared", multiple=True, type=click.Choice(sorted(k for k in _KNOBS if k not in (
    "backend_name", "description"))), help="Set this knob to none (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def update(app: AppContext, type_name: str, cleared: tuple[str, ...], as_json: bool, **given: object) -> None:
    """Change the knobs of task type TYPE given as options; the others stay as they are.

    Example: ostinato task-type update load-git --max-interval 32d --clear backoff_factor
    """
    values = {k: v for k, v in given.items() if v is not None}
    if both := sorted(set(values) & set(cleared)):
        raise ValidationError(both[0], f"either --{_KNOBS[both[0]]} or --clear {both[0]}, not both", values[both[0]])
    if not values and not cleared:
        raise ValidationError("options", "at least one knob to change (see --help)", None)
    store = app.store()
    held = store.get_task_type(type_name)
    if held is None:
        known = [t.type for t in store.list_task_types()]
        raise NotFoundError("task type", repr(type_name) + known_names(type_name, known, none="none declared yet"))
    changes: dict[str, Any] = {**values, **dict.fromkeys(cleared)}
    candidate = replace(held, **changes)
    try:
        candidate.validated()
    except ValidationError as exc:
        raise readable(exc) from None
    updated = store.update_task_type(candidate, app.clock.now(), fields=[*values, *cleared], actor=app.actor)
    if as_json:
        echo_json(updated.to_dict())
    else:
        click.echo(f"Updated task type {updated.type}.")
        _print_task_type(updated, verbose=True)


@task_type.command("delete")
@click.argument("type_name", metavar="TYPE")
@pass_app
def delete(app: AppContext, type_name: str) -> None:
    """Delete task type TYPE, which no task and no schedule may use (they are named if some do)."""
    store = app.store()
    if store.get_task_type(type_name) is None:
        known = [t.type for t in store.list_task_types()]
        raise NotFoundError("task type", repr(type_name) + known_names(type_name, known, none="none declared yet"))
    store.delete_task_type(type_name, app.clock.now(), actor=app.actor)
    click.echo(f"Deleted task type {type_name}.")


@task_type.command("list")
@click.option("-v", "--verbose", is_flag=True, help="Show the scheduling knobs too.")
@click.option("-t", "--task-type", "types", multiple=True, metavar="TYPE", help="Only this type (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def list_task_types(app: AppContext, verbose: bool, types: tuple[str, ...], as_json: bool) -> None:
    """List the known task types."""
    known = app.read_store().list_task_types()
    if types:
        by_name = {t.type: t for t in known}
        for name in types:
            if name not in by_name:
                expected = "a known task type" + (f" (one of {', '.join(sorted(by_name))})" if by_name else " (none declared yet)")
                raise ValidationError("type", expected, name)
        known = [by_name[name] for name in dict.fromkeys(types)]
    if as_json:
        echo_json([t.to_dict() for t in known])
        return
    click.echo("Known task types:")
    for item in known:
        _print_task_type(item, verbose)


@task_type.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def show_task_type(app: AppContext, name: str, as_json: bool) -> None:
    """One task type, every field: its callable, its intervals, backoff, queue length and retries."""
    found = app.store().get_task_type(name)
    if found is None:
        known = [t.type for t in app.store().list_task_types()]
        raise NotFoundError("task type", repr(name) + known_names(name, known, none="none declared yet"))
    if as_json:
        echo_json(found.to_dict())
    else:
        _print_task_type(found, verbose=True)


def _warn_if_not_importable(app: AppContext, created: TaskType) -> None:
    """A warning on stderr when the type's callable cannot be imported here (a typo, or a module
    that only the workers have): the type is kept, its runs would fail until it can be."""
    from ..execution.registry import registry

    problems = []
    for module in app.settings.imports:  # where @task callables register themselves
        try:
            importlib.import_module(module)
        except Exception as exc:
            problems.append(f"the imports setting's {module!r} fails ({type(exc).__name__}: {exc})")
    problem = registry.import_problem(created.backend_name)
    if problem is None:
        return
    click.echo(f"warning: backend_name {created.backend_name!r} cannot be imported here ({problem}); "
               f"the workers that run {created.type} tasks must be able to import it"
               + "".join(f"; {p}" for p in problems), err=True)


def _print_task_type(item: TaskType, verbose: bool) -> None:
    lines = [f"{item.type}: {item.backend_name}", f"  {item.description}",
             f"  interval: {format_interval(item.default_interval)} "
             f"[{format_interval(item.min_interval)}, {format_interval(item.max_interval)}]"]
    if verbose:
        lines += [
            f"  backoff_factor: {_or_none(item.backoff_factor)}",
            f"  max_queue_length: {_or_none(item.max_queue_length)}",
            f"  num_retries: {_or_none(item.num_retries)}",
            f"  retry_delay: {format_interval(item.retry_delay)}",
        ]
    click.echo("\n".join(lines))


def _or_none(value: object) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
