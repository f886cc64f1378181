"""The lookahead pick's snapshot is index walks: on 200,000 stored schedules (PostgreSQL) its
reads walk the pick and wake indexes and stop at K rows, and on SQLite they use the same indexes."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import psycopg
from test_schedule_pick import SEED, T0, _plan_nodes

from ostinato.store.postgresql.dialect import role_queries
from ostinato.store.sqlite import SQLiteStore
from ostinato.store.sqlite.dialect import role_queries as lite_queries

QUERIES = role_queries("schedules")
LITE = lite_queries("schedules")
K = 32
READS = {  # query: (index walked, its parameters)
    "candidates_by_deadline": ("schedule_pick_idx", {"now": T0, "node": "n1", "limit": K}),
    "candidates_by_due": ("schedule_wake_idx", {"now": T0, "node": "n1", "limit": K}),
    "upcoming_schedules": ("schedule_wake_idx", {"now": T0, "until": T0 + timedelta(hours=1), "limit": K}),
}


def test_the_snapshot_reads_walk_an_index_and_stop_near_k_rows(pg_dsn):
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in filter(str.strip, SEED.split(";")):
            conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": T0})
        for name, (index, params) in READS.items():
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + getattr(QUERIES, name),
                                params).fetchone()[0][0]["Plan"]
            nodes = _plan_nodes(plan)
            assert not any(n["Node Type"] in ("Sort", "Seq Scan") for n in nodes), (name, nodes)
            [scan] = [n for n in nodes if n.get("Index Name") == index]
            assert scan["Actual Rows"] >= K and scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) < 20 * K, \
                (name, scan)


def test_sqlite_snapshot_reads_walk_their_index(tmp_path):
    SQLiteStore(tmp_path / "plans.db").init_schema()
    conn = sqlite3.connect(tmp_path / "plans.db")
    for name, (index, params) in READS.items():
        params = {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in params.items()}
        plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + getattr(LITE, name), params))
        assert f"USING INDEX {index}" in plan and "TEMP B-TREE" not in plan, (name, plan)
