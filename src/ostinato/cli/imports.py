"""``ostinato import swh-scheduler``: copy a live swh-scheduler 3.6 database into the store
(see docs/reference/swh-import.md). A thin face over ``integrations.swh.db_import``.

The source is checked before anything is written (a PostgreSQL URL, a server that answers,
schema version 38), each refusal one line naming ``from`` with exit status 2. Progress goes to
stderr as a bar per table (on a terminal); the summary, or ``--json``, to stdout. Stopped
midway (Ctrl-C), the import keeps what it wrote: the same command goes on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .. import extras
from .app import AppContext, command_group, pass_app
from .output import WholeNumberType, console, echo_json, print_table


@command_group("import", "Copy another scheduler's database into Ostinato's store.")
def import_group() -> None:
    pass


@import_group.command("swh-scheduler")
@click.option("--from", "source_url", required=True, metavar="URL",
              help="The swh-scheduler 3.6 database (schema version 38): postgresql://USER@HOST:PORT/DBNAME. "
                   "Only read, in one read-only transaction.")
@click.option("--with-runs", is_flag=True, help="Copy the task runs too (every dispatch of every task).")
@click.option("--batch-size", type=WholeNumberType(1), default=10_000, show_default=True,
              help="Rows read and written per transaction.")
@click.option("--verify", is_flag=True, help="Then compare every row of the source with the store's (exit 1 on a difference).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def swh_scheduler(app: AppContext, source_url: str, with_runs: bool, batch_size: int, verify: bool, as_json: bool) -> None:
    """Copy the swh-scheduler database at --from into the store (--db): task types, tasks (and their
    runs with --with-runs), listers and their state, listed origins, visit stats and metrics.

    Keyed on the source's identities: running it again writes only what changed (an unchanged
    source: 0 rows changed). See docs/reference/swh-import.md for what each table becomes.

    \b
    Example:
      ostinato --db postgresql://ostinato@db/ostinato import swh-scheduler \\
          --from postgresql://guest@swh-db/swh-scheduler --with-runs --verify
    """
    extras.require("postgresql", "ostinato import swh-scheduler")
    from ..integrations.swh.db_import import import_swh_scheduler
    from ..integrations.swh.db_mapping import Cooldowns
    from ..integrations.swh.db_source import SwhSchedulerSource

    settings = app.settings
    cooldowns = Cooldowns(settings.absolute_cooldown, settings.failed_cooldown, settings.not_found_cooldown,
                          settings.in_flight_timeout)
    with SwhSchedulerSource(source_url) as source:  # refuses a bad source before the store is opened
        store = app.store()
        now = app.clock.now()
        try:
            with _progress() as progress:
                report = import_swh_scheduler(source, store, now=now, cooldowns=cooldowns, with_runs=with_runs,
                                              batch_size=batch_size, progress=_bars(progress))
        except KeyboardInterrupt:
            click.echo("stopped: what was imported stays; the same command goes on from there", err=True)
            sys.exit(130)
        check = None
        if verify:
            from ..integrations.swh.db_verify import verify_import

            check = verify_import(source, store, now=now, cooldowns=cooldowns, with_runs=with_runs, batch_size=batch_size)
    _print_report(report, check, as_json)
    if check is not None and not check.ok:
        sys.exit(1)


def _progress() -> Progress:
    """A bar per table on stderr, shown only on a terminal."""
    err = console(stderr=True)
    return Progress(TextColumn("{task.description:<20}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=err, transient=False, disable=not err.is_terminal)


def _bars(progress: Progress) -> Callable[[str, int], Callable[[int], None]]:
    def start(table: str, total: int) -> Callable[[int], None]:
        task_id = progress.add_task(table, total=total)
        return lambda n: progress.advance(task_id, n)
    return start


def _print_report(report: Any, check: Any, as_json: bool) -> None:
    tables = [{"table": t.table, "read": None if t.skipped else t.read, "changed": None if t.skipped else t.changed,
               "seconds": None if t.skipped else round(t.seconds, 3),
               "rows_per_second": round(t.rate) if t.rate else None, "skipped": t.skipped} for t in report.tables]
    if as_json:
        out: dict[str, Any] = {"source": report.source, "source_version": report.source_version, "tables": tables,
                               "read": report.read, "changed": report.changed, "seconds": round(report.seconds, 3)}
        if check is not None:
            out["verify"] = {"compared": check.compared, "differences": check.differences, "first": check.first}
        echo_json(out)
        return
    rows = [{**t, "read": "not read (--with-runs)" if t["skipped"] else t["read"]} for t in tables]
    print_table(rows, [("table", "table"), ("read", "rows read"), ("changed", "changed"), ("seconds", "seconds"),
                       ("rows_per_second", "rows/s")])
    click.echo(f"Imported {report.read} rows from {report.source} (schema version {report.source_version}): "
               f"{report.changed} created or changed, in {report.seconds:.1f}s.")
    if check is not None:
        compared = sum(check.compared.values())
        if check.ok:
            click.echo(f"Verified: the {compared} rows compared are the same in the store.")
        else:
            click.echo(f"Verified {compared} rows: {check.differences} differ; the first:")
            for line in check.first:
                click.echo(f"  {line}")
