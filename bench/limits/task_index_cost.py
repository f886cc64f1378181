"""What an index on the task table costs the task writes, and what it gains a read: side by side in one run.

For each store, two databases of the same code and schema but for one index, ``--index`` (by default
``task_by_type_idx``, migration 0024), which the second one lacks (dropped after ``init_schema``): SQLite files
in a temporary directory, or two databases of one throwaway ``PostgresCluster`` (durable, ``shared_buffers``
2 GB). On both, the life cycle of ``bench/limits/tasks.py``, one call on one database then the same call on the
other, the two taking turns at going first, only the store calls timed:

1. create N recurring tasks of one type, ``--batch`` per ``create_tasks`` call;
2. grab them all, ``--grab-batch`` per ``grab_ready_tasks`` call (each marks its tasks scheduled and records
   their runs: on PostgreSQL a new version of each task row, with an entry in every index);
3. record an outcome for every run, ``--batch`` per ``record_run_events`` call (each moves its tasks);
4. create N / 1000 tasks of a second type, after the others, and read its first page as the console's task
   type page does (``search_tasks(task_type=…, limit=51)``), ``--reads`` times;
5. build the index on the second database, as the migration does (in a transaction), and on PostgreSQL also
   ``CONCURRENTLY`` (after dropping it again), timed.

The figures are ratios with the index over without it, per step and for the three writes together: of the
steps' total times, the median of the ratios of the calls made back to back, and of the CPU time (this
process's and the PostgreSQL server's, read from /proc as bench/limits/visit_changes_cost.py does). Both databases
share the machine's load at the same moments, so the ratios hold under load where absolute figures do not. Run from the repository root::

    .venv/bin/python bench/limits/task_index_cost.py --tasks 100000
    .venv/bin/python bench/limits/task_index_cost.py --tasks 1000000 --stores postgresql
"""

from __future__ import annotations

import argparse
import contextlib
import json
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

from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.limits.tasks import TASK_TYPE, bench_task_type, new_task_batches
from bench.limits.visit_changes_cost import server_cpu
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskRunStatus, TaskType
from ostinato.store.interface import Store
from ostinato.store.postgresql.store import PostgresStore
from ostinato.store.sqlite.store import SQLiteStore
from test_servers.postgres import PostgresCluster

SIDES = ("with", "without")
RARE_TYPE = "load-rare"
BACKEND_ID = "bench"
PAGE = 51  # the console's page of 50 tasks, and one to know whether more follow


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000, help="N: tasks created, grabbed and recorded (default 100000)")
    parser.add_argument("--batch", type=int, default=10_000, help="tasks per create_tasks call, events per record_run_events call")
    parser.add_argument("--grab-batch", type=int, default=1_000, help="limit of one grab_ready_tasks call")
    parser.add_argument("--reads", type=int, default=20, help="page reads of the second type (default 20)")
    parser.add_argument("--index", default="task_by_type_idx", help="the index the second database lacks")
    parser.add_argument("--stores", default="sqlite,postgresql", type=lambda s: s.split(","), help="stores, in order")
    parser.add_argument("--json-out", type=Path, help="default bench/results/task-index-cost-<date>-<N>.json")
    args = parser.parse_args(argv)
    if args.json_out is None:
        args.json_out = RESULTS / f"task-index-cost-{date.today()}-{args.tasks}.json"
    return args


@contextlib.contextmanager
def two_stores(name: str, workdir: Path, index: str) -> Iterator[tuple[dict[str, Store], str]]:
    """Two stores with the schema, the second without ``index``; and the database's version."""
    if name == "sqlite":
        import sqlite3

        stores: dict[str, Store] = {side: SQLiteStore(workdir / f"{side}.db") for side in SIDES}
        try:
            yield _schema(stores, index), sqlite3.sqlite_version
        finally:
            for store in stores.values():
                store.close()
        return
    with PostgresCluster(durable=True, settings={"shared_buffers": "2GB"}) as cluster:
        for side in SIDES:
            cluster.create_database(side)
        with psycopg.connect(cluster.dsn(SIDES[0])) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        stores = {side: PostgresStore(cluster.dsn(side)) for side in SIDES}
        try:
            yield _schema(stores, index), version
        finally:
            for store in stores.values():
                store.close()


def _schema(stores: dict[str, Store], index: str) -> dict[str, Store]:
    for store in stores.values():
        store.init_schema()
    with stores["without"].db.write() as conn:
        conn.execute(f"DROP INDEX {index}")
    return stores


def definition(store: Store, index: str) -> str:
    """The statement that creates ``index``, as the database keeps it."""
    if store.db.name == "sqlite":
        return store.db.read("SELECT sql FROM sqlite_master WHERE name = :name", {"name": index})[0]["sql"]
    return store.db.read("SELECT pg_get_indexdef(to_regclass(%(name)s)) AS sql", {"name": index})[0]["sql"]


def build(store: Store, index: str, statement: str) -> dict[str, float]:
    """Seconds to build the index on the table as it stands: in a transaction, as a migration does, and on
    PostgreSQL also ``CONCURRENTLY`` (outside a transaction, the writes going on), after dropping it again."""
    start = time.perf_counter()
    with store.db.write() as conn:
        conn.execute(statement)
    seconds = {"in_a_transaction": time.perf_counter() - start}
    if store.db.name == "postgresql":
        with psycopg.connect(store.db.dsn, autocommit=True) as conn:
            conn.execute(f"DROP INDEX {index}")
            start = time.perf_counter()
            conn.execute(statement.replace("CREATE INDEX", "CREATE INDEX CONCURRENTLY", 1))
            seconds["concurrently"] = time.perf_counter() - start
    return seconds


class Turns:
    """Each step on both stores, the store that goes first at one step second at the next: per side, the seconds
    of each call and the CPU seconds of all of them (this process's, and the PostgreSQL server's: the postmaster
    and all its children, from /proc, as bench/limits/visit_changes_cost.py reads them)."""

    def __init__(self, stores: dict[str, Store]) -> None:
        self.stores = stores
        self.server = server_cpu(stores[SIDES[0]])  # one cluster holds both databases

    def run(self, label: str, steps: Iterator[Callable[[Store], int]], total: int) -> dict[str, Any]:
        seconds: dict[str, list[float]] = {side: [] for side in SIDES}
        cpu = dict.fromkeys(SIDES, 0.0)
        with progress(label, total) as advance:
            for turn, step in enumerate(steps):
                done = 0
                for side in SIDES if turn % 2 == 0 else SIDES[::-1]:
                    server_before, client_before = self.server(), time.process_time()
                    start = time.perf_counter()
                    done = step(self.stores[side])
                    seconds[side].append(time.perf_counter() - start)
                    cpu[side] += time.process_time() - client_before + self.server() - server_before
                advance(done)
        pairs = [w / o for w, o in zip(seconds["with"], seconds["without"], strict=True)]
        return {
            **{f"{side}_seconds": sum(seconds[side]) for side in SIDES},
            **{f"{side}_median_ms": statistics.median(seconds[side]) * 1000 for side in SIDES},
            **{f"{side}_cpu_seconds": cpu[side] for side in SIDES},
            "ratio_with_over_without": sum(seconds["with"]) / sum(seconds["without"]),
            "ratio_median_of_pairs": statistics.median(pairs),
            "cpu_ratio_with_over_without": cpu["with"] / cpu["without"],
        }


def run(stores: dict[str, Store], n: int, batch: int, grab_batch: int, reads: int, index: str) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0)
    for store in stores.values():
        store.create_task_type(bench_task_type(n))
        store.create_task_type(TaskType(RARE_TYPE, "benchmark: few tasks", "bench.rare", default_interval=timedelta(days=1)))
    turns = Turns(stores)
    figures: dict[str, Any] = {}
    figures["create_tasks"] = turns.run("create_tasks", (
        (lambda store, tasks=tasks: len(store.create_tasks(tasks))) for tasks in new_task_batches(n, batch, now)), n)

    grabbed: dict[str, list[int]] = {side: [] for side in SIDES}

    def side_of(store: Store) -> str:
        return next(s for s in SIDES if stores[s] is store)

    def grab(store: Store) -> int:
        runs = store.grab_ready_tasks(TASK_TYPE, now, grab_batch, backend_id=BACKEND_ID)
        grabbed[side_of(store)].extend(r.run.id for r in runs)
        return len(runs)

    figures["grab_ready_tasks"] = turns.run("grab_ready_tasks", (grab for _ in range(-(-n // grab_batch))), n)
    if any(len(set(ids)) != n for ids in grabbed.values()):
        raise SystemExit(f"grabbed {[len(set(ids)) for ids in grabbed.values()]} distinct runs, expected {n}")
    ended = now + timedelta(minutes=5)
    outcomes = (TaskRunStatus.EVENTFUL, TaskRunStatus.UNEVENTFUL)

    def record(start: int) -> Callable[[Store], int]:
        def call(store: Store) -> int:
            ids = grabbed[side_of(store)][start:start + batch]
            finished = store.record_run_events([RunEvent(run_id, outcomes[i % 2], ended, BACKEND_ID)
                                                for i, run_id in enumerate(ids)])
            if finished != len(ids):
                raise SystemExit(f"record_run_events finished {finished} runs of {len(ids)}")
            return len(ids)
        return call

    figures["record_run_events"] = turns.run("record_run_events", (record(s) for s in range(0, n, batch)), n)

    rare = [NewTask(RARE_TYPE, now, TaskArguments((f"https://example.org/rare/{i}",))) for i in range(max(1, n // 1000))]
    for store in stores.values():
        store.create_tasks(rare)
    figures["task type page"] = turns.run("task type page", (
        (lambda store: len(store.search_tasks(task_type=RARE_TYPE, limit=PAGE))) for _ in range(reads)),
        reads * min(PAGE, len(rare)))
    figures["index_build_seconds"] = build(stores["without"], index, definition(stores["with"], index))
    figures["tasks_at_build"] = n + len(rare)
    writes = ("create_tasks", "grab_ready_tasks", "record_run_events")
    figures["writes"] = {f"{side}_{part}": sum(figures[s][f"{side}_{part}"] for s in writes)
                         for side in SIDES for part in ("seconds", "cpu_seconds")}
    figures["writes"]["ratio_with_over_without"] = figures["writes"]["with_seconds"] / figures["writes"]["without_seconds"]
    figures["writes"]["cpu_ratio_with_over_without"] = (figures["writes"]["with_cpu_seconds"]
                                                        / figures["writes"]["without_cpu_seconds"])
    return figures


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    console.print(f"ostinato in {code['package']}: store sha256 {code['store_sha256'][:12]}; without {args.index}")
    results: dict[str, Any] = {}
    for name in args.stores:
        console.print(f"[bold]{name}[/bold]: {args.tasks:,} tasks, with and without {args.index}")
        with tempfile.TemporaryDirectory(prefix="ostinato-bench-") as workdir, \
                two_stores(name, Path(workdir), args.index) as (stores, version):
            results[name] = {"version": version, **run(stores, args.tasks, args.batch, args.grab_batch, args.reads, args.index)}
        for step, figure in results[name].items():
            if isinstance(figure, dict) and "with_seconds" in figure:
                pairs = f"pairs {figure['ratio_median_of_pairs']:.3f}, " if "ratio_median_of_pairs" in figure else ""
                console.print(f"  {step:<18} with {figure['with_seconds']:8.2f} s, without {figure['without_seconds']:8.2f} s: "
                              f"{figure['ratio_with_over_without']:.3f}, {pairs}CPU {figure['cpu_ratio_with_over_without']:.3f}")
        built = results[name]["index_build_seconds"]
        console.print(f"  {args.index} built on {results[name]['tasks_at_build']:,} tasks in "
                      + ", ".join(f"{seconds:.2f} s {how.replace('_', ' ')}" for how, seconds in built.items()))
    document = {**result_header("bench/limits/task_index_cost.py", results), "code": code,
                "parameters": {"tasks": args.tasks, "batch": args.batch, "grab_batch": args.grab_batch, "reads": args.reads,
                               "index": args.index, "durable": True},
                "results": results}
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    console.print(f"results written to {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
