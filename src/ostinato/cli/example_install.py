"""``ostinato example install``: task types, tasks and origins that show Ostinato at work on one machine.

Besides the task examples it declares the loader task type ``load-directory``
and a lister ``example``/``local`` that lists the sub-directories of the
current directory as origins of visit type ``directory``: ``ostinato run``'s
orchestrator then visits them. A recurring task (``example-list-directories``)
lists them again every 15 seconds, as a lister would, so that a directory
changed since its last visit is visited again. Running it again changes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from ..domain.schedules import Schedule, ScheduleKind
from ..domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskType
from ..examples import list_directories
from ..services.embedded_scheduler import prepare_embedded_schema
from .app import AppContext, command_group, pass_app

EXAMPLE_TYPES = (
    TaskType(
        type="example-watch",
        description="Watch a local directory; eventful when something in it changed",
        backend_name="ostinato.examples:watch_directory",
        default_interval=timedelta(seconds=10),
        min_interval=timedelta(seconds=5),
        max_interval=timedelta(minutes=2),
        backoff_factor=2.0,
        max_queue_length=100,
        num_retries=2,
        retry_delay=timedelta(seconds=15),
    ),
    TaskType(
        type="example-flaky",
        description="Fails at random, to show retries and retry_delay",
        backend_name="ostinato.examples:flaky",
        default_interval=timedelta(seconds=8),
        min_interval=timedelta(seconds=4),
        max_interval=timedelta(minutes=1),
        backoff_factor=1.5,
        max_queue_length=100,
        num_retries=3,
        retry_delay=timedelta(seconds=3),
    ),
    TaskType(
        type="example-list-directories",
        description="The example lister, run as a recurring task: list the sub-directories again",
        backend_name="ostinato.examples:relist_directories",
        default_interval=timedelta(seconds=15),
        min_interval=timedelta(seconds=15),
        max_interval=timedelta(seconds=15),
        max_queue_length=10,
        num_retries=1,
        retry_delay=timedelta(seconds=15),
    ),
    TaskType(
        type="load-directory",
        description="Visit a local directory standing for an origin (visit type directory)",
        backend_name="ostinato.examples:load_directory",
        default_interval=timedelta(days=1),
        max_queue_length=100,
    ),
)
EXAMPLE_LISTER = ("example", "local")
#: a deadline-greedy schedule: keep "example-flaky" fresh within 2 minutes, at most every 20 s
EXAMPLE_SCHEDULE = Schedule(
    name="example-heartbeat", kind=ScheduleKind.PERIODIC, task_type="example-flaky",
    created_at=datetime(2000, 1, 1, tzinfo=UTC), arguments=TaskArguments((), {"failure_rate": 0.2}),
    scheduling_period=timedelta(minutes=2), cooldown_duration=timedelta(seconds=20),
)


@command_group("example", "Example task types and tasks for a first run.")
def example() -> None:
    pass


@example.command("install")
@click.option("--watch", "watch_dirs", multiple=True, type=click.Path(file_okay=False, exists=True),
              help="Directories to watch (default: the current directory).")
@pass_app
def install(app: AppContext, watch_dirs: tuple[str, ...]) -> None:
    """Create the example task types and tasks (again is harmless)."""
    store = app.store(check_schema=False, create=True)
    prepare_embedded_schema(store)
    now = app.clock.now()
    for task_type in EXAMPLE_TYPES:
        if store.get_task_type(task_type.type) is None:
            store.add_task_type(task_type, now, actor=app.actor)
    dirs = [str(Path(d).resolve()) for d in (watch_dirs or (".",))]
    tasks = [NewTask("example-watch", now, TaskArguments((d,))) for d in dirs]
    tasks.append(NewTask("example-flaky", now, TaskArguments((), {"failure_rate": 0.3})))
    tasks.append(NewTask("example-watch", now, TaskArguments((dirs[0],)), policy=TaskPolicy.ONESHOT))
    tasks.append(NewTask("example-list-directories", now + timedelta(seconds=15),
                         TaskArguments((str(Path.cwd()), app.settings.db))))
    created = store.create_tasks(tasks)
    lister = store.get_or_create_lister(*EXAMPLE_LISTER, now)
    origins = list_directories(Path.cwd())
    store.record_listed_origins(lister.id, origins, now)
    if store.get_schedule(EXAMPLE_SCHEDULE.name) is None:
        store.create_schedule(replace(EXAMPLE_SCHEDULE, created_at=now), now, app.settings.schedule_timing())
    click.echo(f"example task types: {', '.join(t.type for t in EXAMPLE_TYPES)}; tasks: {', '.join(str(t.id) for t in created)}")
    click.echo(f"example origins: {len(origins)} sub-directories of {Path.cwd()} listed by {'/'.join(EXAMPLE_LISTER)} "
               "(visit type directory)")
    click.echo(f"example schedule: {EXAMPLE_SCHEDULE.name} (periodic, every 2 minutes at most, 20 s apart at least; "
               "`ostinato schedule condition` shows how it does)")
    click.echo("now run `ostinato run` and watch the runs and visits; edit a file in a watched directory to see an "
               "eventful run; the directories are listed again every 15 s, and one changed since its last visit is "
               "visited again once its cooldown is over (absolute_cooldown)")
