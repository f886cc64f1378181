"""The hot queries walk an index whose cost grows with the batch, not the table:
their plans are checked on seeded data (PostgreSQL: 200,000 tasks; SQLite: 50,000)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from ostinato.store.postgresql.dialect import INDEX_DRIVEN_BATCHES
from ostinato.store.postgresql.dialect import role_queries as pg_queries
from ostinato.store.sqlite.dialect import role_queries as lite_queries

PG = pg_queries("tasks")
LITE = lite_queries("tasks")

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ARGS_1 = '{"args":["https://example.org/1"],"kwargs":{}}'
SEED_PG = """
INSERT INTO task_type (type, description, backend_name, default_interval)
SELECT 'type-' || i, '', 'x:y', interval '1 day' FROM generate_series(0, 9) AS i;
INSERT INTO task (type, arguments, arguments_digest, next_run, current_interval, status, policy, retries_left, priority)
SELECT 'type-' || (i % 10),
       jsonb_build_object('args', jsonb_build_array('https://example.org/' || i), 'kwargs', '{}'::jsonb),
       decode(md5('{"args":["https://example.org/' || i || '"],"kwargs":{}}'), 'hex'),
       %(now)s - (i % 1000) * interval '1 minute' + (i % 3) * interval '1 day', interval '1 day',
       (ARRAY['next_run_not_scheduled', 'next_run_not_scheduled', 'next_run_scheduled', 'completed', 'disabled'])[1 + (i / 10) % 5],
       CASE WHEN i % 7 = 0 THEN 'oneshot' ELSE 'recurring' END, 0,
       CASE WHEN (i / 7) % 50 = 0 THEN (ARRAY['high', 'normal', 'low'])[1 + i % 3] END
FROM generate_series(1, 200000) AS i;
INSERT INTO task_run (task, backend_id, scheduled, ended, status)
SELECT id, 'w' || (id % 4), %(now)s - interval '1 hour', CASE WHEN id % 10 <> 0 THEN %(now)s END,
       CASE WHEN id % 10 = 0 THEN 'started' ELSE 'eventful' END
FROM task;
ANALYZE;
"""


def pg_task_rows(arguments: list[str], policy: str = "recurring") -> str:
    """The rows of ``find_pending_duplicates`` and ``insert_tasks`` (``TaskRow`` records) for these arguments."""
    return json.dumps([{"type": "type-1", "arguments": text, "digest": hashlib.md5(text.encode()).hexdigest(),
                        "next_run": NOW.isoformat(), "current_interval": "1 day", "policy": policy, "retries_left": 0,
                        "priority": None, "status": "next_run_not_scheduled"} for text in arguments])


def pg_plan(conn, sql: str, params: dict) -> str:
    rows = conn.execute("EXPLAIN " + sql, params).fetchall()
    return "\n".join(r[0][:300] for r in rows)


@pytest.fixture
def seeded_pg(pg_dsn):
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in filter(str.strip, SEED_PG.split(";")):
            conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": NOW})
        yield conn


def test_postgresql_hot_queries_walk_indexes(seeded_pg):
    conn = seeded_pg
    conn.execute("BEGIN")
    conn.execute(INDEX_DRIVEN_BATCHES)  # as the store's batch transactions do
    ids = list(range(1, 10_001))
    n = len(ids)
    cases = [
        (PG.grab_ready_tasks, {"type": "type-3", "now": NOW, "limit": 1000, "backend_id": "b"}, "task_ready_idx"),
        (PG.grab_ready_priority_tasks, {"type": "type-3", "now": NOW, "limit": 1000, "backend_id": "b", "priority": "high"},
         "task_ready_priority_idx"),
        (PG.peek_ready_tasks, {"type": "type-3", "now": NOW, "limit": 1000}, "task_ready_idx"),
        (PG.stale_in_flight_runs, {"cutoff": NOW, "limit": 1000}, "task_run_in_flight_idx"),
        (PG.find_pending_duplicates, {"rows": pg_task_rows([ARGS_1] * 3), "apart": False}, "task_dedup_idx"),
        (PG.find_pending_duplicates, {"rows": pg_task_rows([ARGS_1] * 3, "oneshot"), "apart": True}, "task_dedup_idx"),
        (PG.runs_with_tasks_for_update, {"ids": ids}, "task_run_pkey"),
        (PG.update_runs, {"ids": ids, "statuses": ["eventful"] * n, "backend_ids": ["w"] * n, "starteds": [None] * n,
                          "endeds": [NOW] * n, "metadatas": ["{}"] * n, "as_told": False}, "task_run_pkey"),
        (PG.update_tasks_after_runs, {"ids": ids, "statuses": ["next_run_not_scheduled"] * n, "next_runs": [NOW] * n,
                                      "intervals": [timedelta(days=1)] * n, "retries": [0] * n}, "task_pkey"),
        (PG.insert_scheduled_runs, {"ids": ids, "now": NOW, "backend_id": "w"}, ""),
        # a task's runs (task show --runs, the console's task page)
        (PG.task_runs_of_task, {"task": 77, "after_id": 0, "statuses": None, "limit": 100}, "task_run_task_idx"),
    ]
    for sql, params, index in cases:
        plan = pg_plan(conn, sql, params)
        assert index in plan, plan
        assert "Seq Scan on task " not in plan and "Seq Scan on task_run" not in plan, plan
        assert "Hash Join" not in plan and "Merge Join" not in plan, plan
    conn.execute("ROLLBACK")


def test_postgresql_insert_tasks_probes_each_task(seeded_pg):
    """The insert skips a task with a pending duplicate by one probe of the dedup index per task (a LATERAL
    ... LIMIT 1), never an anti-join that reads every pending task of the table once and the batch against it."""
    conn = seeded_pg
    conn.execute("BEGIN")
    conn.execute(INDEX_DRIVEN_BATCHES)
    fresh = [f'{{"args":["https://example.org/new/{i}"],"kwargs":{{}}}}' for i in range(1000)]
    seeded = [f'{{"args":["https://example.org/{i}"],"kwargs":{{}}}}' for i in range(1, 1000, 10)]  # of type-1
    for apart in (False, True):
        [[document]] = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + PG.insert_tasks,
                                    {"rows": pg_task_rows(fresh + seeded), "apart": apart}).fetchall()
        nodes = list(_nodes(document[0]["Plan"]))
        probes = [n for n in nodes if n.get("Index Name") == "task_dedup_idx"]
        assert len(probes) == 1 and probes[0]["Node Type"] == "Index Scan", nodes
        assert probes[0]["Actual Loops"] == len(fresh) + len(seeded), nodes
        assert len(fresh) <= document[0]["Plan"]["Actual Rows"] < len(fresh) + len(seeded)  # some are pending
        assert not any(n["Node Type"] in ("Seq Scan", "Bitmap Heap Scan", "Materialize", "Hash Join", "Merge Join")
                       for n in nodes), nodes
        conn.execute("ROLLBACK")
        conn.execute("BEGIN")
        conn.execute(INDEX_DRIVEN_BATCHES)
    conn.execute("ROLLBACK")


def test_postgresql_grab_reads_about_the_batch(seeded_pg):
    rows = seeded_pg.execute(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id FROM task WHERE type = %(type)s AND "
        "status = 'next_run_not_scheduled' AND priority IS NULL AND next_run <= %(now)s ORDER BY next_run LIMIT 100",
        {"type": "type-3", "now": NOW},
    ).fetchone()[0]
    plan = rows[0]["Plan"]
    scan = plan["Plans"][0]
    assert scan["Index Name"] == "task_ready_idx"
    assert scan["Actual Rows"] == 100
    assert plan["Shared Hit Blocks"] + plan.get("Shared Read Blocks", 0) < 200  # ~the batch, not 200k rows



def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def test_postgresql_import_conflict_checks_probe_each_id(seeded_pg):
    """The imports' checks that an id is not another task's (or run's): one primary-key probe per id
    of the batch, never the table walked in id order with the batch read again for every row."""
    from ostinato.store.postgresql.dialect import role_queries

    IMPORTS = role_queries("imports")

    conn = seeded_pg
    conn.execute("BEGIN")
    conn.execute(INDEX_DRIVEN_BATCHES)
    ids = list(range(150_001, 160_001))
    cases = [(IMPORTS.import_task_conflict, {"ids": ids, "types": ["type-1"] * len(ids), "digests": [b"x"] * len(ids)}),
             (IMPORTS.import_run_conflict, {"ids": ids, "tasks": ids})]
    for sql, params in cases:
        [[document]] = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchall()
        nodes = list(_nodes(document[0]["Plan"]))
        [batch] = [n for n in nodes if n["Node Type"] == "Function Scan"]
        probes = [n for n in nodes if n.get("Index Name") in ("task_pkey", "task_run_pkey")]
        assert batch["Actual Loops"] == 1 and probes and probes[0]["Actual Loops"] >= 1, nodes
        assert not any(n["Node Type"] == "Seq Scan" for n in nodes), nodes
    conn.execute("ROLLBACK")

def test_sqlite_hot_queries_walk_indexes(tmp_path):
    from ostinato.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "plans.db")
    store.init_schema()
    store.close()
    conn = sqlite3.connect(tmp_path / "plans.db")
    conn.executescript("""
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9)
        INSERT INTO task_type (type, description, backend_name, default_interval) SELECT 'type-' || i, '', 'x:y', 86400.0 FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
        INSERT INTO task (type, arguments, next_run, current_interval, status, policy, retries_left, priority)
        SELECT 'type-' || (i % 10), '{"args":["u' || i || '"],"kwargs":{}}',
               strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2026-01-01', '-' || (i % 1000) || ' minutes'), 86400.0,
               CASE (i / 10) % 5 WHEN 2 THEN 'next_run_scheduled' WHEN 3 THEN 'completed' WHEN 4 THEN 'disabled' ELSE 'next_run_not_scheduled' END,
               'recurring', 0, CASE WHEN (i / 7) % 50 = 0 THEN 'high' END
        FROM n;
        INSERT INTO task_run (task, scheduled, status) SELECT id, '2026-01-01T00:00:00.000000+00:00', 'started' FROM task WHERE id % 10 = 0;
        ANALYZE;
    """)
    now = NOW.isoformat(timespec="microseconds")
    args_u1 = '{"args":["u1"],"kwargs":{}}'
    cases = [
        (LITE.grab_ready_tasks, {"type": "type-3", "now": now, "limit": 1000}, "task_ready_idx"),
        (LITE.grab_ready_priority_tasks, {"type": "type-3", "now": now, "limit": 1000, "priority": "high"}, "task_ready_priority_idx"),
        (LITE.stale_in_flight_runs, {"cutoff": now, "limit": 1000}, "task_run_in_flight_idx"),
        (LITE.find_pending_duplicates, {"rows": json.dumps([["type-1", args_u1, args_u1, now, 86400.0, "recurring", 0, None,
                                                                     "next_run_not_scheduled"]]),
                                        "apart": False}, "task_dedup_idx"),
        (LITE.insert_tasks, {"rows": json.dumps([["type-1", args_u1, args_u1, now, 86400.0, "oneshot", 0, None,
                                                        "next_run_not_scheduled"]]),
                             "apart": True}, "task_dedup_idx"),
        (LITE.task_runs_of_task, {"task": 70, "after_id": 0, "statuses": None, "limit": 100}, "task_run_task_idx"),
    ]
    for sql, params, index in cases:
        plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
        assert f"USING INDEX {index}" in plan or f"USING COVERING INDEX {index}" in plan, plan
        assert "SCAN task " not in plan + " " and "SCAN t " not in plan + " ", plan
        if sql is not LITE.insert_tasks:  # which sorts its batch (ORDER BY r.key), not the table
            assert "TEMP B-TREE FOR ORDER BY" not in plan, plan


def _prepared_plan(conn, runs: int) -> str:
    """The plan of a prepared statement (as the driver prepares one it runs often) after ``runs`` executions."""
    sql = pg_queries("compat").open_grabbed_runs.replace("%(ids)s", "$1")
    conn.execute("PREPARE open_runs(bigint[]) AS " + sql)
    for _ in range(runs):
        conn.execute("EXECUTE open_runs('{1,2,3}')")
    plan = psycopg.ClientCursor(conn).execute("EXPLAIN EXECUTE open_runs('{1,2,3}')").fetchall()
    conn.execute("DEALLOCATE open_runs")
    return "\n".join(row[0] if isinstance(row, tuple) else row["QUERY PLAN"] for row in plan)


def test_postgresql_statements_run_often_are_planned_for_their_values(pg_store):
    """The driver prepares a statement it runs often, and the server may then keep one generic plan, blind to
    the values: there a filter ``= ANY(<array parameter>)`` is searched in full for each row (a constant array
    is hashed), and the plans the tests above check are not the ones that run. The store's connections plan
    every execution for its values, however often it runs."""
    with pg_store.db.pool.connection() as conn:
        assert conn.execute("SHOW plan_cache_mode").fetchone()["plan_cache_mode"] == "force_custom_plan"
        planned = _prepared_plan(conn, 12)
        conn.rollback()
    assert "'{1,2,3}'::bigint[]" in planned and "$1" not in planned, planned
    # what the check tells apart: the generic plan names the parameter, not the values
    with psycopg.connect(pg_store.db.dsn) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        generic = _prepared_plan(conn, 1)
    assert "$1" in generic and "{1,2,3}" not in generic, generic
