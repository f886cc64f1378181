"""How fast ``ostinato import swh-scheduler`` copies a live swh-scheduler 3.6 database into an
Ostinato PostgreSQL store, table by table.

On this machine, the benchmark

1. makes (or reuses) the peer's virtual environment, ``.bench-venvs/swh-scheduler-3.6.0``
   (``test_servers.swh_peer``), and starts a throwaway PostgreSQL cluster
   (``durable=True``, ``shared_buffers`` 2 GB);
2. creates the source database with the peer's own tools (``swh db create``, ``swh db init``)
   and fills it through the peer's own Python API (``bench/store/swh_import_peer.py``, the records of
   ``bench/store/swh_import_data.py``): ``--origins`` listed origins with their visits through the
   journal client, grabs, ``--tasks`` tasks with runs in every status, listers, metrics; then
   ``ANALYZE`` (what autovacuum does on a live database; not timed);
3. creates Ostinato's database in the same cluster (``PostgresStore.init_schema()``) and
   imports the source into it with runs (the same code as ``ostinato import swh-scheduler
   --with-runs``), timing each table: rows read from the source, mapped and written;
4. compares every row of the source with the store (``--verify``'s code), then imports again:
   every table must report 0 rows changed;
5. prints the rate of each table (rows/s) and the total time, and writes every figure as JSON
   under ``bench/results/``.

Run from the repository root::

    .venv/bin/python bench/store/swh_import.py                                  # 1,000,000 origins, 100,000 tasks
    .venv/bin/python bench/store/swh_import.py --origins 20000 --tasks 5000     # a quick check
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from bench.common.peer import ensure_system_tools
from bench.common.report import RESULTS, code_version, console, result_header
from ostinato.config import Settings
from ostinato.integrations.swh.db_import import import_swh_scheduler
from ostinato.integrations.swh.db_mapping import Cooldowns
from ostinato.integrations.swh.db_source import SwhSchedulerSource
from ostinato.integrations.swh.db_verify import verify_import
from ostinato.store.postgresql.store import PostgresStore
from test_servers import swh_peer
from test_servers.postgres import PostgresCluster

REPO = Path(__file__).resolve().parents[2]
PEER_DRIVER = Path(__file__).resolve().parent / "swh_import_peer.py"
SOURCE_DB, TARGET_DB = "swh_scheduler", "ostinato"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=1_000_000, help="listed origins of the source (default 1000000)")
    parser.add_argument("--tasks", type=int, default=100_000, help="tasks of the source (default 100000)")
    parser.add_argument("--batch", type=int, default=10_000, help="rows per batch of the import (default 10000)")
    parser.add_argument("--fill-batch", type=int, default=10_000, help="records per call of the peer's API while filling")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL shared_buffers (default 2GB)")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off (not like production)")
    parser.add_argument("--peer-venv", type=Path, default=REPO / swh_peer.VENV_DIR, help="the peer's virtual environment")
    parser.add_argument("--json-out", type=Path, help="where to write the results (default bench/results/swh-import-<date>-<commit>-<N>.json)")
    args = parser.parse_args(argv)
    if min(args.origins, args.tasks, args.batch, args.fill_batch) < 1:
        parser.error("every count must be at least 1")
    return args


def _log(line: str) -> None:
    console.print(line, markup=False, highlight=False)


def fill_source(python: Path, dsn: str, args: argparse.Namespace, now: datetime) -> dict[str, Any]:
    """The peer's driver, its progress lines shown as they come; returns its summary."""
    command = [str(python), str(PEER_DRIVER), "--dsn", dsn, "--origins", str(args.origins), "--tasks", str(args.tasks),
               "--now", now.isoformat(), "--batch", str(args.fill_batch)]
    _log(f"  $ {' '.join(command)}")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert process.stderr is not None and process.stdout is not None
    last_step, shown = "", 0.0
    for line in process.stderr:
        step = line.split(":", 1)[0]
        if step != last_step or time.monotonic() - shown > 30:  # a line per step, and every half minute
            _log(f"  fill: {line.rstrip()}")
            last_step, shown = step, time.monotonic()
    summary = process.stdout.read().strip().splitlines()
    if process.wait() != 0 or not summary:
        raise SystemExit(f"the peer's driver failed (exit {process.returncode})")
    return json.loads(summary[-1])


@contextlib.contextmanager
def table_bars() -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """A bar per table on a terminal; a line per 10 % of each table otherwise (a log file)."""
    if console.is_terminal:
        columns = (TextColumn("  {task.description:<20}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn())
        with Progress(*columns, console=console) as bars:
            yield lambda table, total: (lambda task: lambda n: bars.advance(task, n))(bars.add_task(table, total=total))
        return

    def start(table: str, total: int) -> Callable[[int], None]:
        done, tenth, began = 0, 1, time.monotonic()

        def advance(n: int) -> None:
            nonlocal done, tenth
            done += n
            if total and done * 10 >= tenth * total:
                _log(f"  {table}: {done:,}/{total:,} after {time.monotonic() - began:.0f} s")
                tenth = done * 10 // total + 1
        return advance

    yield start


def run_import(source_dsn: str, store: PostgresStore, args: argparse.Namespace, cooldowns: Cooldowns,
               bars: bool) -> tuple[Any, float]:
    """One import of the whole source, with runs; its report and its wall time."""
    start = time.perf_counter()
    with SwhSchedulerSource(source_dsn) as source:
        if bars:
            with table_bars() as progress:
                report = import_swh_scheduler(source, store, now=datetime.now(UTC), cooldowns=cooldowns,
                                              with_runs=True, batch_size=args.batch, progress=progress)
        else:
            report = import_swh_scheduler(source, store, now=datetime.now(UTC), cooldowns=cooldowns,
                                          with_runs=True, batch_size=args.batch)
    return report, time.perf_counter() - start


def print_table(first: Any, first_s: float, again: Any, again_s: float, verify_s: float, args: argparse.Namespace) -> None:
    title = (f"ostinato import swh-scheduler: {args.origins:,} origins, {args.tasks:,} tasks, into PostgreSQL "
             f"(durable={args.durable})")
    table = Table(title=title, caption="rows/s: rows read from the source, mapped and written, per second of that table")
    for name, justify in (("table", "left"), ("rows", "right"), ("seconds", "right"), ("rows/s", "right"),
                          ("again: changed", "right"), ("again: rows/s", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # rich's justify is a Literal of these values
    for one, two in zip(first.tables, again.tables, strict=True):
        table.add_row(one.table, f"{one.read:,}", f"{one.seconds:,.1f}", f"{one.rate:,.0f}" if one.rate else "-",
                      f"{two.changed:,}", f"{two.rate:,.0f}" if two.rate else "-")
    table.add_row("total", f"{first.read:,}", f"{first_s:,.1f}", f"{first.read / first_s:,.0f}", f"{again.changed:,}",
                  f"{again.read / again_s:,.0f}")
    Console(width=None if sys.stdout.isatty() else 140).print(table)
    print(f"verify (every row compared): {verify_s:,.1f} s; second import: {again_s:,.1f} s")


def report_json(report: Any, seconds: float) -> dict[str, Any]:
    return {"seconds": seconds, "rows": report.read, "changed": report.changed,
            "tables": {t.table: {"rows": t.read, "changed": t.changed, "seconds": t.seconds,
                                 "rows_per_second": t.rate} for t in report.tables}}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    json_out = args.json_out or (RESULTS /
                                 f"swh-import-{date.today().isoformat()}-{(code['git_commit'] or 'unknown')[:7]}-{args.origins}.json")
    ensure_system_tools()
    python = swh_peer.ensure_peer_venv(args.peer_venv, log=_log)
    packages = swh_peer.peer_packages(python)
    settings = Settings()
    cooldowns = Cooldowns(settings.absolute_cooldown, settings.failed_cooldown, settings.not_found_cooldown,
                          settings.in_flight_timeout)
    now = datetime.now(UTC).replace(microsecond=0)
    started = time.monotonic()
    with PostgresCluster(durable=args.durable, settings={"shared_buffers": args.shared_buffers}) as cluster:
        with psycopg.connect(cluster.dsn()) as conn:
            pg_version = conn.execute("SHOW server_version").fetchone()[0].split()[0]  # type: ignore[index]  # SHOW always returns a row
        source_dsn = swh_peer.create_peer_database(python, cluster.dsn("postgres"), SOURCE_DB, log=_log)
        fill_start = time.monotonic()
        fill = fill_source(python, source_dsn, args, now)
        fill_s = time.monotonic() - fill_start
        with psycopg.connect(source_dsn, autocommit=True) as conn:
            counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in  # type: ignore[index]  # count(*) always returns a row
                      ("task_type", "task", "task_run", "listers", "listed_origins", "origin_visit_stats", "scheduler_metrics")}
            conn.execute("ANALYZE")
        _log(f"source filled in {fill_s / 60:.1f} min: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()))
        cluster.create_database(TARGET_DB)
        store = PostgresStore(cluster.dsn(TARGET_DB))
        try:
            store.init_schema()
            first, first_s = run_import(source_dsn, store, args, cooldowns, bars=True)
            verify_start = time.perf_counter()
            with SwhSchedulerSource(source_dsn) as source:
                check = verify_import(source, store, now=datetime.now(UTC), cooldowns=cooldowns,
                                      with_runs=True, batch_size=args.batch)
            verify_s = time.perf_counter() - verify_start
            again, again_s = run_import(source_dsn, store, args, cooldowns, bars=False)
        finally:
            store.close()
    anomalies = [f"verify: {line}" for line in check.first]
    if check.differences:
        anomalies.insert(0, f"verify: {check.differences} rows differ")
    if again.changed:
        anomalies.append(f"second import changed {again.changed} rows")
    print_table(first, first_s, again, again_s, verify_s, args)
    document = {
        **result_header("bench/store/swh_import.py", {"postgresql": {"version": pg_version}}),
        "code": code,
        "peer": {"requirement": swh_peer.PEER_REQUIREMENT, "packages": packages, "fill": fill, "venv": str(args.peer_venv)},
        "parameters": {"origins": args.origins, "tasks": args.tasks, "batch": args.batch, "fill_batch": args.fill_batch,
                       "durable": args.durable, "shared_buffers": args.shared_buffers, "now": now.isoformat()},
        "source_rows": counts, "fill_seconds": fill_s, "elapsed_seconds": time.monotonic() - started,
        "import": report_json(first, first_s), "verify": {"seconds": verify_s, "compared": check.compared,
                                                         "differences": check.differences},
        "import_again": report_json(again, again_s), "anomalies": anomalies,
    }
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    _log(f"results written to {json_out} ({document['elapsed_seconds'] / 60:.1f} min)")
    for line in anomalies:
        console.print(f"[yellow]warning[/yellow]: {line}")
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
