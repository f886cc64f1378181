"""The lookahead pick's snapshot is index walks: on 200,000 stored schedules (PostgreSQL) its
reads walk the pick and wake indexes and stop at K rows, and on SQLite they use the same indexes; the
schedules it chose are locked by their names, never by a scan of the free ones."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import psycopg
from test_schedule_pick import COOLING, SEED, T0, _plan_nodes

from ostinato.store.postgresql.dialect import role_queries
from ostinato.store.schedules.flow import PICK_WINDOW
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
#: the SQLite plans only (on PostgreSQL: with few that can start, below)
FEW = {"few_candidates_by_deadline": ("schedule_wake_idx", {"now": T0, "node": "n1", "limit": K, "window": 1000})}


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
        chosen = [r[0] for r in conn.execute("SELECT name FROM schedule WHERE owner_tag IS NULL LIMIT 3")]
        plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + QUERIES.lock_chosen, {"names": chosen}).fetchone()[0][0]
        nodes = _plan_nodes(plan["Plan"])
        assert not any(n["Node Type"] == "Seq Scan" for n in nodes), nodes
        assert sum(n.get("Actual Rows", 0) for n in nodes if "Index" in n["Node Type"]) <= len(chosen), nodes


def test_when_few_can_start_the_snapshot_reads_them_not_every_schedule(pg_dsn):
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in filter(str.strip, COOLING.split(";")):
            conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": T0})
        params = {"now": T0, "node": "n1", "limit": K, "window": PICK_WINDOW}
        plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + QUERIES.few_candidates_by_deadline,
                            params).fetchone()[0][0]["Plan"]
        nodes = _plan_nodes(plan)
        assert not any(n["Node Type"] == "Seq Scan" for n in nodes), nodes
        scans = [n for n in nodes if n.get("Index Name") == "schedule_wake_idx"]
        assert scans and all(n["Actual Rows"] + n.get("Rows Removed by Filter", 0) <= 21 for n in scans), nodes
        assert plan["Actual Rows"] == 20


def test_sqlite_snapshot_reads_walk_their_index(tmp_path):
    SQLiteStore(tmp_path / "plans.db").init_schema()
    conn = sqlite3.connect(tmp_path / "plans.db")
    for name, (index, params) in {**READS, **FEW}.items():
        params = {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in params.items()}
        plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + getattr(LITE, name), params))
        assert f"USING INDEX {index}" in plan and "SCAN schedule\n" not in plan + "\n", (name, plan)
        assert name in FEW or "TEMP B-TREE" not in plan, (name, plan)  # the few are sorted, at most the window
    plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + LITE.lock_chosen, {"names": '["a", "b"]'}))
    assert "SEARCH schedule USING INDEX" in plan and "(name=?)" in plan and "SCAN schedule" not in plan, plan


def test_concurrent_lookahead_picks_never_take_the_same_schedule(pg_dsn):
    """Three schedulers picking by lookahead at once, four slots each, until every schedule is taken:
    each is taken once, and no pick fails."""
    import threading
    import time

    from ostinato.domain.lookahead import Lookahead, PickRule
    from ostinato.domain.schedules import Schedule, ScheduleKind
    from ostinato.store.postgresql import PostgresStore

    with PostgresStore(pg_dsn) as store:
        for i in range(300):
            store.create_schedule(Schedule(f"s{i:03d}", ScheduleKind.PERIODIC, "scrape", T0 - (i % 50) * timedelta(hours=1),
                                           scheduling_period=timedelta(hours=24)), T0)
        for n in range(3):
            store.heartbeat_scheduler(f"n{n}", "a", slots=4, run_ends=[], now=T0)
    rule = PickRule(lookahead=Lookahead())
    taken: list[list[str]] = [[], [], []]
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    counted = threading.Lock()
    deadline = time.monotonic() + 60

    def scheduler(index: int) -> None:
        """Picks until every schedule is taken (by any of the three) or the deadline: a scheduler that stopped
        at its first empty picks would strand what the others' plans leave to it, as a live one's."""
        try:
            with PostgresStore(pg_dsn) as store:
                start.wait()
                n = 0
                while time.monotonic() < deadline:
                    with counted:
                        if sum(map(len, taken)) >= 300:
                            return
                    picked = store.pick_schedules(node=f"n{index}", owner_name="a", now=T0, rule=rule,
                                                  tags=[f"{index}-{n}-{k}" for k in range(4)])
                    with counted:
                        taken[index].extend(s.name for s, _ in picked)
                    n += 1
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=scheduler, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    every = [name for part in taken for name in part]
    assert len(every) == len(set(every)) == 300
    assert sum(1 for part in taken if part) >= 2
