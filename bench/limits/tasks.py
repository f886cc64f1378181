"""Throughput of the task life cycle on each store: create, grab, record outcomes.

For each store (SQLite in a temporary file, PostgreSQL in a throwaway
``PostgresCluster``) on a fresh database, the benchmark

1. creates N recurring ``load-git`` tasks with ``Store.create_tasks`` in batches
   of ``--batch`` (distinct arguments, ``next_run`` spread over the past day);
2. grabs them all with ``Store.grab_ready_tasks(..., --grab-batch, backend_id="bench")``
   until nothing is ready (each call marks its tasks scheduled and records a run
   for each), timing every call;
3. reports an outcome for every run with ``Store.record_run_events`` in batches of
   ``--batch`` (half eventful, half uneventful, one final event per run);

then prints a table (tasks/s, runs/s, grab latency, PostgreSQL/SQLite ratio)
and writes the figures and the machine description as JSON.

Run from the repository root::

    .venv/bin/python bench/limits/tasks.py                       # 1,000,000 tasks, both stores
    .venv/bin/python bench/limits/tasks.py --tasks 20000 --stores postgresql --no-durable

PostgreSQL runs with fsync on (``durable=True``, as in production) unless
``--no-durable`` is given. SQLite uses the store's own settings (WAL,
``synchronous=NORMAL``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.table import Table

from bench.common.report import RESULTS, code_version, console, progress, result_header
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskRunStatus, TaskStatus, TaskType
from ostinato.store.interface import Store
from ostinato.store.postgresql.store import PostgresStore
from ostinato.store.sqlite.store import SQLiteStore
from test_servers.postgres import PostgresCluster

TASK_TYPE = "load-git"
BACKEND_ID = "bench"
STORES = ("sqlite", "postgresql")

# (key in the results, row title, unit)
FIGURES = (
    ("create_tasks_per_s", "create_tasks", "tasks/s"),
    ("grab_tasks_per_s", "grab_ready_tasks", "tasks/s"),
    ("grab_latency_median_ms", "grab call, median", "ms"),
    ("grab_latency_p95_ms", "grab call, p95", "ms"),
    ("record_runs_per_s", "record_run_events", "runs/s"),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1_000_000, help="number of tasks N (default 1000000)")
    parser.add_argument("--batch", type=int, default=10_000, help="tasks per create_tasks call and events per record_run_events call")
    parser.add_argument("--grab-batch", type=int, default=1_000, help="limit of one grab_ready_tasks call")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL shared_buffers (default 2GB)")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated stores among sqlite,postgresql")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off (not like production)")
    parser.add_argument("--json-out", type=Path, help="where to write the results (default bench/results/tasks-<date>.json)")
    args = parser.parse_args(argv)
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = sorted(set(args.stores) - set(STORES))
    if unknown or not args.stores:
        parser.error(f"--stores: expected some of {', '.join(STORES)}, got {args.stores}")
    if min(args.tasks, args.batch, args.grab_batch) < 1:
        parser.error("--tasks, --batch and --grab-batch must be at least 1")
    if args.json_out is None:
        args.json_out = RESULTS / f"tasks-{date.today().isoformat()}.json"
    return args


@contextlib.contextmanager
def fresh_store(name: str, workdir: Path, durable: bool, shared_buffers: str = "2GB",
                settings: dict[str, str] | None = None) -> Iterator[tuple[Store, str]]:
    """A store on an empty database with the schema; yields it and the database version.

    PostgreSQL gets ``shared_buffers`` (2 GB by default, under the usual quarter of this
    machine's 24 GiB): enough to hold the 1M benchmarks' tables and indexes, as a
    production server sized for its hot set would; ``settings`` are more server settings."""
    if name == "sqlite":
        store = SQLiteStore(workdir / "bench.db")
        store.init_schema()
        with contextlib.closing(store):
            yield store, sqlite3.sqlite_version
        return
    with PostgresCluster(durable=durable, settings={"shared_buffers": shared_buffers, **(settings or {})}) as cluster:
        cluster.create_database("bench")
        dsn = cluster.dsn("bench")
        with psycopg.connect(dsn) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        store = PostgresStore(dsn)
        store.init_schema()
        with contextlib.closing(store):
            yield store, version


def timed_batches(label: str, total: int, batches: Iterator[Any], call: Callable[[Any], int]) -> float:
    """Run ``call`` on each batch (its return: items done), showing progress; return seconds spent in ``call``."""
    spent = 0.0
    with progress(label, total) as advance:
        for batch in batches:
            start = time.perf_counter()
            done = call(batch)
            spent += time.perf_counter() - start
            advance(done)
    return spent


def bench_task_type(n: int) -> TaskType:
    """The benchmark's task type, with room in its queue for ``n`` tasks and more."""
    return TaskType(
        type=TASK_TYPE, description="benchmark: load a git repository", backend_name="bench.load_git",
        default_interval=timedelta(days=1), min_interval=timedelta(hours=12), max_interval=timedelta(days=64),
        backoff_factor=2.0, max_queue_length=10 * n, num_retries=3, retry_delay=timedelta(hours=1),
    )  # fmt: skip


def new_task_batches(n: int, batch: int, now: datetime, seed: int = 42) -> Iterator[list[NewTask]]:
    """N recurring tasks of :data:`TASK_TYPE`, one URL argument each, ``next_run`` over the day before ``now``."""
    rng = random.Random(seed)
    for start in range(0, n, batch):
        yield [
            NewTask(TASK_TYPE, now - timedelta(seconds=rng.uniform(0, 86_400)), TaskArguments((f"https://example.org/repo/{i}",)))
            for i in range(start, min(start + batch, n))
        ]


def run_store(store: Store, n: int, batch: int, grab_batch: int) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0)
    store.create_task_type(bench_task_type(n))

    # 1. create
    create_s = timed_batches("create_tasks", n, new_task_batches(n, batch, now), lambda tasks: len(store.create_tasks(tasks)))

    # 2. grab until nothing is ready
    run_ids: list[int] = []
    latencies: list[float] = []
    with progress("grab_ready_tasks", n) as advance:
        while True:
            start = time.perf_counter()
            grabbed = store.grab_ready_tasks(TASK_TYPE, now, grab_batch, backend_id=BACKEND_ID)
            latencies.append(time.perf_counter() - start)
            if not grabbed:
                break
            run_ids.extend(g.run.id for g in grabbed)
            advance(len(grabbed))
    grab_s = sum(latencies)
    if len(run_ids) != n or len(set(run_ids)) != n:
        raise SystemExit(f"grabbed {len(run_ids)} runs ({len(set(run_ids))} distinct), expected {n}")
    calls = latencies[:-1]  # the last call found nothing ready: not a grab of a full batch

    # 3. record outcomes
    ended = now + timedelta(minutes=5)
    outcomes = (TaskRunStatus.EVENTFUL, TaskRunStatus.UNEVENTFUL)

    def events() -> Iterator[list[RunEvent]]:
        for start in range(0, n, batch):
            yield [RunEvent(run_id, outcomes[i % 2], ended, BACKEND_ID) for i, run_id in enumerate(run_ids[start:start + batch], start)]

    finished: list[int] = []  # runs that reached a final status, per call

    def record(chunk: list[RunEvent]) -> int:
        finished.append(store.record_run_events(chunk))
        return len(chunk)

    record_s = timed_batches("record_run_events", n, events(), record)
    counts = store.count_tasks()
    if sum(finished) != n or counts.get((TASK_TYPE, TaskStatus.NEXT_RUN_NOT_SCHEDULED.value)) != n:
        raise SystemExit(f"record_run_events finished {sum(finished)} runs, task counts {counts}, expected {n}")

    return {
        "create_seconds": create_s,
        "create_tasks_per_s": n / create_s,
        "grab_seconds": grab_s,
        "grab_calls": len(latencies),
        "grab_tasks_per_s": n / grab_s,
        "grab_latency_median_ms": statistics.median(calls) * 1000,
        "grab_latency_p95_ms": percentile(calls, 0.95) * 1000,
        "grab_latency_max_ms": max(calls) * 1000,
        "record_seconds": record_s,
        "record_runs_per_s": n / record_s,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fmt(value: float, unit: str) -> str:
    return f"{value:,.1f}" if unit == "ms" else f"{value:,.0f}"


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> dict[str, float]:
    """Print the table; return the PostgreSQL/SQLite ratio of each figure (when both ran)."""
    ratios = {}
    if "sqlite" in results and "postgresql" in results:
        ratios = {key: results["postgresql"][key] / results["sqlite"][key] for key, *_ in FIGURES}
    title = f"Ostinato tasks benchmark: N={args.tasks:,}, batch={args.batch:,}, grab batch={args.grab_batch:,}"
    table = Table(title=title + (f", PostgreSQL durable={args.durable}" if "postgresql" in results else ""))
    table.add_column("figure")
    table.add_column("unit")
    for name in results:
        table.add_column(f"{name} {results[name]['version']}", justify="right")
    if ratios:
        table.add_column("PostgreSQL / SQLite", justify="right")
    for key, title, unit in FIGURES:
        row = [title, unit, *(fmt(results[name][key], unit) for name in results)]
        if ratios:
            row.append(f"{ratios[key]:.2f}×")
        table.add_row(*row)
    Console(width=None if sys.stdout.isatty() else 120).print(table)
    return ratios


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()  # before the run: the modules measured are the ones imported now
    console.print(f"ostinato in {code['package']}: commit {(code['git_commit'] or '?')[:12]}, store sha256 "
                  f"{code['store_sha256'][:12]}{' (store modified locally)' if code['store_changes'] else ''}")  # fmt: skip
    results: dict[str, dict[str, Any]] = {}
    for name in args.stores:
        console.print(f"[bold]{name}[/bold]: {args.tasks:,} tasks")
        with tempfile.TemporaryDirectory(prefix="ostinato-bench-") as workdir:
            with fresh_store(name, Path(workdir), args.durable, args.shared_buffers) as (store, version):
                figures = run_store(store, args.tasks, args.batch, args.grab_batch)
        results[name] = {"version": version, **figures}
        console.print(
            f"  created {figures['create_tasks_per_s']:,.0f} tasks/s, grabbed {figures['grab_tasks_per_s']:,.0f} tasks/s, "
            f"recorded {figures['record_runs_per_s']:,.0f} runs/s"
        )
    ratios = report(results, args)
    document = {
        **result_header("bench/limits/tasks.py", results),
        "code": code,
        "parameters": {"tasks": args.tasks, "batch": args.batch, "grab_batch": args.grab_batch, "durable": args.durable},
        "results": results,
        "ratio_postgresql_over_sqlite": ratios,
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    console.print(f"results written to {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
