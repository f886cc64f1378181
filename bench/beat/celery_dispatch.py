"""Tasks dispatched to Celery per second through Redis by one runner, against the ceiling and a peer.

On this machine, with a throwaway Debian ``redis-server`` as the broker
(``RedisServer``; no append-only file unless ``--broker-durable``) and a
throwaway PostgreSQL cluster (``durable=True``, ``shared_buffers`` 2 GB), the
benchmark measures, each phase on an empty broker:

1. **the ceiling** — a bare Celery ``send_task`` loop, no database: N messages
   of the shape Ostinato sends (the same task name, queue, one URL argument,
   the run id as task id, Ostinato's header), ``--batch-size`` sends inside one
   ``producer_or_acquire()``. No Celery-based runner can publish faster here.
   Run before and after every other phase: each phase's ratio is to the mean
   of the two loops around it (2 shared cores drift);
2. **Ostinato's runner** (``TaskRunner.run_once`` passes with a
   ``CeleryExecutor``) on SQLite (a file) and on PostgreSQL: N one-shot tasks of
   one task type (``max_queue_length`` N, so the room never limits; the runner's
   default batch of 1,000), passes timed until all N are dispatched;
3. **swh-scheduler 3.6.0's runner** (``swh.scheduler.celery_backend.runner.run_ready_tasks``),
   in its own virtual environment and process (``.bench-venvs/swh-scheduler-3.6.0``,
   made by ``bench/store/vs_swh.py``), on its own database of the same cluster, with
   its own Celery app (``build_app``) on the same broker: N one-shot tasks, one
   call that loops until nothing is ready. Its task type has no
   ``max_queue_length``: the peer reads queue depths only from RabbitMQ's
   management API (HTTP, port + 10000), which a Redis broker does not have,
   and an error there is not caught; without a maximum it grabs 10,000 tasks
   per batch (its ``MAX_NUM_TASKS``) without asking;
4. optionally (``--round-trip M``, 0 to skip) the **round trip**: one
   ``ostinato worker`` process (``-c 4``, thread pool) running the no-op
   :func:`noop`, the runner dispatching M tasks and the ``CeleryListener``
   recording the outcomes; completed runs per second until the last outcome
   is stored.

Every answer is checked, not assumed: the queue's length (``LLEN``, and
``QueueDepths``) is N; every message in it is read back and its task ids are
exactly the runs recorded ``scheduled`` (or, for the loop, 1..N), each with one
URL argument; the store counts N tasks ``next_run_scheduled``.

Each phase also reports the CPU microseconds per task spent, during its timed
region, by the dispatching process, Redis and PostgreSQL (from ``/proc``):
steadier than wall time when other work shares the cores. It prints a table
(tasks/s, the ratio to the ceiling, CPU per task, where the dispatch time
went) and writes the figures as JSON under ``bench/results/``.

Run from the repository root::

    .venv/bin/python bench/beat/celery_dispatch.py                  # N = 100,000
    .venv/bin/python bench/beat/celery_dispatch.py --quick          # N = 5,000, round trip 1,000

The peer's driver is ``bench/beat/celery_dispatch_peer.py`` (with the task type and
arguments both sides dispatch), the measuring helpers are in
``bench/beat/celery_dispatch_measures.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.table import Table

from bench.beat.celery_dispatch_measures import Broker, CpuMeter, check_messages, cpu_seconds
from bench.beat.celery_dispatch_peer import BACKEND_NAME, PEER_QUEUE, TASK_TYPE, next_run_of, task_url
from bench.common.peer import PEER_VENV, PeerProcess, create_peer_database, ensure_peer_venv
from bench.common.report import RESULTS, code_version, console, result_header
from ostinato.domain.clock import SystemClock
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskRunStatus, TaskStatus, TaskType
from ostinato.domain.visits import FeedbackPolicy
from ostinato.integrations.celery.app import HEADER, make_celery_app, queue_name, run_header
from ostinato.integrations.celery.executor import CeleryExecutor
from ostinato.integrations.celery.listener import CeleryListener
from ostinato.services.runner import TaskRunner
from ostinato.store.interface import Store
from ostinato.store.postgresql.store import PostgresStore
from ostinato.store.sqlite.store import SQLiteStore
from test_servers.postgres import PostgresCluster
from test_servers.redis import RedisServer
from test_servers.swh_peer import peer_packages

CREATE_BATCH = 10_000


def noop(*args: Any, **kwargs: Any) -> bool:
    """The round trip's task: does nothing (the worker resolves ``celery_dispatch:noop`` with bench/beat/ on PYTHONPATH)."""
    return True


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, help="N: tasks dispatched per phase (default 100000; 5000 with --quick)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: N = 5000, round trip 1000")
    parser.add_argument("--batch-size", type=int, default=1000, help="the runner's batch size, and sends per producer "
                        "in the loop (default 1000, the runner's default)")
    parser.add_argument("--stores", default="sqlite,postgresql", help="Ostinato's stores (default sqlite,postgresql)")
    parser.add_argument("--no-peer", dest="peer", action="store_false", help="skip swh-scheduler's runner")
    parser.add_argument("--peer-venv", type=Path, default=None, help="the peer's venv (default .bench-venvs/swh-scheduler-3.6.0)")
    parser.add_argument("--round-trip", type=int, help="M tasks for the round trip through a worker and the listener "
                        "(default 10000; 1000 with --quick; 0: skip)")
    parser.add_argument("--worker-concurrency", type=int, default=4, help="threads of the round trip's worker (default 4)")
    parser.add_argument("--broker-durable", action="store_true", help="Redis with appendfsync always (default: no AOF)")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL shared_buffers (default 2GB)")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off")
    parser.add_argument("--json-out", type=Path, help="default bench/results/celery-dispatch-<date>-<commit>-<N>.json")
    args = parser.parse_args(argv)
    if args.tasks is None:
        args.tasks = 5_000 if args.quick else 100_000
    if args.round_trip is None:
        args.round_trip = 1_000 if args.quick else 10_000
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if set(args.stores) - {"sqlite", "postgresql"}:
        parser.error(f"--stores: expected some of sqlite,postgresql, got {args.stores}")
    if min(args.tasks, args.batch_size, args.worker_concurrency) < 1 or args.round_trip < 0:
        parser.error("counts must be at least 1 (--round-trip at least 0)")
    if args.peer_venv is None and args.peer:
        args.peer_venv = PEER_VENV
    return args




# -- 1. the ceiling: a bare send_task loop ------------------------------------------------


def phase_loop(broker: Broker, meter: CpuMeter, n: int, batch: int) -> dict[str, Any]:
    broker.flush()
    app = make_celery_app(broker.url)
    queue = queue_name(BACKEND_NAME)
    headers = {HEADER: run_header(TASK_TYPE)}
    cpu = meter.sample()
    start = time.perf_counter()
    for first in range(0, n, batch):
        with app.producer_or_acquire() as producer:
            for i in range(first, min(first + batch, n)):
                app.send_task(BACKEND_NAME, args=[task_url(i)], kwargs={}, task_id=str(i + 1), queue=queue,
                              producer=producer, headers=headers)
    seconds = time.perf_counter() - start
    cpu_us = meter.per_task(cpu, n)
    check = check_messages(broker, queue, app, n, {str(i + 1) for i in range(n)}, header=True)
    return {"seconds": seconds, "count": n, "per_second": n / seconds, "cpu_us_per_task": cpu_us, "check": check,
            "broker_memory_bytes": broker.used_memory(), "loadavg": os.getloadavg()[0]}


# -- 2. Ostinato's runner -----------------------------------------------------------------


def create_ostinato_tasks(store: Store, n: int, now: datetime, max_queue_length: int) -> float:
    store.create_task_type(TaskType(TASK_TYPE, "benchmark: dispatch", BACKEND_NAME, default_interval=timedelta(days=1),
                                    max_queue_length=max_queue_length, num_retries=0))
    start = time.perf_counter()
    for first in range(0, n, CREATE_BATCH):
        tasks = [NewTask(TASK_TYPE, next_run_of(i, now), TaskArguments((task_url(i),)), policy=TaskPolicy.ONESHOT)
                 for i in range(first, min(first + CREATE_BATCH, n))]
        created = store.create_tasks(tasks)
        if len(created) != len(tasks):
            raise SystemExit(f"created {len(created)} tasks of {len(tasks)}")
    return time.perf_counter() - start


class Timings:
    """Seconds and calls of wrapped methods (instance attributes shadowing them), for where the time goes."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, obj: Any, name: str) -> None:
        fn = getattr(obj, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
                self.calls[name] = self.calls.get(name, 0) + 1

        setattr(obj, name, wrapper)


def scheduled_runs(store: Store) -> list[Any]:
    runs, after = [], 0
    while True:
        page = store.list_task_runs(status=[TaskRunStatus.SCHEDULED], after_id=after, limit=10_000)
        if not page:
            return runs
        runs.extend(page)
        after = page[-1].id


def phase_ostinato(broker: Broker, meter: CpuMeter, store: Store, n: int, batch: int,
                   analyze: Callable[[], None]) -> dict[str, Any]:
    broker.flush()
    now = datetime.now(UTC).replace(microsecond=0)
    create_s = create_ostinato_tasks(store, n, now, max_queue_length=n)
    analyze()
    app = make_celery_app(broker.url)
    clock = SystemClock()
    executor = CeleryExecutor(app, clock, node="bench", report=store.record_run_events)
    runner = TaskRunner(store, executor, clock, task_types=[TASK_TYPE], batch_size=batch)
    timings = Timings()
    timings.wrap(store, "grab_ready_tasks")
    timings.wrap(executor, "submit")
    timings.wrap(executor, "waiting")
    passes: list[float] = []
    cpu = meter.sample()
    start = time.perf_counter()
    dispatched = 0
    while dispatched < n:
        t = time.perf_counter()
        got = runner.run_once()
        passes.append(time.perf_counter() - t)
        if got == 0:
            raise SystemExit(f"a runner pass dispatched nothing after {dispatched:,} of {n:,}")
        dispatched += got
    seconds = time.perf_counter() - start
    cpu_us = meter.per_task(cpu, n)
    del store.grab_ready_tasks  # the checks below read the store unwrapped

    # the checks
    runs = scheduled_runs(store)
    counts = store.count_tasks()
    problems = []
    if dispatched != n or executor.sent != n or executor.send_failures:
        problems.append(f"dispatched {dispatched:,}, sent {executor.sent:,}, {executor.send_failures} send failures")
    if len(runs) != n or {r.backend_id for r in runs} != {executor.executor_id}:
        problems.append(f"{len(runs):,} runs scheduled (backend ids {sorted({str(r.backend_id) for r in runs})[:3]})")
    if counts.get((TASK_TYPE, TaskStatus.NEXT_RUN_SCHEDULED.value)) != n:
        problems.append(f"task counts {counts}")
    if problems:
        raise SystemExit("check failed: " + "; ".join(problems))
    check = check_messages(broker, queue_name(BACKEND_NAME), app, n, {str(r.id) for r in runs}, header=True)
    check["runs_scheduled"] = len(runs)
    check["tasks_next_run_scheduled"] = counts[(TASK_TYPE, TaskStatus.NEXT_RUN_SCHEDULED.value)]
    executor.stop()
    passes_sorted = sorted(passes)
    return {
        "seconds": seconds, "count": n, "per_second": n / seconds, "cpu_us_per_task": cpu_us, "create_seconds": create_s,
        "passes": len(passes), "pass_median_ms": passes_sorted[len(passes) // 2] * 1000,
        "pass_max_ms": passes_sorted[-1] * 1000,
        "spent": timings.seconds, "calls": timings.calls,
        "other_seconds": seconds - sum(timings.seconds.values()),
        "check": check, "broker_memory_bytes": broker.used_memory(), "loadavg": os.getloadavg()[0],
    }


def pg_analyze(dsn: str) -> Callable[[], None]:
    def analyze() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")
    return analyze


# -- 3. the peer ----------------------------------------------------------------------


def start_peer(python: Path) -> PeerProcess:
    """``celery_dispatch_peer.py`` in the peer venv's Python (the JSON-lines protocol of ``peer_protocol``)."""
    peer = PeerProcess.__new__(PeerProcess)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SWH_CONFIG_FILENAME")}
    peer.process = subprocess.Popen([str(python), str(HERE / "celery_dispatch_peer.py")], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, bufsize=1, cwd=REPO, env=env)
    return peer


def phase_peer(broker: Broker, meter: CpuMeter, peer: PeerProcess, dsn: str, n: int) -> dict[str, Any]:
    broker.flush()
    now = datetime.now(UTC).replace(microsecond=0)
    peer("create_task_type", max_queue_length=None)
    start = time.perf_counter()
    for first in range(0, n, CREATE_BATCH):
        stop = min(first + CREATE_BATCH, n)
        if peer("create_tasks", start=first, stop=stop, now=now.isoformat())["count"] != stop - first:
            raise SystemExit("the peer did not create every task")
    create_s = time.perf_counter() - start
    pg_analyze(dsn)()
    meter.dispatcher_pid = peer.process.pid  # the peer's process dispatches
    try:
        cpu = meter.sample()
        answer = peer("dispatch")
        cpu_us = meter.per_task(cpu, n)
    finally:
        meter.dispatcher_pid = os.getpid()
    seconds = answer["seconds"]
    with psycopg.connect(dsn) as conn:
        backend_ids = [r[0] for r in conn.execute("SELECT backend_id FROM task_run WHERE status = 'scheduled'")]
        tasks = conn.execute("SELECT count(*) FROM task WHERE type = %s AND status = 'next_run_scheduled'",
                             (TASK_TYPE,)).fetchone()[0]
    if answer["count"] != n or len(backend_ids) != n or tasks != n:
        raise SystemExit(f"check failed: the peer dispatched {answer['count']:,}, {len(backend_ids):,} runs scheduled, "
                         f"{tasks:,} tasks next_run_scheduled, expected {n:,}")
    app = make_celery_app(broker.url)
    check = check_messages(broker, PEER_QUEUE, app, n, set(backend_ids), header=False)
    check["runs_scheduled"] = len(backend_ids)
    check["tasks_next_run_scheduled"] = tasks
    spent = answer["spent"]
    return {"seconds": seconds, "count": n, "per_second": n / seconds, "cpu_us_per_task": cpu_us,
            "create_seconds": create_s, "spent": spent, "calls": answer["calls"], "other_seconds": seconds - sum(spent.values()),
            "check": check, "broker_memory_bytes": broker.used_memory(), "loadavg": os.getloadavg()[0]}


# -- 4. the round trip -----------------------------------------------------------------


def phase_round_trip(broker: Broker, meter: CpuMeter, dsn: str, m: int, batch: int, concurrency: int,
                     workdir: Path) -> dict[str, Any]:
    broker.flush()
    store = PostgresStore(dsn)
    store.init_schema()
    now = datetime.now(UTC).replace(microsecond=0)
    create_ostinato_tasks(store, m, now, max_queue_length=m)
    pg_analyze(dsn)()
    log_path = workdir / "worker.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]), "OSTINATO_DB": dsn, "OSTINATO_BROKER_URL": broker.url}
    with open(log_path, "ab") as log:
        worker = subprocess.Popen([sys.executable, "-m", "ostinato", "worker", "-t", TASK_TYPE, "-c", str(concurrency),
                                   "-P", "threads"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        deadline = time.monotonic() + 60
        while " ready." not in log_path.read_text(errors="replace"):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the worker did not start: {log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)
        clock = SystemClock()
        listener = CeleryListener(store, make_celery_app(broker.url), clock, FeedbackPolicy())
        threads = listener.start(stop)
        app = make_celery_app(broker.url)
        executor = CeleryExecutor(app, clock, node="bench", report=store.record_run_events)
        runner = TaskRunner(store, executor, clock, task_types=[TASK_TYPE], batch_size=batch)
        cpu, worker_cpu = meter.sample(), cpu_seconds([worker.pid])
        start = time.perf_counter()
        dispatched, dispatch_s = 0, None
        limit = start + max(300.0, m / 10)
        while listener.runs_recorded < m:
            if dispatched < m:
                dispatched += runner.run_once()
                if dispatched >= m:
                    dispatch_s = time.perf_counter() - start
            else:
                time.sleep(0.01)
            if time.perf_counter() > limit:
                raise SystemExit(f"round trip: {listener.runs_recorded:,} of {m:,} outcomes after {limit - start:.0f} s")
        seconds = time.perf_counter() - start
        cpu_us = meter.per_task(cpu, m)
        cpu_us["worker"] = (cpu_seconds([worker.pid]) - worker_cpu) / m * 1e6
        executor.stop()
    finally:
        stop.set()
        for thread in threads:
            thread.join(15)
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(10)
    counts = store.count_tasks()
    statuses: dict[str, int] = {}
    after = 0
    while True:
        page = store.list_task_runs(after_id=after, limit=10_000)
        if not page:
            break
        for r in page:
            statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        after = page[-1].id
    store.close()
    if counts.get((TASK_TYPE, TaskStatus.COMPLETED.value)) != m or sum(statuses.values()) != m or not all(
            TaskRunStatus(s).is_final for s in statuses):
        raise SystemExit(f"round trip check failed: task counts {counts}, run statuses {statuses}")
    return {"seconds": seconds, "count": m, "per_second": m / seconds, "cpu_us_per_task": cpu_us, "dispatch_seconds": dispatch_s,
            "worker_concurrency": concurrency, "run_statuses": statuses,
            "tasks_completed": counts[(TASK_TYPE, TaskStatus.COMPLETED.value)],
            "listener": {"runs_recorded": listener.runs_recorded, "started_recorded": listener.started_recorded,
                         "rejected": listener.rejected, "lost_marked": listener.lost_marked}}


# -- the report -------------------------------------------------------------------------


def where_the_time_went(result: dict[str, Any]) -> str:
    """The share of the dispatch spent in the database and in Celery's sends."""
    spent, seconds = result.get("spent") or {}, result["seconds"]
    if not spent:
        return ""
    if "submit" in spent:  # Ostinato
        db = spent.get("grab_ready_tasks", 0.0)
        send = spent["submit"]
    else:  # the peer
        db = sum(spent.get(k, 0.0) for k in ("peek_ready_tasks", "mass_schedule_task_runs", "set_status_tasks"))
        send = spent.get("send_task", 0.0)
    return f"db {db / seconds:.0%}, send {send / seconds:.0%}, other {max(0.0, seconds - db - send) / seconds:.0%}"


def report(results: dict[str, Any], args: argparse.Namespace, versions: dict[str, str]) -> None:
    title = (f"Celery dispatch through Redis {versions['redis']}: N={args.tasks:,}, batch {args.batch_size:,}, "
             f"broker AOF={'always' if args.broker_durable else 'off'}, PostgreSQL {versions.get('postgresql', '-')} "
             f"durable={args.durable}")
    caption = ("× ceiling: the rate over the mean rate of the bare send_task loops run just before and after it. "
               "CPU µs/task: the dispatching process / Redis / PostgreSQL (round trip: + the worker)")
    table = Table(title=title, caption=caption)
    for column, justify in (("phase", "left"), ("tasks", "right"), ("seconds", "right"), ("tasks/s", "right"),
                            ("× ceiling", "right"), ("CPU µs/task", "right"), ("where the dispatch time went", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]  # rich's justify is a Literal of these values
    for result in results.values():
        cpu = result["cpu_us_per_task"]
        cpu_cell = " / ".join(f"{cpu[k]:,.0f}" for k in ("dispatcher", "redis", "postgresql", "worker") if k in cpu)
        ratio = result.get("ratio_to_ceiling")
        went = where_the_time_went(result)
        if result.get("dispatch_seconds") is not None:
            went = f"all dispatched after {result['dispatch_seconds']:.1f} s"
        table.add_row(result["title"], f"{result['count']:,}", f"{result['seconds']:.1f}", f"{result['per_second']:,.0f}",
                      f"{ratio:.2f}×" if ratio is not None else "1", cpu_cell, went)
    Console(width=None if sys.stdout.isatty() else 170).print(table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()  # before the run: the modules measured are the ones imported now
    console.print(f"ostinato in {code['package']}: commit {(code['git_commit'] or '?')[:12]}")
    json_out = args.json_out or (RESULTS / f"celery-dispatch-{date.today().isoformat()}-"
                                 f"{(code['git_commit'] or 'unknown')[:7]}-{args.tasks}.json")
    n, batch = args.tasks, args.batch_size
    python = packages = None
    if args.peer:
        python = ensure_peer_venv(args.peer_venv)
        packages = peer_packages(python)
    results: dict[str, Any] = {}
    versions: dict[str, str] = {}
    started = time.monotonic()
    need_pg = "postgresql" in args.stores or args.peer or args.round_trip > 0

    def done(key: str, title: str, result: dict[str, Any]) -> None:
        results[key] = {"title": title, **result}
        cpu = ", ".join(f"{k} {v:,.0f}" for k, v in result["cpu_us_per_task"].items())
        console.print(f"  {title}: {result['count']:,} in {result['seconds']:.1f} s = {result['per_second']:,.0f}/s "
                      f"(CPU µs/task: {cpu}; load {os.getloadavg()[0]:.1f})")

    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ostinato-bench-")))
        server = stack.enter_context(RedisServer(persistent=args.broker_durable))
        broker = Broker(server)
        versions["redis"] = broker.version
        cluster = postmaster = None
        if need_pg:
            cluster = stack.enter_context(PostgresCluster(durable=args.durable, settings={"shared_buffers": args.shared_buffers}))
            with psycopg.connect(cluster.dsn()) as conn:
                versions["postgresql"] = conn.execute("SHOW server_version").fetchone()[0].split()[0]  # type: ignore[index]  # SHOW always returns a row
            postmaster = int((cluster.data_dir / "postmaster.pid").read_text().split()[0])
        assert server.process is not None
        meter = CpuMeter(server.process.pid, postmaster)
        console.print(f"Redis {broker.version} at {broker.url}; PostgreSQL {versions.get('postgresql', '-')}; N = {n:,}")
        loops: list[str] = []

        def loop() -> None:
            key = f"loop_{len(loops) + 1}"
            done(key, f"Celery send_task loop, no database (#{len(loops) + 1})", phase_loop(broker, meter, n, batch))
            loops.append(key)

        def measured(key: str, title: str, phase: Callable[[], dict[str, Any]]) -> None:
            """A phase between two loops: its ratio is to their mean rate."""
            done(key, title, phase())
            results[key]["ceiling_loops"] = [loops[-1]]
            loop()
            results[key]["ceiling_loops"].append(loops[-1])

        phase_loop(broker, meter, min(n, 2_000), batch)  # warm-up (imports, connections), not counted
        loop()
        if "sqlite" in args.stores:
            store = SQLiteStore(workdir / "bench.db")
            store.init_schema()
            try:
                measured("ostinato_sqlite", "Ostinato runner, SQLite",
                         lambda: phase_ostinato(broker, meter, store, n, batch, lambda: None))
            finally:
                store.close()
        if "postgresql" in args.stores:
            assert cluster is not None
            cluster.create_database("ostinato")
            pg_store = PostgresStore(cluster.dsn("ostinato"))
            pg_store.init_schema()
            try:
                measured("ostinato_postgresql", "Ostinato runner, PostgreSQL",
                         lambda: phase_ostinato(broker, meter, pg_store, n, batch, pg_analyze(cluster.dsn("ostinato"))))
            finally:
                pg_store.close()
        if args.peer:
            assert cluster is not None and python is not None
            peer_dsn = create_peer_database(cluster, python)
            peer = start_peer(python)
            try:
                versions.update({f"peer {k}": v for k, v in peer("init", dsn=peer_dsn, broker_url=broker.url)["versions"].items()})
                measured("swh_postgresql", f"swh-scheduler {versions['peer swh.scheduler']} runner, PostgreSQL",
                         lambda: phase_peer(broker, meter, peer, peer_dsn, n))
            finally:
                peer.close()
        if args.round_trip:
            assert cluster is not None
            cluster.create_database("roundtrip")
            done("round_trip", f"round trip: runner → 1 worker (-c {args.worker_concurrency}, threads) → listener, PostgreSQL",
                 phase_round_trip(broker, meter, cluster.dsn("roundtrip"), args.round_trip, batch, args.worker_concurrency,
                                  workdir))
            results["round_trip"]["ceiling_loops"] = [loops[-1]]
    elapsed = time.monotonic() - started

    loop_rates = [results[k]["per_second"] for k in loops]
    ceiling = sum(loop_rates) / len(loop_rates)
    for result in results.values():
        if "ceiling_loops" in result:
            reference = sum(results[k]["per_second"] for k in result["ceiling_loops"]) / len(result["ceiling_loops"])
            result["ratio_to_ceiling"] = result["per_second"] / reference
    report(results, args, versions)
    spread = (max(loop_rates) - min(loop_rates)) / ceiling
    console.print(f"ceiling: {ceiling:,.0f} tasks/s on average over {len(loops)} loops "
                  f"({min(loop_rates):,.0f} to {max(loop_rates):,.0f}, spread {spread:.0%})")
    versus = None
    if "ostinato_postgresql" in results and "swh_postgresql" in results:
        ours, theirs = results["ostinato_postgresql"], results["swh_postgresql"]
        versus = {"rate": ours["per_second"] / theirs["per_second"],
                  "dispatcher_cpu": theirs["cpu_us_per_task"]["dispatcher"] / ours["cpu_us_per_task"]["dispatcher"]}
        console.print(f"Ostinato (PostgreSQL) / swh-scheduler: {versus['rate']:.2f}× the rate, "
                      f"{versus['dispatcher_cpu']:.2f}× less dispatcher CPU per task")
    document = {
        **result_header("bench/beat/celery_dispatch.py", {"postgresql": {"version": versions.get("postgresql")}}),
        "code": code,
        "versions": versions,
        "peer": {"packages": packages, "venv": str(args.peer_venv)} if args.peer else None,
        "parameters": {"tasks": n, "batch_size": batch, "stores": args.stores, "peer": args.peer,
                       "round_trip": args.round_trip, "worker_concurrency": args.worker_concurrency,
                       "broker_durable": args.broker_durable, "durable": args.durable,
                       "shared_buffers": args.shared_buffers},
        "elapsed_seconds": elapsed,
        "ceiling_per_second": ceiling,
        "ceiling_loops_per_second": loop_rates,
        "results": results,
        "ostinato_postgresql_over_swh": versus,
    }
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    console.print(f"results written to {json_out} ({elapsed / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
