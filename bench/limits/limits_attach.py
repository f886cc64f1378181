"""The grabs, the metrics and the sizes of bench/limits/limits.py, measured on a database a run already filled.

A ``bench/limits/limits.py --origins 10000000`` run on a loaded 2-core machine can take longer than one
has: one took 83 minutes here, 46 of them feeding the ten million statuses. This script attaches to the
run's PostgreSQL (its DSN is printed by ``py-spy dump --locals`` of the run, or known from its
``ps`` line) while the run is paused at a batch boundary (``kill -STOP``; see bench/limits/scale.md),
and measures on the data as it stands:

1. ``ANALYZE`` (timed), as the run does before its grabs;
2. ``update_origin_metrics`` and ``get_origin_metrics``, ``--rounds`` times each (medians);
3. for each policy, ``--rounds`` dry-run grabs then ``--rounds`` real grabs of ``--grab-batch``
   ``git`` origins (medians, and how many each returned);
4. the size of every table and index (``bench/limits/limits_copy.py``), printed per row written.

Its answers are not checked against the data (the run's checker expects every status fed), only
timed and counted; real grabs mark origins scheduled, so resume the run only to end it.

    .venv/bin/python bench/limits/limits_attach.py --dsn postgresql://postgres@127.0.0.1:PORT/bench \\
        --now 2026-11-25T16:33:00+00:00 --origins 10000000 --statuses 5000000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg

from bench.common.report import console, result_header
from bench.limits.limits_copy import relation_sizes
from bench.limits.limits_scale import print_sizes
from bench.limits.origins_data import POLICIES, VISIT_TYPE
from ostinato.domain.visit_policies import GrabRequest
from ostinato.store.postgresql.store import PostgresStore


def medians(call: Any, rounds: int) -> tuple[float, list[float], Any]:
    times, answer = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        answer = call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), times, answer


def measure(store: PostgresStore, dsn: str, now: datetime, rounds: int, count: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        result["version"] = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        start = time.perf_counter()
        conn.execute("ANALYZE")
        result["analyze_seconds"] = time.perf_counter() - start
    update_ms, update_all, metrics = medians(lambda: store.update_origin_metrics(now), rounds)
    read_ms, read_all, _ = medians(store.get_origin_metrics, rounds)
    result.update(metrics_update_median_ms=update_ms, metrics_update_ms=update_all,
                  metrics_read_median_ms=read_ms, metrics_read_ms=read_all,
                  metrics=[{"lister_id": m.lister_id, "visit_type": m.visit_type, "origins_known": m.origins_known,
                            "origins_never_visited": m.origins_never_visited} for m in metrics])
    grabs: dict[str, Any] = {}
    for policy in POLICIES:
        entry: dict[str, Any] = {}
        for dry_run in (True, False):
            kind = "dry_run" if dry_run else "real"
            times, returned = [], []
            for _ in range(rounds):
                start = time.perf_counter()
                visits = store.grab_next_visits(VISIT_TYPE, [GrabRequest(policy, count)], now, dry_run=dry_run)
                times.append((time.perf_counter() - start) * 1000)
                returned.append(len(visits))
            entry.update({f"{kind}_ms": times, f"{kind}_returned": returned,
                          f"{kind}_median_ms": statistics.median(times)})
            result[f"grab_{policy.value}_{kind}_median_ms"] = entry[f"{kind}_median_ms"]
        grabs[policy.value] = entry
        console.print(f"  {policy.value}: dry run {entry['dry_run_median_ms']:.1f} ms, real {entry['real_median_ms']:.1f} ms, "
                      f"returned {entry['real_returned']}")
    result["grabs"] = grabs
    result["sizes"] = relation_sizes(dsn)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="the filled database")
    parser.add_argument("--now", required=True, type=datetime.fromisoformat, help="the run's now (ISO 8601, with offset)")
    parser.add_argument("--origins", type=int, required=True, help="origins the run listed (to divide the sizes by)")
    parser.add_argument("--statuses", type=int, required=True, help="statuses the run had fed when paused")
    parser.add_argument("--rounds", type=int, default=5, help="metrics calls and grabs per policy and kind (medians)")
    parser.add_argument("--grab-batch", type=int, default=1_000, help="origins per grab")
    parser.add_argument("--json-out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.now.tzinfo is None:
        parser.error(f"--now: expected a time with its UTC offset, got {args.now.isoformat()}")
    store = PostgresStore(args.dsn)
    try:
        result = measure(store, args.dsn, args.now, args.rounds, args.grab_batch)
    finally:
        store.close()
    console.print(f"  metrics: update {result['metrics_update_median_ms']:.1f} ms, read {result['metrics_read_median_ms']:.2f} ms "
                  f"(medians of {args.rounds}); ANALYZE {result['analyze_seconds']:.0f} s")
    document = {**result_header("bench/limits/limits_attach.py", {"postgresql": result}),
                "parameters": {k: (str(v) if isinstance(v, (Path, datetime)) else v) for k, v in vars(args).items()},
                "results": {"postgresql": result}}
    # print_sizes divides the origin tables by the origins listed; the task tables are empty here
    print_sizes({"parameters": {"origins": args.origins, "tasks": 0},
                 "results": {"postgresql": {"listed_per_s": 1, "sizes": result["sizes"]}}})
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    console.print(f"results written to {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
