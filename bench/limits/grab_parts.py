"""Where a PostgreSQL grab of 1,000 origins spends its time, on one database kept between runs.

``bench/limits/limits.py --steps origins,grabs`` measures the grab the way a user sees it, but it records
and feeds N origins first (8 minutes at 1,000,000 on this machine). This script builds that same
database once (``bench/limits/origins_data.py``'s listings and statuses, then ``VACUUM ANALYZE``) in a
cluster directory it keeps (``--dir``), and then measures only the grab statement
(``grab_picked`` with a policy's pick, as the store composes it), in transactions it rolls back, so
that every round starts from the same rows. Each round runs every variant once, in turn, with a
``now`` one minute later than the round before (as successive grabs have):

- ``as-is``: the statement as the store runs it;
- ``dry``: the pick alone, as a dry run runs it (``dry_picked``: locks, no marking);
- ``no-cooldown-index``: the statement with ``visit_cooldown_idx`` dropped inside the transaction,
  what maintaining that index costs;
- ``split-hot``: the design that marks with HOT updates, on a copy of the database (made once):
  the policy indexes on a narrow table of the origins that are not cooling down, from which a grab
  deletes what it takes, and the visit stats without any index on the columns a grab writes, so
  that their update is HOT; the marking then finds each stats row by its primary key.

It prints, per variant, the median and the lowest execution time (``EXPLAIN ANALYZE``), the buffers,
the WAL records and bytes of one round, and, for the stats table, the share of HOT updates; and
writes JSON. Compare variants within one run (they take turns): the machine's load moves every
figure, not the ratios.

Run from the repository root::

    .venv/bin/python bench/limits/grab_parts.py --origins 1000000 --dir /tmp/grab-parts   # builds once (8 min), then ~1 min
    .venv/bin/python bench/limits/grab_parts.py --origins 100000 --dir /tmp/grab-parts-100k --rounds 21
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg

from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.limits.limits import WAL_SETTINGS
from bench.limits.origins import LISTER
from bench.limits.origins_data import FEEDBACK, Dataset
from ostinato.store.origins.picks import pick_statement
from ostinato.store.postgresql import PostgresStore
from ostinato.store.postgresql.dialect import role_queries
from test_servers.postgres import PostgresCluster

PG = role_queries("origins")
NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)  # the data's clock: the database is built once
PICK_COLUMNS = {  # the pick, the narrow table's index for it
    "pick_never_visited_oldest_update_first": (
        "enabled AND last_successful IS NULL AND last_update IS NOT NULL", "(visit_type, is_fork, last_update)",
        "ORDER BY visit_type, is_fork, last_update"),
    "pick_already_visited_order_by_lag": (
        "enabled AND last_update > last_successful", "(visit_type, (last_update - last_successful) DESC)",
        "ORDER BY visit_type, (last_update - last_successful) DESC"),
}
SPLIT_SCHEMA = """
DROP INDEX visit_never_visited_idx, visit_by_lag_idx, visit_without_update_never_loaded_idx,
    visit_without_update_loaded_once_idx, visit_without_update_loaded_more_idx, visit_oldest_scheduled_idx,
    visit_stop_after_success_idx, visit_optimal_never_visited_idx, visit_optimal_due_idx, visit_cooldown_idx;
ALTER TABLE origin_visit_stats SET (fillfactor = 85);
VACUUM FULL origin_visit_stats;
CREATE TABLE origin_ready AS SELECT url, visit_type, enabled, is_fork, last_update, last_successful
    FROM origin_visit_stats WHERE cooldown_until IS NULL;
ALTER TABLE origin_ready ADD PRIMARY KEY (url, visit_type);
"""
SPLIT_GRAB = """
WITH picked AS MATERIALIZED (
    SELECT r.ctid AS tid, r.url, r.visit_type FROM origin_ready AS r
    WHERE r.visit_type = %(visit_type)s AND {where} {order} LIMIT %(limit)s FOR UPDATE SKIP LOCKED),
taken AS (DELETE FROM origin_ready AS r USING picked WHERE r.ctid = picked.tid),
marked AS (
    UPDATE origin_visit_stats AS s SET last_scheduled = %(now)s, cooldown_until = %(cooldown_until)s FROM picked
    WHERE s.url = picked.url AND s.visit_type = picked.visit_type
    RETURNING s.url, s.lister_id, s.extra_loader_arguments, s.last_update)
SELECT * FROM marked"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=1_000_000, help="origins of the database (default 1000000)")
    parser.add_argument("--dir", type=Path, required=True, help="the cluster's directory, kept and reused")
    parser.add_argument("--port", type=int, default=55432)
    parser.add_argument("--rounds", type=int, default=15, help="rounds of every variant (default 15)")
    parser.add_argument("--picks", default=",".join(PICK_COLUMNS), help=f"among {','.join(PICK_COLUMNS)}")
    parser.add_argument("--json-out", type=Path, help="default bench/results/grab-parts-<date>-<commit>-<N>.json")
    args = parser.parse_args(argv)
    args.picks = [p for p in args.picks.split(",") if p]
    if set(args.picks) - set(PICK_COLUMNS):
        parser.error(f"--picks: expected some of {', '.join(PICK_COLUMNS)}")
    return args


def build(cluster: PostgresCluster, n: int) -> None:
    """The benchmark's database, made once: listed, fed, vacuumed; and its split copy."""
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        have = {r[0] for r in conn.execute("SELECT datname FROM pg_database")}
    if "grabs" not in have:
        cluster.create_database("grabs_building")
        store = PostgresStore(cluster.dsn("grabs_building"))
        store.init_schema()
        data = Dataset(n, 42, NOW)
        lister = store.get_or_create_lister(*LISTER, NOW)
        with progress("record listed origins", n) as advance:
            for batch in data.listed_batches(10_000):
                advance(store.record_listed_origins(lister.id, batch, NOW))
        with progress("feed visit statuses", n) as advance:
            for batch in data.status_batches(10_000):
                store.record_visit_statuses(batch, FEEDBACK, now=NOW)
                advance(len(batch))
        store.close()
        with psycopg.connect(cluster.dsn("grabs_building"), autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
            conn.execute("ALTER DATABASE grabs_building RENAME TO grabs")
    if "grabs_split" not in have:
        cluster.create_database("grabs_split", template="grabs")
        with psycopg.connect(cluster.dsn("grabs_split"), autocommit=True) as conn:
            for statement in filter(str.strip, SPLIT_SCHEMA.split(";")):
                conn.execute(statement)
            for where, key, _ in PICK_COLUMNS.values():
                conn.execute(f"CREATE INDEX ON origin_ready {key} WHERE {where}")
            conn.execute("VACUUM ANALYZE")


def variants(pick: str) -> dict[str, tuple[str, str, list[str]]]:
    """name: (database, statement, statements run before it in its transaction)."""
    sql = pick_statement(PG, "postgresql", pick).rstrip().rstrip(";")
    where, _, order = PICK_COLUMNS[pick]
    return {
        "as-is": ("grabs", PG.grab_picked.replace("{pick}", sql), []),
        "dry": ("grabs", PG.dry_picked.replace("{pick}", sql), []),
        "no-cooldown-index": ("grabs", PG.grab_picked.replace("{pick}", sql), ["DROP INDEX visit_cooldown_idx"]),
        "split-hot": ("grabs_split", SPLIT_GRAB.format(where=where, order=order), []),
    }


def measure(cluster: PostgresCluster, pick: str, rounds: int) -> dict[str, Any]:
    chosen = variants(pick)
    conns = {db: psycopg.connect(cluster.dsn(db), autocommit=True) for db in {v[0] for v in chosen.values()}}
    times: dict[str, list[float]] = {name: [] for name in chosen}
    first: dict[str, dict[str, Any]] = {}
    try:
        for number in range(rounds):
            now = NOW + timedelta(minutes=number)
            params = {"visit_type": "git", "now": now, "lister_id": None, "visited_before": now - timedelta(days=1),
                      "cooldown_until": now + timedelta(days=1), "limit": 1000}
            for name, (db, sql, setup) in chosen.items():
                conn = conns[db]
                conn.execute("BEGIN")
                try:
                    conn.execute(f"SET LOCAL ostinato.metrics_horizon = '{(now - timedelta(hours=1)).isoformat()}'")
                    conn.execute(PG.index_ordered_picks)
                    for statement in setup:
                        conn.execute(statement)
                    before = _updates(conn)
                    plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) " + sql, params).fetchone()[0][0]
                    after = _updates(conn)
                finally:
                    conn.execute("ROLLBACK")
                times[name].append(plan["Execution Time"])
                if name not in first:
                    first[name] = {**_totals(plan["Plan"]), "stats_updates": after[0] - before[0],
                                   "stats_hot_updates": after[1] - before[1]}
    finally:
        for conn in conns.values():
            conn.close()
    return {name: {"median_ms": statistics.median(ms), "min_ms": min(ms), "ms": ms, **first[name]}
            for name, ms in times.items()}


def _updates(conn: psycopg.Connection) -> tuple[int, int]:
    """This transaction's updates of origin_visit_stats so far, and how many were HOT."""
    row = conn.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables "
                       "WHERE relname = 'origin_visit_stats'").fetchone()
    return (row[0], row[1]) if row else (0, 0)


def _totals(plan: dict[str, Any]) -> dict[str, int]:
    """Buffers and WAL of a whole plan: its top node and its CTEs (InitPlans hang off the top node)."""
    nodes = [plan, *(p for p in plan.get("Plans", []) if p.get("Parent Relationship") == "InitPlan")]
    keys = ("Shared Hit Blocks", "Shared Read Blocks", "Shared Dirtied Blocks", "WAL Records", "WAL Bytes", "WAL FPI")
    return {k.lower().replace(" ", "_"): sum(n.get(k, 0) for n in nodes) for k in keys}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    settings = {"shared_buffers": "2GB", **WAL_SETTINGS}
    with PostgresCluster(base_dir=args.dir, port=args.port, durable=True, settings=settings) as cluster:
        build(cluster, args.origins)
        results = {pick: measure(cluster, pick, args.rounds) for pick in args.picks}
    for pick, found in results.items():
        console.print(f"[bold]{pick}[/bold], {args.rounds} rounds")
        for name, r in found.items():
            console.print(f"  {name:18s} median {r['median_ms']:6.1f} ms, lowest {r['min_ms']:6.1f} ms; buffers "
                          f"{r['shared_hit_blocks'] + r['shared_read_blocks']:,}, WAL {r['wal_records']:,} records "
                          f"{r['wal_bytes']:,} bytes; stats updates {r['stats_updates']:,} "
                          f"(HOT {r['stats_hot_updates']:,})", soft_wrap=True)
    document = {**result_header("bench/limits/grab_parts.py", results), "code": code,
                "parameters": {"origins": args.origins, "rounds": args.rounds, "picks": args.picks}, "results": results}
    out = args.json_out or (RESULTS /
                            f"grab-parts-{date.today().isoformat()}-{(code['git_commit'] or 'unknown')[:7]}-{args.origins}.json")
    out.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    console.print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
