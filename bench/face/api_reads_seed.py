"""The data of the API-reads benchmark (``bench/face/api_reads.py``), seeded into one PostgreSQL database.

- N listed origins of one lister, by ``bench/scale/journal_group.py``'s own ``seed`` (``bench/origins_data.Dataset``);
- the journal's first M visit statuses of them fed into the visit stats with ``store.record_visit_statuses``,
  as the journal client does (60 % of the origins get a first visit, 40 % a second: ``Dataset``'s shape);
- the origin metrics counted once (``update_origin_metrics``), so that ``/api/v1/origin-metrics`` and the
  dashboard's visit-type rows have content;
- the task type ``load-git`` of ``bench/limits/tasks.py`` (the loader the origin page names) with T tasks of it
  (``new_task_batches``); a share of them grabbed and ended, some failed, so that the dashboard's task counts
  and recent failures have rows; a task type ``noop`` for the schedules;
- S periodic schedules (``bench-00001`` …), a tenth of them paused, periods of 1 to 24 hours;
- a read token, whose secret is returned.

Then ``VACUUM (ANALYZE)`` and ``CREATE EXTENSION pg_prewarm`` (to warm each server's cache the same way).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import psycopg

from bench.common.report import console, progress
from bench.limits.origins_data import Dataset
from bench.limits.tasks import TASK_TYPE, bench_task_type, new_task_batches
from bench.scale.journal_group import seed as seed_listings
from ostinato.api.tokens import hash_secret, new_secret
from ostinato.domain.schedules import Schedule, ScheduleKind
from ostinato.domain.tasks import RunEvent, TaskRunStatus, TaskType
from ostinato.domain.visits import FeedbackPolicy
from ostinato.store.postgresql import PostgresStore

SCHEDULE_TASK_TYPE = "noop"


def schedule_name(i: int) -> str:
    return f"bench-{i:05d}"


def feed_statuses(store: PostgresStore, data: Dataset, m: int, now: datetime) -> int:
    """The journal's first ``m`` statuses into the visit stats, in batches of 1,000."""
    policy, fed = FeedbackPolicy(), 0
    with progress("statuses", m) as advance:
        for statuses in data.status_batches(1_000):
            chunk = statuses[: m - fed]
            store.record_visit_statuses(chunk, policy, now=now)
            fed += len(chunk)
            advance(len(chunk))
            if fed >= m:
                break
    return fed


def seed_tasks(store: PostgresStore, n: int, now: datetime) -> dict[str, int]:
    """``n`` tasks of ``load-git``; a tenth of them grabbed, and of those a fifth failed, the rest ended well."""
    store.create_task_type(bench_task_type(n))
    for batch in new_task_batches(n, 10_000, now):
        store.create_tasks(batch)
    runs = [g.run.id for g in store.grab_ready_tasks(TASK_TYPE, now, max(1, n // 10), backend_id="bench")]
    ended = now - timedelta(minutes=5)
    outcomes = (TaskRunStatus.FAILED, TaskRunStatus.EVENTFUL, TaskRunStatus.UNEVENTFUL, TaskRunStatus.EVENTFUL,
                TaskRunStatus.UNEVENTFUL)
    events = [RunEvent(run, outcomes[i % len(outcomes)], ended, "bench") for i, run in enumerate(runs)]
    for start in range(0, len(events), 1_000):
        store.record_run_events(events[start:start + 1_000])
    return {"tasks": n, "runs": len(runs), "failed": len(runs[::len(outcomes)])}


def seed_schedules(store: PostgresStore, n: int, now: datetime) -> None:
    store.create_task_type(TaskType(SCHEDULE_TASK_TYPE, "returns at once", "bench.noop"))
    for i in range(1, n + 1):
        store.create_schedule(Schedule(schedule_name(i), ScheduleKind.PERIODIC, SCHEDULE_TASK_TYPE,
                                       now - timedelta(days=2), scheduling_period=timedelta(hours=1 + i % 24),
                                       enabled=i % 10 != 0), now)


def seed(dsn: str, data: Dataset, now: datetime, statuses: int, tasks: int, schedules: int) -> dict[str, Any]:
    """Everything of the module docstring into the database of ``dsn``; what was made, with the read secret."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    seed_listings(dsn, data, now, 10_000, 0)
    timings["listings_s"] = time.monotonic() - started
    store = PostgresStore(dsn)
    try:
        lap = time.monotonic()
        fed = feed_statuses(store, data, statuses, now)
        timings["statuses_s"] = time.monotonic() - lap
        lap = time.monotonic()
        made = seed_tasks(store, tasks, now)
        seed_schedules(store, schedules, now)
        metrics = store.update_origin_metrics(now)
        timings["tasks_schedules_metrics_s"] = time.monotonic() - lap
        secret = new_secret()
        store.create_api_token("bench-reader", "read", hash_secret(secret), now, actor="bench")
    finally:
        store.close()
    lap = time.monotonic()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        with_stats = conn.execute("SELECT count(*) FROM origin_visit_stats WHERE last_status_date IS NOT NULL"
                                  ).fetchone()[0]
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    timings["vacuum_s"] = time.monotonic() - lap
    console.print(f"seeded {data.n:,} origins ({with_stats:,} with visit stats from {fed:,} statuses), "
                  f"{made['tasks']:,} tasks ({made['runs']:,} runs, {made['failed']:,} failed), {schedules:,} "
                  f"schedules, {len(metrics)} origin metrics rows; {size / 1e9:.2f} GB, "
                  f"in {time.monotonic() - started:.0f} s", soft_wrap=True)
    return {"secret": secret, "origins": data.n, "statuses_fed": fed, "visit_stats_with_a_status": with_stats,
            **made, "schedules": schedules, "origin_metrics_rows": len(metrics), "database_bytes": size,
            "timings": timings}


def prewarm(dsn: str) -> int:
    """Every table and index of the database into the server's shared buffers (``pg_prewarm``): blocks read."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return int(conn.execute(
            "SELECT coalesce(sum(pg_prewarm(c.oid)), 0) FROM pg_class c "
            "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i', 't')").fetchone()[0])
