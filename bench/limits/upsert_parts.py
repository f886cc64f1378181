"""Where the protocol's visit-stats upsert spends its database time, and what the policy indexes cost it.

Starts a private durable PostgreSQL (``shared_buffers`` 2 GB, checkpoints spaced: ``max_wal_size`` 16 GB,
``checkpoint_timeout`` 30 min, so that no full-page image blurs the parts), lists N origins of one lister as
``upsert_wal.py`` does, then runs the statement behind ``ostinato swh-rpc``'s ``origin_visit_stats_upsert``
(the store's ``merge_visit_stats``) on batches of 1,000 first successful visits under ``EXPLAIN (ANALYZE)``,
in four settings, one after the other on the same table:

- **as built**: every index of the visit stats;
- **without the indexes no row enters**: the partial indexes whose condition these rows do not meet
  (their conditions are still checked for each row when they exist);
- **without two that rows enter**: also the two policy indexes whose condition they meet
  (``visit_oldest_scheduled_idx``, ``visit_optimal_due_idx``), the primary key left;
- **without the metric triggers**: also the statement triggers that keep the origin metrics.

Per setting: the statement's execution, of which the JSON parse and the metric triggers, the commit (the
metric deltas applied, the WAL flushed), medians over the last 7 of 10 batches, and the WAL records a row.

    .venv/bin/python bench/limits/upsert_parts.py --origins 100000
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg

from bench.limits.upsert_wal import first_visits, listed_store, visit_order
from ostinato.store.compat.checks import check_visit_stats_updates
from ostinato.store.compat.flow import merge_rows
from test_servers.postgres import PostgresCluster

BATCHES, KEPT = 10, 7
ENTERED = ("visit_oldest_scheduled_idx", "visit_optimal_due_idx")


def _not_entered(conn: psycopg.Connection) -> list[str]:
    """The secondary indexes of the visit stats no first successful visit enters (all but the primary key and
    the two it enters)."""
    names = [r[0] for r in conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'origin_visit_stats' AND indexname NOT LIKE '%pkey'")]
    return [name for name in names if name not in ENTERED]


SETTINGS = (
    ("as built", lambda conn: []),
    ("without the indexes no row enters", lambda conn: [f"DROP INDEX {name}" for name in _not_entered(conn)]),
    ("without two that rows enter", lambda conn: [f"DROP INDEX {name}" for name in ENTERED]),
    ("without the metric triggers", lambda conn: ["ALTER TABLE origin_visit_stats DISABLE TRIGGER USER"]),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=100_000)
    args = parser.parse_args(argv)
    needed = len(SETTINGS) * BATCHES * 1000  # each batch visits origins never visited before
    if args.origins < needed:
        parser.error(f"--origins: at least {needed:,} (each of the {len(SETTINGS) * BATCHES} batches visits 1,000 "
                     f"origins for the first time), got {args.origins:,}")
    settings = {"shared_buffers": "2GB", "max_wal_size": "16GB", "checkpoint_timeout": "30min"}
    with PostgresCluster(durable=True, settings=settings) as cluster:
        dsn = cluster.dsn()
        store = listed_store(dsn, args.origins)
        sql = store.db.queries("compat").merge_visit_stats  # the statement itself, as the store's flow runs it
        order = visit_order(args.origins)
        print(f"{args.origins:,} origins; 1,000 first successful visits a batch; medians of the last {KEPT} of "
              f"{BATCHES} batches (ms)")
        print(f"{'':36s} {'statement':>9s} {'parse':>6s} {'triggers':>8s} {'commit':>6s} {'WAL records/row':>15s}")
        k = 0
        with psycopg.connect(dsn) as conn:
            for label, changes in SETTINGS:
                for change in changes(conn):
                    conn.execute(change)
                conn.commit()
                parts: dict[str, list[float]] = {"statement": [], "parse": [], "triggers": [], "commit": [], "wal": []}
                for _ in range(BATCHES):
                    stats = first_visits(order, k)
                    k += 1
                    horizon = stats[0].last_visit - timedelta(hours=1)
                    conn.execute(f"SET LOCAL ostinato.metrics_horizon = '{horizon.isoformat()}'")
                    params = {"rows": store.db.records(merge_rows(check_visit_stats_updates(stats)))}
                    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, WAL) " + sql, params))
                    started = time.perf_counter()
                    conn.commit()
                    parts["commit"].append((time.perf_counter() - started) * 1000)
                    parts["statement"].append(float(re.search(r"Execution Time: ([\d.]+)", plan).group(1)))
                    parts["parse"].append(float(re.search(r"Function Scan on json_to_recordset.*?actual time=[\d.]+\.\.([\d.]+)",
                                                          plan).group(1)))
                    parts["triggers"].append(sum(float(t) for t in re.findall(r"Trigger .*?time=([\d.]+)", plan)))
                    parts["wal"].append(int(re.search(r"WAL: records=(\d+)", plan).group(1)) / len(stats))
                median = {name: statistics.median(values[BATCHES - KEPT:]) for name, values in parts.items()}
                print(f"{label:36s} {median['statement']:9.1f} {median['parse']:6.1f} {median['triggers']:8.1f} "
                      f"{median['commit']:6.1f} {median['wal']:15.1f}")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
