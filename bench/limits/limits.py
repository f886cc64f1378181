"""Ostinato's writes against the physical limit: each operation's rate and its share of a bare COPY of the same rows.

In one run, on one durable PostgreSQL it starts (and on SQLite, where the limit is a plain bulk
``INSERT``), for N origins and M tasks:

1. **record listed origins**: the N listings of ``bench/limits/origins_data.py``, ``--batch`` per call;
2. **feed visit statuses**: its N journal statuses, ``--batch`` per call;
3. **create tasks**: M tasks of ``bench/limits/tasks.py``, ``--batch`` per call;
4. **grab and record tasks**: ``grab_ready_tasks`` of ``--grab-batch`` until none is left;

each batch interleaved with the same rows written bare, by the limit (``bench/limits/limits_copy.py``):
one ``COPY`` into a table with only its primary key, in the same database, then a commit, the
writers taking turns at going first. For 1, 2 and 3 on PostgreSQL a third writer gives the schema's
limit: the rows the store writes, ``COPY``ed into clones of its tables with all their indexes (for 2,
the visit stats the statuses rewrite, applied by one ``UPDATE``); the store's share of it is printed
as ``…_of_shaped``. Between 2 and 3:

5. **metrics**: ``update_origin_metrics`` and ``get_origin_metrics``, each ``--rounds`` times;
6. **grab 1,000 visits by each policy**: ``--rounds`` dry runs and real grabs each (``bench/limits/origins.py``);

and the size on disk of every table and index (PostgreSQL), printed per row written
(``bench/limits/limits_scale.py``, which also compares runs of different sizes). It prints each rate, the limit's, and
the share, and writes JSON under ``bench/results/``. Every answer is checked as ``bench/limits/origins.py``
checks it (grabs fit their policy and never repeat an origin; the metrics count the data).

PostgreSQL keeps fsync and full-page writes on; its WAL is set up as for bulk writes
(:data:`WAL_SETTINGS`, ``--pg-defaults`` for PostgreSQL's own). ``--steps`` runs part of it.

Run from the repository root::

    .venv/bin/python bench/limits/limits.py --quick                     # 100,000 origins and tasks
    .venv/bin/python bench/limits/limits.py                             # 1,000,000
    .venv/bin/python bench/limits/limits.py --origins 10000000 --stores postgresql
"""

from __future__ import annotations

import argparse
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
from rich.console import Console
from rich.table import Table

from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.limits.limits_copy import (
    TaskIds,
    limit_writer,
    listed_rows,
    relation_sizes,
    run_rows,
    shaped_listed_rows,
    shaped_stats_rows,
    shaped_task_rows,
    status_rows,
    task_rows,
)
from bench.limits.limits_scale import print_sizes
from bench.limits.origins import LISTER, check_metrics, planner_statistics, run_grabs
from bench.limits.origins_data import FEEDBACK, POLICIES, Checker, Dataset
from bench.limits.tasks import BACKEND_ID, TASK_TYPE, bench_task_type, fresh_store, new_task_batches
from ostinato.domain.visits import plan_visit_feedback
from ostinato.store.interface import Store

STORES = ("postgresql", "sqlite")
STEPS = ("origins", "grabs", "metrics", "tasks")
#: how a server that takes bulk writes is set up (every tuning guide raises PostgreSQL's 1 GB / 5 min):
#: checkpoints far enough apart that a page is written whole to the WAL once per cycle rather than at
#: every batch, and those page images compressed. Durability is unchanged (fsync, full_page_writes on).
WAL_SETTINGS = {"max_wal_size": "16GB", "checkpoint_timeout": "30min", "wal_compression": "lz4"}

#: (key, title, unit, the limit's key or None, goal: (share or ms, comparison, value) or None)
FIGURES: tuple[tuple[str, str, str, str | None, tuple[str, str, float] | None], ...] = (
    ("listed_per_s", "record listed origins", "origins/s", "listed_limit_per_s", ("share", "≥", 0.7)),
    ("listed_shaped_limit_per_s", "  their rows COPYed into the store's tables and indexes", "origins/s",
     "listed_limit_per_s", None),
    ("statuses_per_s", "feed visit statuses", "statuses/s", "statuses_limit_per_s", ("share", "≥", 0.5)),
    ("statuses_shaped_limit_per_s", "  their new stats rows applied to the store's table and indexes", "statuses/s",
     "statuses_limit_per_s", None),
    ("tasks_created_per_s", "create tasks", "tasks/s", "tasks_limit_per_s", ("share", "≥", 0.7)),
    ("tasks_shaped_limit_per_s", "  their rows COPYed into the store's table and indexes", "tasks/s",
     "tasks_limit_per_s", None),
    ("tasks_grabbed_per_s", "grab tasks and record their runs", "tasks/s", "runs_limit_per_s", None),
    *((f"grab_{p.value}_real_median_ms", f"grab 1,000 {p.value} (median)", "ms", None, ("ms", "≤", 15.0))
      for p in POLICIES),
    *((f"grab_{p.value}_dry_run_median_ms", f"grab 1,000 {p.value}, dry run", "ms", None, None) for p in POLICIES),
    ("metrics_update_median_ms", "update_origin_metrics (median)", "ms", None, ("ms", "≤", 1000.0)),
    ("metrics_read_median_ms", "get_origin_metrics (median)", "ms", None, None),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=1_000_000, help="listed origins N, and visit statuses (default 1000000)")
    parser.add_argument("--tasks", type=int, help="tasks M (default: as many as origins)")
    parser.add_argument("--quick", action="store_true", help="100,000 origins and tasks: a development check")
    parser.add_argument("--batch", type=int, default=10_000, help="rows per call of the writes, and per bare COPY")
    parser.add_argument("--grab-batch", type=int, default=1_000, help="tasks per grab_ready_tasks call, origins per grab_next_visits")
    parser.add_argument("--rounds", type=int, default=5, help="dry-run and real grabs per policy, metrics calls (medians shown)")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated stores among postgresql,sqlite")
    parser.add_argument("--seed", type=int, default=42, help="seed of the generated data")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL shared_buffers (default 2GB)")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off (not like production)")
    parser.add_argument("--pg-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a PostgreSQL setting over the defaults below (repeatable)")
    parser.add_argument("--pg-defaults", action="store_true",
                        help=f"PostgreSQL's own WAL settings instead of {', '.join(f'{k}={v}' for k, v in WAL_SETTINGS.items())}")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"the steps to run, among {','.join(STEPS)}")
    parser.add_argument("--checkpoint", action="store_true",
                        help="CHECKPOINT before the grabs (PostgreSQL): each page a grab marks is then written whole to the WAL")
    parser.add_argument("--json-out", type=Path, help="default bench/results/limits-<date>-<commit>-<N>.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.origins = 100_000
    args.tasks = args.origins if args.tasks is None else args.tasks
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not args.stores or set(args.stores) - set(STORES):
        parser.error(f"--stores: expected some of {', '.join(STORES)}, got {args.stores}")
    args.steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    if set(args.steps) - set(STEPS):
        parser.error(f"--steps: expected some of {', '.join(STEPS)}, got {args.steps}")
    args.settings = {} if args.pg_defaults else dict(WAL_SETTINGS)
    for item in args.pg_setting:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--pg-setting: expected KEY=VALUE, got {item!r}")
        args.settings[key.strip()] = value.strip()
    if min(args.origins, args.tasks, args.batch, args.grab_batch, args.rounds) < 1:
        parser.error("--origins, --tasks, --batch, --grab-batch and --rounds must be at least 1")
    return args


def interleaved(label: str, total: int, batches: Iterator[Any], limit: Callable[[Any], float],
                store: Callable[[Any], int], shaped: Callable[[Any], float] | None = None) -> tuple[float, float, float]:
    """Each batch written bare (``limit``, its own seconds), into the store's shapes (``shaped``, when given) and by
    the store (timed here), the writers taking turns at going first; (store, limit, shaped seconds)."""
    seconds = [0.0, 0.0, 0.0]
    writers: list[Callable[[Any], float] | None] = [None, limit, shaped]
    with progress(label, total) as advance:
        for number, batch in enumerate(batches):
            done = 0
            for turn in range(3):
                which = (number + turn) % 3
                if which == 0:
                    start = time.perf_counter()
                    done = store(batch)
                    seconds[0] += time.perf_counter() - start
                elif writers[which] is not None:
                    seconds[which] += writers[which](batch)  # type: ignore[misc]  # checked not None just above (mypy does not narrow an item)
            advance(done)
    return seconds[0], seconds[1], seconds[2]


def medians(call: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """The median milliseconds of ``rounds`` calls, and the last call's answer."""
    times, answer = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        answer = call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), answer


def run_origins(store: Store, limit: Any, data: Dataset, store_name: str, args: argparse.Namespace,
                db_path: Path) -> dict[str, Any]:
    now, n = data.now, data.n
    expected = data.expected()
    lister = store.get_or_create_lister(*LISTER, now)
    written: list[int] = []

    def record(batch: list) -> int:
        written.append(store.record_listed_origins(lister.id, batch, now))
        return len(batch)

    shaped = (lambda b: limit.write_shaped("listed_origin", shaped_listed_rows(lister.id, now, b))) \
        if limit.write_shaped else None
    listed_s, listed_limit_s, listed_shaped_s = interleaved(
        "record listed origins", n, data.listed_batches(args.batch),
        lambda b: limit.write("listed_origin", listed_rows(lister.id, now, b)), record, shaped)
    checker = Checker(data, expected, store_name)
    if sum(written) != n:
        checker.warn(f"record_listed_origins wrote {sum(written):,} origins, expected {n:,}")
    changed: list[int] = []

    def feed(batch: list) -> int:
        changed.append(store.record_visit_statuses(batch, FEEDBACK, now=now))
        return len(batch)

    mirror: dict[tuple[str, str], Any] = {}  # the visit stats the store should hold: the schema's limit rewrites them

    def shaped_statuses(batch: list) -> float:
        plan = plan_visit_feedback(mirror, batch, FEEDBACK, now, {})  # the rule, untimed: the limit is the write
        mirror.update(((s.url, s.visit_type), s) for s in plan.stats)
        return limit.write_updated("visit_status", shaped_stats_rows(plan.stats))

    statuses_s, statuses_limit_s, statuses_shaped_s = interleaved(
        "feed visit statuses", n, data.status_batches(args.batch),
        lambda b: limit.write("visit_status", status_rows(b)), feed,
        shaped_statuses if limit.write_shaped else None)
    mirror.clear()
    if sum(changed) != n:
        checker.warn(f"record_visit_statuses changed {sum(changed):,} stats for {n:,} statuses")
    result: dict[str, Any] = {
        "listed_seconds": listed_s, "listed_per_s": n / listed_s, "listed_limit_per_s": n / listed_limit_s,
        "listed_shaped_limit_per_s": n / listed_shaped_s if listed_shaped_s else None,
        "statuses_seconds": statuses_s, "statuses_per_s": n / statuses_s, "statuses_limit_per_s": n / statuses_limit_s,
        "statuses_shaped_limit_per_s": n / statuses_shaped_s if statuses_shaped_s else None,
        "planner_statistics": planner_statistics(store_name, store, db_path, True),
    }
    if "metrics" in args.steps:  # before the grabs: the data's counts, nothing in flight
        update_ms, metrics = medians(lambda: store.update_origin_metrics(now), args.rounds)
        read_ms, _ = medians(store.get_origin_metrics, args.rounds)
        result.update(metrics_update_median_ms=update_ms, metrics_read_median_ms=read_ms,
                      metrics=check_metrics(checker, metrics, lister.id, n, expected))
    if "grabs" in args.steps and args.checkpoint and getattr(store, "dsn", None):
        with psycopg.connect(store.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]  # only a store with a dsn gets here (the getattr above)
            conn.execute("CHECKPOINT")
    if "grabs" in args.steps:
        result["grabs"] = grabs = run_grabs(store, data, checker, args.grab_batch, args.rounds)
        for policy, entry in grabs.items():
            result[f"grab_{policy}_dry_run_median_ms"] = entry["dry_run_median_ms"]
            result[f"grab_{policy}_real_median_ms"] = entry["real_median_ms"]
            if entry["real_wal_median_bytes"] is not None:
                console.print(f"  grab {args.grab_batch:,} {policy}: WAL written, median of the rounds: real "
                              f"{entry['real_wal_median_bytes'] / 1024:,.0f} KiB, dry run "
                              f"{entry['dry_run_wal_median_bytes'] / 1024:,.0f} KiB")
    result["anomalies"] = checker.anomalies
    return result


def run_tasks(store: Store, limit: Any, m: int, args: argparse.Namespace, now: datetime) -> dict[str, Any]:
    task_type = bench_task_type(m)
    store.create_task_type(task_type)
    task_ids, run_ids = TaskIds(), TaskIds()
    shaped_ids = TaskIds()
    shaped = (lambda b: limit.write_shaped("task", shaped_task_rows(shaped_ids, b, task_type.default_interval))) \
        if limit.write_shaped else None
    created_s, created_limit_s, created_shaped_s = interleaved(
        "create tasks", m, new_task_batches(m, args.batch, now),
        lambda b: limit.write("task", task_rows(task_ids, b, task_type.default_interval)),
        lambda b: len(store.create_tasks(b)), shaped)
    grabbed = 0
    grab_s = grab_limit_s = 0.0
    with progress("grab and record tasks", m) as advance:
        for _ in range(m // args.grab_batch + 2):
            start = time.perf_counter()
            runs = store.grab_ready_tasks(TASK_TYPE, now, args.grab_batch, backend_id=BACKEND_ID)
            grab_s += time.perf_counter() - start
            if not runs:
                break
            grab_limit_s += limit.write("task_run", run_rows(run_ids, runs))
            grabbed += len(runs)
            advance(len(runs))
    anomalies = [] if grabbed == m else [f"grabbed {grabbed:,} tasks, expected {m:,}"]
    return {"tasks_created_seconds": created_s, "tasks_created_per_s": m / created_s,
            "tasks_limit_per_s": m / created_limit_s,
            "tasks_shaped_limit_per_s": m / created_shaped_s if created_shaped_s else None, "tasks_grabbed_seconds": grab_s,
            "tasks_grabbed_per_s": grabbed / grab_s if grab_s else None,
            "runs_limit_per_s": grabbed / grab_limit_s if grab_limit_s else None, "anomalies": anomalies}


def shares(result: dict[str, Any]) -> dict[str, float]:
    """Each rate over its limit's, and the store's writes over the schema's limit (``…_of_shaped``)."""
    found = {key: result[key] / result[limit] for key, _, _, limit, _ in FIGURES
             if limit and result.get(key) and result.get(limit)}
    for key, shaped in (("listed_per_s", "listed_shaped_limit_per_s"), ("statuses_per_s", "statuses_shaped_limit_per_s"),
                        ("tasks_created_per_s", "tasks_shaped_limit_per_s")):
        if result.get(key) and result.get(shaped):
            found[f"{key}_of_shaped"] = result[key] / result[shaped]
    return found


def verdict(key: str, goal: tuple[str, str, float] | None, result: dict[str, Any], share: dict[str, float]) -> str:
    if goal is None:
        return ""
    kind, sign, target = goal
    value = share.get(key) if kind == "share" else result.get(key)
    text = f"{sign} {target:g}{'' if kind == 'share' else ' ms'}"
    if value is None:
        return text
    met = value >= target if sign == "≥" else value <= target
    return f"{text}: {'met' if met else 'missed'}"


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    table = Table(title=f"Ostinato against the limit: {args.origins:,} origins, {args.tasks:,} tasks, batch {args.batch:,}, "
                        f"PostgreSQL durable={args.durable}")
    table.add_column("operation")
    table.add_column("unit")
    for name in results:
        for column in (f"{name}", "limit", "share", "goal"):
            table.add_column(column, justify="right")
    for key, title, unit, limit, goal in FIGURES:
        cells = [title, unit]
        for result in results.values():
            value, bound = result.get(key), result.get(limit) if limit else None
            share = result["shares"].get(key)
            cells += [_fmt(value, unit) if key in result else "not run", _fmt(bound, unit) if bound else "",
                      f"{share:.2f}" if share is not None else "", verdict(key, goal, result, result["shares"])]
        table.add_row(*cells)
    Console(width=None if sys.stdout.isatty() else 200).print(table)


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "error"
    return f"{value:,.1f}" if unit == "ms" else f"{value:,.0f}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    console.print(f"ostinato in {code['package']}: commit {(code['git_commit'] or '?')[:12]}, "
                  f"store sha256 {code['store_sha256'][:12]}{' (modified)' if code['store_changes'] else ''}")
    now = datetime.now(UTC).replace(microsecond=0)
    data = Dataset(args.origins, args.seed, now)
    results: dict[str, dict[str, Any]] = {}
    for name in args.stores:
        console.print(f"[bold]{name}[/bold]: {args.origins:,} origins, {args.tasks:,} tasks")
        with tempfile.TemporaryDirectory(prefix="ostinato-limits-") as workdir:
            db_path = Path(workdir) / "bench.db"
            with fresh_store(name, Path(workdir), args.durable, args.shared_buffers, args.settings) as (store, version):
                dsn = getattr(store, "dsn", None)
                result = {"anomalies": []}
                with limit_writer(name, dsn, db_path) as limit:
                    if "origins" in args.steps:
                        result = run_origins(store, limit, data, name, args, db_path)
                    if "tasks" in args.steps:
                        tasks = run_tasks(store, limit, args.tasks, args, now - timedelta(seconds=1))
                        result.update({k: v for k, v in tasks.items() if k != "anomalies"})
                        result["anomalies"] += tasks["anomalies"]
                result["sizes"] = relation_sizes(dsn) if dsn else None
        result["shares"] = shares(result)
        results[name] = {"version": version, **result}
        console.print("  " + ", ".join(f"{k} {v:.2f}" for k, v in result["shares"].items()))
    report(results, args)
    document = {
        **result_header("bench/limits/limits.py", results), "code": code,
        "parameters": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()} | {"now": now.isoformat()},
        "results": results,
    }
    out = args.json_out or (RESULTS /
                            f"limits-{date.today().isoformat()}-{(code['git_commit'] or 'unknown')[:7]}-{args.origins}.json")
    if (results.get("postgresql") or {}).get("sizes"):
        print_sizes(document)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    console.print(f"results written to {out}")
    anomalies = sum(len(r["anomalies"]) for r in results.values())
    if anomalies:
        console.print(f"[yellow]{anomalies} warning(s)[/yellow]: see `anomalies` in the JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
