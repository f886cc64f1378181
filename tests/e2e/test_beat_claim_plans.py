"""The beats' hot queries are index walks: on 200,000 schedules the beats send and 400,000 rows of
the ledger of fire times, a claim reads the schedules that are due through ``schedule_fire_idx``
and the ended leases through ``schedule_firing_lease_idx``, a record of sends finds each row by its
key (schedule, fire time), and the catch-up pass reads calendar backlogs through
``schedule_backlog_idx``; on SQLite the same indexes are used."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import psycopg
from test_schedule_pick import _plan_nodes as _nodes

from ostinato.store.postgresql.dialect import role_queries
from ostinato.store.sqlite import SQLiteStore
from ostinato.store.sqlite.dialect import role_queries as lite_queries

QUERIES = role_queries("schedules")
LITE = lite_queries("schedules")
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

#: 200,000 schedules the beats send, 30 of them due; two fire times each in the ledger, sent, but 5
#: claims whose lease ended; 1,000 calendar schedules the scheduler runs, 2 of them backlogged
SEED = """
INSERT INTO schedule (name, kind, task_type, mode, scheduling_period, tz, enabled, created_at, next_fire_at)
SELECT 'b' || i, 'periodic', 'proj.task', 'send', interval '1 minute', 'UTC', i % 50 <> 0, %(now)s,
       %(now)s + CASE WHEN i % 6000 = 0 THEN -(i / 6000) ELSE 1 + i % 3600 END * interval '1 second'
FROM generate_series(1, 200000) AS i;
INSERT INTO schedule_firing (schedule, nominal_at, status, claimed_by, lease_until, sender, handled_at, sent_at)
SELECT 'b' || (i % 200000), %(now)s - (i / 200000 + 1) * interval '1 minute',
       CASE WHEN i % 80000 = 0 THEN 'claimed' ELSE 'sent' END, 'tag-' || i,
       %(now)s + CASE WHEN i % 80000 = 0 THEN -10 ELSE -60 END * interval '1 second', 'n/beat', %(now)s,
       CASE WHEN i % 80000 = 0 THEN NULL ELSE %(now)s END
FROM generate_series(0, 399999) AS i;
INSERT INTO schedule (name, kind, task_type, mode, cron_schedule, cron_max_schedule_duration, tz, enabled, created_at,
                      can_start_by, should_start_by)
SELECT 'c' || i, 'calendar', 'job', 'run', '0 * * * *', interval '1 hour', 'UTC', true, %(now)s,
       %(now)s + CASE WHEN i % 400 = 0 THEN -3 ELSE 1 END * interval '1 hour', %(now)s + interval '2 hours'
FROM generate_series(1, 1000) AS i;
ANALYZE schedule;
ANALYZE schedule_firing;
"""


def _explain(conn, query: str, params: dict) -> list[dict]:
    return _nodes(conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, params).fetchone()[0][0]["Plan"])


def test_the_claim_and_the_record_walk_their_indexes(pg_dsn):
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in filter(str.strip, SEED.split(";")):
            conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": T0})
        conn.execute("BEGIN")
        due = _explain(conn, QUERIES.due_to_send, {"now": T0, "limit": 100})
        [scan] = [n for n in due if n.get("Index Name") == "schedule_fire_idx"]
        assert scan["Actual Rows"] <= 40 and not any(n["Node Type"] in ("Seq Scan", "Sort") for n in due), due
        expired = _explain(conn, QUERIES.expired_claims, {"now": T0, "limit": 100})
        [scan] = [n for n in expired if n.get("Index Name") == "schedule_firing_lease_idx"]
        assert scan["Actual Rows"] == 5 and not any(n["Node Type"] == "Seq Scan" for n in expired), expired
        keys = {"schedule": ["b1", "b2", "b3"], "nominal_at": [T0, T0, T0], "tag": "t", "now": T0}
        marked = _explain(conn, QUERIES.mark_sent, keys)
        # by the key, or through the few claims in flight (the lease index holds only those): never the ledger
        assert {n.get("Index Name") for n in marked} & {"schedule_firing_pkey", "schedule_firing_lease_idx"}, marked
        assert not any(n["Node Type"] == "Seq Scan" and n.get("Relation Name") == "schedule_firing" for n in marked)
        soonest = _explain(conn, QUERIES.next_send_at, {})
        assert not any(n["Node Type"] == "Seq Scan" for n in soonest), soonest
        backlog = _explain(conn, QUERIES.backlogged_schedules, {"cutoff": T0, "limit": 100})
        [scan] = [n for n in backlog if n.get("Index Name") == "schedule_backlog_idx"]
        assert scan["Actual Rows"] == 2, backlog
        conn.execute("ROLLBACK")


def test_sqlite_claims_walk_the_same_indexes(tmp_path):
    SQLiteStore(tmp_path / "plans.db").init_schema()
    conn = sqlite3.connect(tmp_path / "plans.db")
    now = T0.isoformat()
    expected = [(LITE.due_to_send, {"now": now, "limit": 100}, "schedule_fire_idx"),
                (LITE.expired_claims, {"now": now, "limit": 100}, "schedule_firing_lease_idx"),
                (LITE.mark_sent, {"rows": '[["b1", "x"]]', "tag": "t", "now": now}, "sqlite_autoindex_schedule_firing_1"),
                (LITE.backlogged_schedules, {"cutoff": now, "limit": 100}, "schedule_backlog_idx"),
                (LITE.next_send_at, {}, "schedule_fire_idx")]
    for query, params, index in expected:
        plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query, params))
        assert index in plan and "SCAN schedule\n" not in plan + "\n" and "SCAN f\n" not in plan + "\n", (query, plan)
