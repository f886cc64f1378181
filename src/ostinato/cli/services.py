"""Commands that run Ostinato's services: ``ostinato runner``, ``ostinato orchestrator`` and ``ostinato run``."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

import click
from rich.logging import RichHandler

from ..domain.errors import ValidationError
from ..services import service_metrics
from ..services.embedded_scheduler import EmbeddedScheduler, Summary, prepare_embedded_schema
from .app import AppContext, cli, pass_app, quiet_chatty_loggers, stop_on_signals
from .output import plural


def serve_metrics(app: AppContext, port: int | None, host: str | None) -> Any:
    """Serve the service metrics (``--metrics-port``, else the metrics_port setting; 0: not served)."""
    port = app.settings.metrics_port if port is None else port
    host = host or app.settings.metrics_host
    if not port:
        return None
    try:
        server = service_metrics.serve(port, host)
    except OSError as exc:
        raise ValidationError("metrics_port", f"a free port on {host} ({exc.strerror or exc})", port) from None
    logging.getLogger("ostinato").info("metrics at http://%s:%d/metrics", host, port)
    return server


def metrics_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--metrics-port`` and ``--metrics-host`` for a service command (put it right above ``@pass_app``)."""
    @functools.wraps(command)
    def with_metrics(*args: Any, metrics_port: int | None = None, metrics_host: str | None = None, **kwargs: Any) -> Any:
        app = click.get_current_context().find_object(AppContext)
        assert app is not None, "the command runs under the ostinato group, which makes the AppContext"
        serve_metrics(app, metrics_port, metrics_host)
        return command(*args, **kwargs)

    with_metrics = click.option("--metrics-host", metavar="ADDRESS",
                                help="Address the metrics are served on (default: the metrics_host setting, "
                                     "127.0.0.1).")(with_metrics)
    return click.option("--metrics-port", type=click.IntRange(0, 65535), metavar="PORT",
                        help="Serve Prometheus metrics (dispatches, outcomes, pick latency, queue depths) at "
                             "http://HOST:PORT/metrics (default: the metrics_port setting; 0: not served)."
                        )(with_metrics)


def setup_logging(verbose: bool) -> None:
    """Logs of a long-running command (a scheduler, a runner, a worker), by Rich; DEBUG with ``verbose``."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(message)s",
        datefmt="[%X]",
        handlers=[RichHandler(show_path=False, rich_tracebacks=True)],
        force=True,
    )
    quiet_chatty_loggers()


def _open_store(app: AppContext, *, auto_init: bool):
    store = app.store(check_schema=False, create=auto_init)
    if auto_init:
        prepare_embedded_schema(store)
    store.check_schema()
    return store


def _serve(scheduler: EmbeddedScheduler, once: bool) -> Summary:
    scheduler.start()
    if once:
        scheduler.run_once()
        return scheduler.stop()
    stop = threading.Event()
    with stop_on_signals(stop, "finishing running tasks, then stopping"):
        scheduler.run_until(stop)
    return scheduler.stop()


def _print_summary(summary: Summary) -> None:
    visits = f"{plural(summary.visits_dispatched, 'visit')} dispatched, {summary.visits_finished} ended, "
    schedules = f"{plural(summary.schedule_runs, 'schedule run')}, " if summary.schedule_runs else ""
    click.echo(f"stopped: {plural(summary.dispatched, 'run')} dispatched, {summary.finished} ended, {visits}{schedules}"
               f"in {summary.seconds:.1f}s")


@cli.command("runner")
@click.option("--with-priority", is_flag=True, help="Also run the priority runner (tasks with a priority).")
@click.option("--priority-only", is_flag=True, help="Run only the priority runner.")
@click.option("--task-type", "-t", "task_types", multiple=True, help="Serve only these task types (repeatable).")
@click.option("--once", is_flag=True, help="One pass: dispatch what is ready, wait for it to end, exit.")
@click.option("--workers", type=click.IntRange(min=1), help="Embedded worker threads.")
@click.option("-v", "--verbose", is_flag=True)
@metrics_options
@pass_app
def runner_command(app: AppContext, with_priority, priority_only, task_types, once, workers, verbose):
    """Dispatch ready tasks to the embedded workers."""
    setup_logging(verbose)
    if workers:
        app.settings = app.settings.with_values({"workers": workers})
    store = _open_store(app, auto_init=False)
    scheduler = EmbeddedScheduler(store, app.settings, app.clock, task_types=task_types or None,
                                  normal=not priority_only, priority=with_priority or priority_only)
    _print_summary(_serve(scheduler, once))


@cli.command("orchestrator")
@click.option("--visit-type", "visit_types", multiple=True, metavar="TYPE",
              help="Serve only this visit type (repeatable; default: the visit_types setting, else every load-* task type).")
@click.option("--once", is_flag=True, help="One pass: dispatch, wait for the visits to end, exit.")
@click.option("--workers", type=click.IntRange(min=1), help="Embedded worker threads.")
@click.option("-v", "--verbose", is_flag=True)
@metrics_options
@pass_app
def orchestrator_command(app: AppContext, visit_types, once, workers, verbose):
    """Keep the loaders' queues fed with origins to visit.

    For each visit type whose queue is below the threshold, dispatch the
    prioritised one-shot tasks of its load-<type> task type ("save code now"),
    then origins picked by the scheduling policies in the configured ratios,
    to the embedded workers. Visit statuses feed the visit stats back.
    """
    setup_logging(verbose)
    if workers:
        app.settings = app.settings.with_values({"workers": workers})
    store = _open_store(app, auto_init=False)
    scheduler = EmbeddedScheduler(store, app.settings, app.clock, normal=False, priority=False, orchestrate=True,
                                  visit_types=visit_types or None)
    _print_summary(_serve(scheduler, once))


@cli.command("run")
@click.option("--once", is_flag=True, help="One pass of every service, wait for the runs and visits to end, exit.")
@click.option("--workers", type=click.IntRange(min=1), help="Embedded worker threads.")
@click.option("-v", "--verbose", is_flag=True)
@metrics_options
@pass_app
def run_command(app: AppContext, once, workers, verbose):
    """Run everything in one process: runner, priority runner, orchestrator, schedules and embedded workers.

    With the executor setting celery, the work goes to Celery workers (`ostinato
    worker`, other processes) and this process also runs the listener; with the
    journal_brokers setting, it also runs the Kafka journal client.

    On the embedded default (a SQLite file) the schema is created on first use
    and upgraded when Ostinato is newer.
    Stops cleanly on Ctrl-C or SIGTERM: running tasks finish, nothing is lost.
    """
    setup_logging(verbose)
    if workers:
        app.settings = app.settings.with_values({"workers": workers})
    store = _open_store(app, auto_init=True)
    scheduler = EmbeddedScheduler(store, app.settings, app.clock, orchestrate=True, schedules=True, listen=True,
                                  journal=True)
    _print_summary(_serve(scheduler, once))
