"""The console's history at archive scale: what the history pass costs and what its samples weigh.

On a fresh PostgreSQL (the store the archive runs), with N listed origins of one lister (``git``,
half of them visited, as ``bench/limits/origins.py`` makes them), S schedules and T task types, the history
pass runs every minute of a simulated span (``--days``, a manual clock; each schedule runs once an
hour), and prints:

- the pass's time (median and 95th percentile, milliseconds): it reads the metric cells, the
  schedules, one ready task per task type and the newest runs, so it does not grow with N;
- the samples written per day and the bytes they take (``pg_total_relation_size`` of
  ``history_sample``, table and indexes, per row and per day, the rewrites' dead rows included; then
  compacted, the live samples alone), and the bound at steady state:
  each series keeps at most 60 + 288 + 168 + 120 samples.

    .venv/bin/python bench/limits/history.py --origins 1000000 --days 2
    .venv/bin/python bench/limits/history.py --origins 10000 --days 1      # the same figures at 10⁴: compare
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg

from bench.common.report import console
from bench.limits.origins_data import Dataset
from bench.limits.tasks import fresh_store
from ostinato.domain.clock import ManualClock
from ostinato.domain.history import RESOLUTIONS, ROWS_PER_SERIES, SAMPLE_EVERY
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind
from ostinato.domain.tasks import TaskType
from ostinato.services.history import HistoryPass

H = timedelta(hours=1)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=1_000_000)
    parser.add_argument("--schedules", type=int, default=50)
    parser.add_argument("--task-types", type=int, default=10)
    parser.add_argument("--days", type=float, default=1.0, help="simulated span of passes, one a minute")
    parser.add_argument("--batch", type=int, default=10_000)
    return parser.parse_args(argv)


def relation_bytes(store) -> int:
    with store.db.write() as conn:
        return conn.execute("SELECT pg_total_relation_size('history_sample') AS b").fetchone()["b"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    clock = ManualClock(start)
    with tempfile.TemporaryDirectory(prefix="ostinato-history-") as workdir, \
            fresh_store("postgresql", Path(workdir), durable=False) as (store, version):
        data = Dataset(args.origins, 7, start)
        lister = store.get_or_create_lister("forge", "forge.example", start - 400 * 24 * H)
        began = time.perf_counter()
        for batch in data.listed_batches(args.batch):
            store.record_listed_origins(lister.id, batch, start - H)
        for number, batch in enumerate(data.status_batches(args.batch)):
            if number * args.batch >= args.origins // 2:
                break
            store.record_visit_statuses(batch, data_feedback(), now=start - H)
        console.print(f"PostgreSQL {version}: {args.origins:,} origins seeded in {time.perf_counter() - began:,.0f} s")
        for t in range(args.task_types):
            store.create_task_type(TaskType(type=f"load-kind-{t}", description="bench", backend_name="x:y",
                                            default_interval=24 * H))
        for s in range(args.schedules):
            store.create_schedule(Schedule(f"job-{s:03d}", ScheduleKind.PERIODIC, "load-kind-0", start - H,
                                           scheduling_period=H), start)
        history = HistoryPass(store, clock)
        hourly = int(H / SAMPLE_EVERY)
        passes, durations, written = int(args.days * 24 * hourly), [], 0
        for step in range(passes):
            now = clock.now()
            if step % hourly == 0:  # each schedule runs once an hour, every tenth run failing
                picked = store.pick_schedules(node="n", owner_name="bench", tags=[f"t{step}-{i}" for i in range(args.schedules)],
                                              now=now)
                for schedule, run in picked:
                    store.end_schedule_run(schedule.name, run.owner_tag, ended=now + timedelta(minutes=2),
                                           status=RunStatus.FAILED if (step // hourly + len(schedule.name)) % 10 == 0
                                           else RunStatus.SUCCEEDED)
            began = time.perf_counter()
            written += history.run_once().written
            durations.append((time.perf_counter() - began) * 1000)
            clock.advance(SAMPLE_EVERY)
        size = relation_bytes(store)
        rows = sum(len(store.read_history(r.seconds, start - H, clock.now())) for r in RESOLUTIONS)
        series = 1 + args.schedules + args.task_types
        per_row = size / rows if rows else 0.0
        per_day = written / args.days
        console.print(f"series: {series} (1 visit type, {args.schedules} schedules, {args.task_types} task types)")
        console.print(f"pass: median {statistics.median(durations):,.1f} ms, p95 "
                      f"{statistics.quantiles(durations, n=20)[-1]:,.1f} ms over {passes} passes")
        console.print(f"written: {per_day:,.0f} sample writes per day (each replaces its interval's sample)")
        console.print(f"kept: {rows:,} samples, {size / 1e6:,.2f} MB with indexes, {per_row:,.0f} bytes per sample")
        console.print(f"bytes per day at {args.origins:,} origins: {size / args.days / 1e6:,.2f} MB "
                      f"({size / args.days / series / 1e3:,.1f} kB per series)")
        console.print(f"steady-state bound: {ROWS_PER_SERIES} samples per series, about "
                      f"{ROWS_PER_SERIES * per_row * series / 1e6:,.1f} MB for these {series} series, whatever the origins")
        # the simulated day passes in minutes, where autovacuum would have reclaimed the rewrites' dead rows
        # all along: the live samples alone, compacted
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute("VACUUM FULL history_sample")
        live = relation_bytes(store)
        console.print(f"compacted (VACUUM FULL): {live / 1e6:,.2f} MB, {live / rows:,.0f} bytes per sample; bound about "
                      f"{ROWS_PER_SERIES * live / rows * series / 1e6:,.1f} MB for these {series} series")
    return 0


def data_feedback():
    from ostinato.domain.visits import FeedbackPolicy

    return FeedbackPolicy()


if __name__ == "__main__":
    raise SystemExit(main())
