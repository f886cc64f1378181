"""What partitioning the origin tables would change, measured on one PostgreSQL server in one run.

Three copies of the two origin tables (``listed_origin`` and ``origin_visit_stats``, each made by
``LIKE … INCLUDING ALL`` from the store's own schema, so with every index and check of the store), each
in a schema of its own:

- ``plain``: as the store has them;
- ``by_type``: ``PARTITION BY LIST (visit_type)``, one part for the benchmark's visit type and a default one;
- ``by_hash``: ``PARTITION BY HASH (url)`` in ``--parts`` parts (16 by default).

The same rows go into each copy, batch by batch, the copies taking turns at going first:

1. **listings**: the rows the store writes for a new listed origin (its listing and its visit-stats row),
   one binary ``COPY`` per table and a commit, as ``bench/limits/limits.py`` measures the schema's limit;
2. **statuses**: the visit-stats rows the store ends with after each batch of statuses (computed once,
   untimed, by the domain's rule), ``COPY``ed into a staging table and applied by one ``UPDATE … FROM``,
   with the planner settings of the store's batches (index lookups only: on the hash-partitioned copy the
   planner would otherwise scan every part whole, for every batch) and, as in the store's sessions, without JIT
   (the partitioned plans cost enough to be compiled, about half a second per batch);
3. after ``VACUUM ANALYZE``, **grabs of** ``--grab-batch`` **origins** by four policies, with the store's own
   pick statements (the copy's schema first on the ``search_path``), in transactions rolled back so that
   each round starts from the same rows: the pick alone (what a dry run runs), and the pick with its
   marking. The store marks by tuple id, which a partitioned table does not make unique (each part numbers
   its own rows), so every copy is marked here by key (URL, visit type), the form a partitioned store would
   need; on ``plain`` the store's marking by tuple id is timed too.

It prints each figure with its ratio to ``plain`` and writes JSON with the sizes of every copy (its parts
summed). There is one writer: several writers, each on its own part, are what hash partitioning is for, and
two cores cannot show that. Run from the repository root::

    .venv/bin/python bench/limits/partitions.py --origins 1000000
    .venv/bin/python bench/limits/partitions.py --origins 100000 --rounds 5      # a quick look
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg

from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.limits.limits import WAL_SETTINGS
from bench.limits.limits_copy import SHAPED_UPDATES, copy_shaped, shaped_listed_rows, shaped_stats_rows, update_from_staged
from bench.limits.origins_data import FEEDBACK, VISIT_TYPE, Dataset
from ostinato.domain.visits import plan_visit_feedback
from ostinato.store.origins.picks import pick_statement
from ostinato.store.postgresql import PostgresStore
from ostinato.store.postgresql.dialect import INDEX_DRIVEN_BATCHES, role_queries
from test_servers.postgres import PostgresCluster

PG = role_queries("origins")
TABLES = ("listed_origin", "origin_visit_stats")
LAYOUTS = {"plain": "", "by_type": " PARTITION BY LIST (visit_type)", "by_hash": " PARTITION BY HASH (url)"}
PICKS = ("pick_never_visited_oldest_update_first", "pick_already_visited_order_by_lag",
         "pick_oldest_scheduled_first", "pick_stop_after_success")
LISTER_ID = 1
MARK_BY_KEY = """
WITH picked AS MATERIALIZED ({pick}),
marked AS (
    UPDATE origin_visit_stats AS u SET last_scheduled = %(now)s, cooldown_until = %(cooldown_until)s
    FROM picked WHERE u.url = picked.url AND u.visit_type = %(visit_type)s
)
SELECT url FROM picked
"""
MARK_BY_TID = """
WITH picked AS MATERIALIZED ({pick}),
marked AS (
    UPDATE origin_visit_stats AS u SET last_scheduled = %(now)s, cooldown_until = %(cooldown_until)s
    FROM picked WHERE u.ctid = picked.tid
)
SELECT url FROM picked
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=1_000_000, help="listed origins and statuses (default 1000000)")
    parser.add_argument("--parts", type=int, default=16, help="parts of the hash-partitioned copy (default 16)")
    parser.add_argument("--batch", type=int, default=10_000, help="rows per write (default 10000)")
    parser.add_argument("--grab-batch", type=int, default=1000, help="origins per grab (default 1000)")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of grabs per policy and copy (default 9)")
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help=f"copies to build, among {','.join(LAYOUTS)} "
                        "(default all; plain is always built: the ratios are to it)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--shared-buffers", default="2GB")
    parser.add_argument("--json-out", type=Path, help="default bench/results/partitions-<date>-<commit>-<N>.json")
    args = parser.parse_args(argv)
    chosen = [name for name in args.layouts.split(",") if name]
    if set(chosen) - set(LAYOUTS):
        parser.error(f"--layouts: expected some of {', '.join(LAYOUTS)}")
    args.layouts = ["plain", *(name for name in LAYOUTS if name in chosen and name != "plain")]
    if args.parts < 2:
        parser.error("--parts: expected at least 2")
    if args.origins < args.batch or args.batch < 1:
        parser.error("--origins: expected at least --batch, and --batch at least 1")
    return args


def layouts(parts: int, names: list[str]) -> dict[str, list[str]]:
    """Each copy's name and the statements that make it, after the store's schema is in ``public``."""
    made: dict[str, list[str]] = {}
    for layout in names:
        spec = LAYOUTS[layout]
        statements = [f"CREATE SCHEMA {layout}"]
        for table in TABLES:
            statements.append(f"CREATE TABLE {layout}.{table} (LIKE public.{table} INCLUDING ALL){spec}")
            if layout == "by_type":
                statements += [f"CREATE TABLE {layout}.{table}_{VISIT_TYPE} PARTITION OF {layout}.{table} "
                               f"FOR VALUES IN ('{VISIT_TYPE}')",
                               f"CREATE TABLE {layout}.{table}_other PARTITION OF {layout}.{table} DEFAULT"]
            elif layout == "by_hash":
                statements += [f"CREATE TABLE {layout}.{table}_{i} PARTITION OF {layout}.{table} "
                               f"FOR VALUES WITH (MODULUS {parts}, REMAINDER {i})" for i in range(parts)]
        made[layout] = statements
    return made


def taking_turns(names: list[str], batch_number: int) -> list[str]:
    """The copies in the order they write a batch: each goes first in turn."""
    k = batch_number % len(names)
    return names[k:] + names[:k]


def write_listings(conn: psycopg.Connection, layout: str, rows: tuple[list[tuple], ...]) -> float:
    start = time.perf_counter()
    with conn.cursor() as cur:
        copy_shaped(cur, "listed_origin", lambda table: f"{layout}.{table}", rows)
    conn.commit()
    return time.perf_counter() - start


def write_stats(conn: psycopg.Connection, layout: str, rows: list[tuple]) -> float:
    table, _ = SHAPED_UPDATES["visit_status"]
    start = time.perf_counter()
    with conn.cursor() as cur:
        cur.execute(INDEX_DRIVEN_BATCHES)  # as the store's batches: without it, each part is scanned whole
        update_from_staged(cur, "visit_status", f"staged_{table}", f"{layout}.{table}", rows)
    conn.commit()
    return time.perf_counter() - start


def run_writes(conn: psycopg.Connection, names: list[str], data: Dataset, batch: int) -> dict[str, dict[str, float]]:
    """Seconds each copy spent on the listings, then on the statuses."""
    table, columns = SHAPED_UPDATES["visit_status"]
    conn.execute(f"CREATE TEMPORARY TABLE staged_{table} ({', '.join(f'{n} {k}' for n, k in columns)}) "
                 "ON COMMIT DELETE ROWS")
    conn.commit()
    spent = {name: {"listings": 0.0, "statuses": 0.0} for name in names}
    with progress("listings, into each copy", data.n) as advance:
        for number, origins in enumerate(data.listed_batches(batch)):
            rows = shaped_listed_rows(LISTER_ID, data.now, origins)
            for name in taking_turns(names, number):
                spent[name]["listings"] += write_listings(conn, name, rows)
            advance(len(origins))
    mirror: dict[tuple[str, str], Any] = {}
    with progress("statuses, applied to each copy", data.n) as advance:
        for number, statuses in enumerate(data.status_batches(batch)):
            plan = plan_visit_feedback(mirror, statuses, FEEDBACK, data.now, {})
            mirror.update(((s.url, s.visit_type), s) for s in plan.stats)
            rows = shaped_stats_rows(plan.stats)
            for name in taking_turns(names, number):
                spent[name]["statuses"] += write_stats(conn, name, rows)
            advance(len(statuses))
    return spent


def grab_statements(pick: str, layout: str) -> dict[str, str]:
    sql = pick_statement(PG, "postgresql", pick).rstrip().rstrip(";")
    found = {"pick": PG.dry_picked.replace("{pick}", sql), "pick_and_mark_by_key": MARK_BY_KEY.format(pick=sql)}
    if layout == "plain":
        found["pick_and_mark_by_tid"] = MARK_BY_TID.format(pick=sql)
    return found


def run_grabs(conn: psycopg.Connection, names: list[str], now: datetime, count: int,
              rounds: int) -> dict[str, dict[str, Any]]:
    """Per pick, copy and statement: the execution times (``EXPLAIN ANALYZE``), rolled back, and one plan's shape."""
    found: dict[str, dict[str, Any]] = {}
    for pick in PICKS:
        times: dict[str, list[float]] = {}
        shapes: dict[str, dict[str, Any]] = {}
        for number in range(rounds):
            at = now + timedelta(minutes=number)
            params = {"visit_type": VISIT_TYPE, "now": at, "lister_id": None, "limit": count,
                      "visited_before": at - timedelta(days=1), "cooldown_until": at + timedelta(days=1)}
            for name in taking_turns(names, number):
                for kind, sql in grab_statements(pick, name).items():
                    conn.execute("BEGIN")
                    try:
                        conn.execute(f"SET LOCAL search_path = {name}, public")
                        conn.execute(PG.index_ordered_picks)
                        plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params).fetchone()[0][0]
                    finally:
                        conn.execute("ROLLBACK")
                    key = f"{name}/{kind}"
                    times.setdefault(key, []).append(plan["Execution Time"])
                    shapes.setdefault(key, {"rows": plan["Plan"].get("Actual Rows"), "nodes": sorted(node_types(plan["Plan"]))})
        found[pick] = {key: {"median_ms": statistics.median(ms), "min_ms": min(ms), "ms": ms, **shapes[key]}
                       for key, ms in times.items()}
    return found


def node_types(plan: dict[str, Any]) -> set[str]:
    kinds = {plan["Node Type"]}
    for child in plan.get("Plans", []):
        kinds |= node_types(child)
    return kinds


def rows_digests(conn: psycopg.Connection, names: list[str]) -> dict[str, str]:
    """Per copy: its visit-stats rows counted, and the sum of a 60-bit hash of each (the order does not matter, and
    nothing grows with the table but the sum). The copies got the same rows: the digests agree."""
    return {name: conn.execute(
        "SELECT count(*) || ':' || coalesce(sum(('x' || substr(md5(s::text), 1, 15))::bit(60)::bigint), 0) "
        f"FROM {name}.origin_visit_stats AS s").fetchone()[0] for name in names}


def layout_sizes(conn: psycopg.Connection, names: list[str]) -> dict[str, dict[str, int]]:
    """Per copy and table: heap bytes (with TOAST) and index bytes, its parts summed."""
    sizes: dict[str, dict[str, int]] = {}
    for name in names:
        for table in TABLES:
            heap, indexes = conn.execute(
                "SELECT coalesce(sum(pg_table_size(c.oid)), 0), coalesce(sum(pg_indexes_size(c.oid)), 0) "
                "FROM pg_class AS c WHERE c.relkind = 'r' AND (c.oid = %(table)s::regclass "
                "OR c.oid IN (SELECT relid FROM pg_partition_tree(%(table)s::regclass) WHERE isleaf))",
                {"table": f"{name}.{table}"}).fetchone()
            sizes[f"{name}.{table}"] = {"heap_bytes": int(heap), "index_bytes": int(indexes)}
    return sizes


def report(n: int, spent: dict[str, dict[str, float]], grabs: dict[str, dict[str, Any]],
           sizes: dict[str, dict[str, int]]) -> None:
    print(f"\n{n:,} origins | {'copy':<8} | {'rate':>12} | ratio to plain")
    for step in ("listings", "statuses"):
        for name, by_step in spent.items():
            rate = n / by_step[step]
            print(f"{step:<14} | {name:<8} | {rate:>10,.0f}/s | {spent['plain'][step] / by_step[step]:.2f}")
    print(f"\n{'grab, median ms':<48} | {'copy':<8} | {'pick':>7} | {'+ mark by key':>13} | ratio to plain (mark by key)")
    for pick, by_key in grabs.items():
        for name in spent:
            p, m = by_key[f"{name}/pick"]["median_ms"], by_key[f"{name}/pick_and_mark_by_key"]["median_ms"]
            base = by_key["plain/pick_and_mark_by_key"]["median_ms"]
            print(f"{pick:<48} | {name:<8} | {p:>7.1f} | {m:>13.1f} | {m / base:.2f}")
        print(f"{pick:<48} | plain, marked by tuple id (the store's form): {by_key['plain/pick_and_mark_by_tid']['median_ms']:.1f}")
    print("\nbytes per origin, heap + indexes:")
    for key, size in sizes.items():
        print(f"  {key:<30} {size['heap_bytes'] / n:7.1f} + {size['index_bytes'] / n:7.1f}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    now = datetime.now(UTC).replace(microsecond=0)
    data = Dataset(args.origins, args.seed, now)
    settings = {"shared_buffers": args.shared_buffers, **WAL_SETTINGS}
    with PostgresCluster(durable=True, settings=settings) as cluster:  # a temporary directory, deleted at the end
        cluster.create_database("partitions")
        dsn = cluster.dsn("partitions")
        store = PostgresStore(dsn)
        store.init_schema()
        store.close()
        with psycopg.connect(dsn) as conn:
            conn.execute("SET jit = off")  # as the store's sessions: with 16 parts a batch's plan would be compiled
            made = layouts(args.parts, args.layouts)
            for statements in made.values():
                for statement in statements:
                    conn.execute(statement)
            conn.commit()
            names = list(made)
            spent = run_writes(conn, names, data, args.batch)
            print(f"seconds spent writing, per copy: {json.dumps(spent)}", flush=True)  # kept if a later step fails
            conn.autocommit = True
            with progress("VACUUM ANALYZE", 1) as advance:
                conn.execute("VACUUM ANALYZE")
                advance(1)
            digests = rows_digests(conn, names)
            grabs = run_grabs(conn, names, now, args.grab_batch, args.rounds)
            sizes = layout_sizes(conn, names)
    if len(set(digests.values())) != 1:
        console.print(f"[yellow]the copies hold different visit stats[/yellow]: {digests}")
    report(args.origins, spent, grabs, sizes)
    results = {"seconds": spent, "grabs": grabs, "sizes": sizes, "visit_stats_digests": digests,
               "rates_per_s": {name: {step: args.origins / s for step, s in by_step.items()} for name, by_step in spent.items()}}
    document = {**result_header("bench/limits/partitions.py", results), "code": code,
                "parameters": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
                | {"now": now.isoformat()}, "results": results}
    out = args.json_out or (RESULTS /
                            f"partitions-{date.today().isoformat()}-{(code['git_commit'] or 'unknown')[:7]}-{args.origins}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    console.print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
