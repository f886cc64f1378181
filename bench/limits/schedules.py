"""The deadline scheduler's two figures (docs/reference/performance.md), on each store:

1. **pick**: with N stored schedules (default 1,000,000; a tenth paused, a seventh
   running, the rest due at spread times), the median time of
   ``Store.pick_schedules`` taking one schedule; and the same with lookahead
   (``rule=PickRule(lookahead=Lookahead())``, its default K and horizon, three live
   schedulers of 16 slots registered), picks alternating with the plain one, with
   the ratio of the two;
2. **burst**: 10,000 schedules all due in the same second, and one
   ``DeadlineScheduler`` with room for all of them (capacity 10,000) whose job
   returns at once: the time from its first pass until all 10,000 have started
   (picked, owned, their runs open, their threads started).

The N stored schedules are written with one bulk SQL statement (setup, not
measured); the burst's 10,000 through ``Store.create_schedule``.

    .venv/bin/python bench/limits/schedules.py                      # both stores, N = 1,000,000
    .venv/bin/python bench/limits/schedules.py --schedules 100000 --stores postgresql
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.report import code_version, console, result_header
from bench.limits.tasks import fresh_store
from ostinato.domain.clock import SystemClock
from ostinato.domain.lookahead import Lookahead, PickRule
from ostinato.domain.schedules import Schedule, ScheduleKind
from ostinato.domain.tasks import TaskType
from ostinato.execution.registry import TaskRegistry
from ostinato.services.deadline_scheduler import DeadlineScheduler

BURST = 10_000
LOOKAHEAD = PickRule(lookahead=Lookahead())
AIMS = {"pick_ms": 5.0, "burst_s": 5.0}

SEED_PG = """
INSERT INTO schedule (name, kind, task_type, mode, scheduling_period, tz, enabled, created_at, owner_tag,
                      can_start_by, should_start_by)
SELECT 'stored-' || i, 'periodic', 'noop', 'run', interval '1 day', 'UTC', i % 10 <> 0, %(now)s,
       CASE WHEN i % 7 = 0 THEN 'tag-' || i END,
       %(now)s + ((i % 3600) - 1800) * interval '1 second', %(now)s + ((i * 7919) % 86400) * interval '1 second'
FROM generate_series(1::bigint, %(n)s::bigint) AS i;
ANALYZE schedule;
"""
SEED_SQLITE = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)
INSERT INTO schedule (name, kind, task_type, mode, scheduling_period, tz, enabled, created_at, owner_tag,
                      can_start_by, should_start_by)
SELECT 'stored-' || i, 'periodic', 'noop', 'run', 86400.0, 'UTC', i % 10 <> 0, :now,
       CASE WHEN i % 7 = 0 THEN 'tag-' || i END,
       strftime('%Y-%m-%dT%H:%M:%f000+00:00', :now, ((i % 3600) - 1800) || ' seconds'),
       strftime('%Y-%m-%dT%H:%M:%f000+00:00', :now, ((i * 7919) % 86400) || ' seconds')
FROM n;
"""


def seed(store, n: int, now: datetime) -> None:
    if store.dialect == "postgresql":
        import psycopg

        with psycopg.connect(store.dsn, autocommit=True) as conn:
            for statement in filter(str.strip, SEED_PG.split(";")):
                conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s").replace("%%(n)s", "%(n)s"),
                             {"now": now, "n": n})
    else:
        with store.db.write() as conn:
            conn.execute(SEED_SQLITE, {"n": n, "now": now.isoformat(timespec="microseconds")})


def measure(store, n: int, rounds: int) -> dict:
    now = datetime.now(UTC).replace(microsecond=0)
    store.create_task_type(TaskType("noop", "returns at once", "bench.noop"))
    # the burst first, on a store that holds nothing else: 10,000 schedules due in the same second
    due = now - timedelta(seconds=1)
    for i in range(BURST):
        store.create_schedule(Schedule(f"burst-{i:05d}", ScheduleKind.PERIODIC, "noop", due - timedelta(days=2),
                                       scheduling_period=timedelta(days=1)), now)
    registry = TaskRegistry()
    registry.register("bench.noop", lambda: None)
    scheduler = DeadlineScheduler(store, SystemClock(), node="burst", registry=registry, capacity=BURST)
    t0 = time.perf_counter()
    while scheduler.started < BURST:
        if scheduler.run_once() == 0:
            time.sleep(0.001)
    burst_s = time.perf_counter() - t0
    scheduler.wait_runs()
    # then N stored schedules, and single picks among them
    started = time.perf_counter()
    seed(store, n, now)
    console.print(f"  {n:,} schedules stored in {time.perf_counter() - started:.0f} s")
    for node in ("bench", "other-1", "other-2"):
        store.heartbeat_scheduler(node, "pick", slots=16, run_ends=[now + timedelta(minutes=m) for m in range(1, 16)],
                                  now=now)
    samples, ahead = [], []
    for _ in range(rounds):
        for rule, kept in ((None, samples), (LOOKAHEAD, ahead)):
            t0 = time.perf_counter()
            picked = store.pick_schedules(node="bench", owner_name="pick", tags=[uuid.uuid4().hex], now=now,
                                          **({"rule": rule} if rule else {}))
            kept.append((time.perf_counter() - t0) * 1000)
            assert len(picked) <= 1 and all(s.name.startswith("stored-") for s, _ in picked)
    return {"pick_ms_median": statistics.median(samples), "pick_ms_p90": sorted(samples)[int(len(samples) * 0.9)],
            "lookahead_pick_ms_median": statistics.median(ahead),
            "lookahead_pick_ms_p90": sorted(ahead)[int(len(ahead) * 0.9)],
            "lookahead_to_plain": statistics.median(ahead) / statistics.median(samples),
            "pick_samples_ms": samples, "lookahead_samples_ms": ahead, "burst_s": burst_s,
            "burst_started": scheduler.started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schedules", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=200, help="picks timed")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--shared-buffers", default="2GB")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)
    code = code_version()
    results = {}
    for name in args.stores.split(","):
        console.print(f"[bold]{name}[/bold]")
        with tempfile.TemporaryDirectory(prefix="ostinato-bench-") as workdir:
            with fresh_store(name, Path(workdir), True, args.shared_buffers) as (store, version):
                results[name] = {"version": version, **measure(store, args.schedules, args.rounds)}
        r = results[name]
        console.print(f"  lookahead pick: median {r['lookahead_pick_ms_median']:.2f} ms, p90 "
                      f"{r['lookahead_pick_ms_p90']:.2f} ms ({r['lookahead_to_plain']:.2f}× the plain pick; aim ≤ "
                      f"{AIMS['pick_ms']} ms on PostgreSQL)")
        console.print(f"  pick: median {r['pick_ms_median']:.2f} ms (aim ≤ {AIMS['pick_ms']} ms on PostgreSQL); "
                      f"{BURST:,} due at once all started in {r['burst_s']:.2f} s (aim ≤ {AIMS['burst_s']} s)")
    out = args.json_out or Path("bench/results") / (
        f"schedules-{datetime.now(UTC):%Y-%m-%d}-{(code.get('git_commit') or 'unknown')[:7]}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {**result_header("bench/limits/schedules.py", results), "code": code,
                "parameters": {"schedules": args.schedules, "rounds": args.rounds, "burst": BURST,
                               "shared_buffers": args.shared_buffers}, "results": results, "aims_postgresql": AIMS}
    out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    console.print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
