"""The schedule pick: on PostgreSQL concurrent pickers never take the same schedule,
and the pick is an index walk on 200,000 stored schedules."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import psycopg
from waiting import wait_until

from ostinato.domain.schedules import Schedule, ScheduleKind
from ostinato.store.postgresql import PostgresStore
from ostinato.store.postgresql.dialect import role_queries
from ostinato.store.schedules.fire_times import CHANNEL
from ostinato.store.schedules.flow import PICK_WINDOW, pick_query

QUERIES = role_queries("schedules")

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)


def test_concurrent_picks_never_take_the_same_schedule(pg_dsn):
    with PostgresStore(pg_dsn) as store:
        for i in range(300):
            store.create_schedule(Schedule(f"s{i:03d}", ScheduleKind.PERIODIC, "scrape", T0 - (i % 50) * H,
                                           scheduling_period=24 * H), T0)
    taken: list[list[str]] = [[], [], []]
    start = threading.Barrier(3)

    def scheduler(index: int) -> None:
        with PostgresStore(pg_dsn) as store:
            start.wait()
            n = 0
            while (picked := store.pick_schedule(node=f"n{index}", owner_name="a", tag=f"{index}-{n}", now=T0)):
                taken[index].append(picked[0].name)
                n += 1

    threads = [threading.Thread(target=scheduler, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every = [name for part in taken for name in part]
    assert len(every) == len(set(every)) == 300
    assert sum(1 for part in taken if part) >= 2


SEED = """
INSERT INTO schedule (name, kind, task_type, mode, scheduling_period, tz, enabled, created_at, owner_tag,
                      can_start_by, should_start_by, dont_run_on_nodes)
SELECT 's' || i, 'periodic', 'scrape', 'run', interval '1 day', 'UTC', i % 10 <> 0, %(now)s,
       CASE WHEN i % 7 = 0 THEN 'tag-' || i END,
       %(now)s + ((i % 100) - 50) * interval '1 minute', %(now)s + ((i * 7919) % 100000) * interval '1 second',
       CASE WHEN i % 13 = 0 THEN ARRAY['n1'] ELSE '{}'::text[] END
FROM generate_series(1, 200000) AS i;
ANALYZE schedule;
"""


def test_the_pick_walks_the_index_about_one_row(pg_dsn):
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in filter(str.strip, SEED.split(";")):
            conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": T0})
        conn.execute("BEGIN")
        plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + QUERIES.pick_schedule,
                            {"now": T0, "node": "n1", "limit": 1}).fetchone()[0][0]["Plan"]
        conn.execute("ROLLBACK")
    nodes = [plan]
    while nodes[-1].get("Plans"):
        nodes.append(nodes[-1]["Plans"][0])
    scan = nodes[-1]
    assert scan.get("Index Name") == "schedule_pick_idx", nodes
    assert not any(n["Node Type"] in ("Sort", "Seq Scan") for n in nodes)
    # about half of the schedules cannot start yet: the walk skips some, never the table
    assert scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) < 50


#: the steady state of many periodic schedules: nearly all sit in their cooldown, 20 can start
COOLING = """
INSERT INTO schedule (name, kind, task_type, mode, scheduling_period, tz, enabled, created_at,
                      can_start_by, should_start_by, dont_run_on_nodes)
SELECT 's' || i, 'periodic', 'scrape', 'run', interval '1 day', 'UTC', true, %(now)s,
       %(now)s + CASE WHEN i % 10000 = 0 THEN -(i / 10000) ELSE 1 + i % 3600 END * interval '1 second',
       %(now)s + ((i * 7919) % 100000) * interval '1 second', '{}'::text[]
FROM generate_series(1, 200000) AS i;
ANALYZE schedule;
"""


def _plan_nodes(plan: dict) -> list[dict]:
    found, stack = [], [plan]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.get("Plans", ()))
    return found


def test_when_few_can_start_the_pick_reads_them_not_every_schedule(pg_dsn):
    """The load benchmark's finding: walking the pick index in should_start_by order past every schedule
    in its cooldown read the whole index (74 ms at 100,000 schedules). With few startable the pick
    reads them through the wake index, and still takes the lowest should_start_by among them."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in filter(str.strip, COOLING.split(";")):
            conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": T0})
        params = {"now": T0, "node": "n1", "limit": 1, "window": PICK_WINDOW}
        assert conn.execute(QUERIES.count_startable, params).fetchone()[0] == 20
        assert pick_query(QUERIES, 20) == QUERIES.pick_few_schedules
        conn.execute("BEGIN")
        for query in (QUERIES.count_startable, QUERIES.pick_few_schedules):
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, params).fetchone()[0][0]["Plan"]
            nodes = _plan_nodes(plan)
            assert not any(n["Node Type"] == "Seq Scan" for n in nodes), nodes
            scans = [n for n in nodes if n.get("Index Name") == "schedule_wake_idx"]
            assert scans and all(n["Actual Rows"] + n.get("Rows Removed by Filter", 0) <= 21 for n in scans), nodes
        conn.execute("ROLLBACK")
        # the lowest deadline among those that can start (two of them share it: either may be picked)
        best = {row[0] for row in conn.execute(
            "SELECT name FROM schedule WHERE can_start_by <= %(now)s AND should_start_by = "
            "(SELECT min(should_start_by) FROM schedule WHERE can_start_by <= %(now)s)", {"now": T0})}
    assert 0 < len(best) < 20  # the pick had a choice to get wrong
    with PostgresStore(pg_dsn) as store:
        [(schedule, run)] = store.pick_schedules(node="n1", owner_name="a", tags=["t1"], now=T0)
    assert run.schedule == schedule.name and schedule.name in best


def test_a_new_schedule_wakes_a_sleeping_scheduler(pg_dsn):
    woken = threading.Event()
    stop = threading.Event()
    with PostgresStore(pg_dsn) as store:
        listener = threading.Thread(target=store.listen_schedule_changes, args=(woken.set, stop), daemon=True)
        listener.start()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:  # another session sees its LISTEN done
            listening = ("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
                         "AND state = 'idle' AND query = %s")
            wait_until(lambda: conn.execute(listening, (f"LISTEN {CHANNEL}",)).fetchone(), timeout=30,
                       what="the listener's LISTEN to be in place")
        assert not woken.is_set()
        store.create_schedule(Schedule("new", ScheduleKind.PERIODIC, "scrape", T0, scheduling_period=H), T0)
        assert woken.wait(5)
        stop.set()
        listener.join(5)
        assert not listener.is_alive()


def test_sqlite_pick_walks_the_pick_index(tmp_path):
    import sqlite3

    from ostinato.store.sqlite import SQLiteStore
    from ostinato.store.sqlite.dialect import role_queries as lite_queries

    LITE = lite_queries("schedules")

    SQLiteStore(tmp_path / "plans.db").init_schema()
    conn = sqlite3.connect(tmp_path / "plans.db")
    plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + LITE.pick_schedule,
                                                    {"now": T0.isoformat(), "node": "n1", "limit": 1}))
    assert "USING INDEX schedule_pick_idx" in plan and "TEMP B-TREE" not in plan, plan


def test_sqlite_pick_of_few_walks_the_wake_index(tmp_path):
    import sqlite3

    from ostinato.store.sqlite import SQLiteStore
    from ostinato.store.sqlite.dialect import role_queries as lite_queries

    LITE = lite_queries("schedules")

    SQLiteStore(tmp_path / "plans.db").init_schema()
    conn = sqlite3.connect(tmp_path / "plans.db")
    params = {"now": T0.isoformat(), "node": "n1", "limit": 1, "window": PICK_WINDOW}
    for query in (LITE.count_startable, LITE.pick_few_schedules):
        plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query, params))
        assert "USING INDEX schedule_wake_idx" in plan and "SCAN schedule\n" not in plan + "\n", plan
