"""Commands of the Celery path: ``ostinato worker`` (a Celery worker that runs Ostinato's
callables) and ``ostinato listener`` (see docs/design/tasks.md)."""

from __future__ import annotations

import logging
import os
import threading

import click

from .. import extras
from ..domain.errors import NotFoundError, OstinatoError
from .app import AppContext, cli, open_settings_store, pass_app, stop_on_signals
from .output import plural
from .services import metrics_options, setup_logging


def _broker(app: AppContext, broker: str | None) -> str:
    if broker:
        app.settings = app.settings.with_values({"broker_url": broker})
    return app.settings.celery_broker()


@cli.command("worker")
@click.option("--task-type", "-t", "task_types", multiple=True, help="Serve only these task types (repeatable; default: all).")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), help="Jobs at once (default: the workers setting).")
@click.option("--pool", "-P", type=click.Choice(["threads", "prefork", "solo"]), default="threads", show_default=True,
              help="Celery execution pool.")
@click.option("--hostname", "-n", help="The worker's name (default: ostinato-PID@NODE, new at each start).")
@click.option("--broker", help="Broker URL (default: the broker_url setting).")
@click.option("-v", "--verbose", is_flag=True)
@pass_app
def worker_command(app: AppContext, task_types, concurrency, pool, hostname, broker, verbose):
    """Run a Celery worker for the queues of the task types: their runs, origin visits and schedule runs.

    It consumes, for every task type served, the queue named after its
    backend_name and save_code_now:<backend_name>, and calls the same
    callables as the embedded workers. Outcomes go back to `ostinato listener` through the
    broker; schedule runs ping and end in the database themselves. Task types
    added later are served after a restart.
    """
    extras.require("celery", "ostinato worker")
    from ..integrations.celery.app import make_celery_app, queue_name
    from ..integrations.celery.worker import WorkerRuntime, install_worker_tasks

    setup_logging(verbose)
    broker_url = _broker(app, broker)
    app.settings.import_modules()
    known = app.store().list_task_types()
    if task_types:
        missing = sorted(set(task_types) - {t.type for t in known})
        if missing:
            raise NotFoundError("task type", f"{', '.join(missing)} (see `ostinato task-type list`)")
        known = [t for t in known if t.type in task_types]
    if not known:
        raise OstinatoError("no task type to serve: add one with `ostinato task-type add`")
    backends = sorted({t.backend_name for t in known})
    queues = [queue_name(b, priority=p) for b in backends for p in (False, True)]
    celery_app = make_celery_app(broker_url)
    celery_app.conf.worker_hijack_root_logger = True  # Celery's own log lines: received, succeeded, ready
    runtime = WorkerRuntime(app.settings, app.clock, open_store=lambda _db: open_settings_store(app.settings))
    install_worker_tasks(celery_app, runtime, backends)
    name = hostname or f"ostinato-{os.getpid()}@{app.settings.node}"
    logging.getLogger("ostinato").info("worker %s: queues %s", name, ", ".join(queues))
    celery_app.worker_main(["worker", "-Q", ",".join(queues), "-c", str(concurrency or app.settings.workers), "-P", pool,
                            "-n", name, "-E", "--without-mingle", "--without-gossip",
                            "-l", "DEBUG" if verbose else "INFO"])


@cli.command("listener")
@click.option("--broker", help="Broker URL (default: the broker_url setting).")
@click.option("-v", "--verbose", is_flag=True)
@metrics_options
@pass_app
def listener_command(app: AppContext, broker, verbose):
    """Record what Celery workers report: run outcomes and visit statuses.

    Outcomes come from a durable queue and are acknowledged once stored, so a
    restart loses and doubles nothing; Celery events mark runs started, and
    runs of workers silent for worker_lost_after are marked lost.
    """
    extras.require("celery", "ostinato listener")
    from ..integrations.celery.app import make_celery_app
    from ..integrations.celery.listener import CeleryListener

    setup_logging(verbose)
    broker_url = _broker(app, broker)
    store = app.store()
    listener = CeleryListener(store, make_celery_app(broker_url), app.clock, app.settings.feedback_policy(),
                              worker_lost_after=app.settings.worker_lost_after)
    stop = threading.Event()
    with stop_on_signals(stop, "storing what is in hand, then stopping"):
        threads = listener.start(stop)
        while not stop.wait(1.0):
            pass
        for thread in threads:
            thread.join(10)
    click.echo(f"stopped: {plural(listener.runs_recorded, 'run outcome')} and "
               f"{plural(listener.visits_recorded, 'visit status', 'visit statuses')} recorded, "
               f"{plural(listener.lost_marked, 'run')} of dead workers marked lost, "
               f"{plural(listener.rejected, 'message')} rejected")
