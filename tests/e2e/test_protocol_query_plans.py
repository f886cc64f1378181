"""The swh protocol's grabs walk an index per policy (store/compat/*.sql, protocol_walk): plans checked
on seeded data (PostgreSQL: 60,000 listings and their stats; SQLite: 20,000), each walk reading about
the batch it asks for, never the visit type's listings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.listing_grabs import ListingGrab, ListingOrder, ProtocolVisitStats, cooldown_bounds
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visits import VisitOutcome
from ostinato.store.compat.flow import walk_statement
from ostinato.store.postgresql.dialect import INDEX_DRIVEN_BATCHES, role_queries

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WALK = 1000  # a grab of 1,000 walks as many origins (store/compat/flow.py, _walk)
INDEXES = {
    ListingOrder.OLDEST_SCHEDULED_FIRST: "visit_oldest_scheduled_idx",
    ListingOrder.FIRST_VISITS_AFTER_LISTING: "visit_oldest_scheduled_idx",
    ListingOrder.STOP_AFTER_SUCCESS: "protocol_stop_after_success_idx",
    ListingOrder.NEVER_VISITED_OLDEST_UPDATE_FIRST: "protocol_never_visited_idx",
    ListingOrder.ALREADY_VISITED_ORDER_BY_LAG: "visit_by_lag_idx",
    ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE: "protocol_without_update_idx",
}


def seed(store, n: int) -> int:
    """``n`` git listings of one lister: a fifth without last_update; half visited (a third of those failed)."""
    lister = store.get_or_create_lister("forge", "", NOW - timedelta(days=400))
    for start in range(0, n, 10_000):
        store.record_listed_origins(lister.id, [
            ListedOrigin(f"https://forge.example/{i}", "git",
                         last_update=None if i % 5 == 0 else NOW - timedelta(hours=i % 5000))
            for i in range(start, min(n, start + 10_000))], NOW - timedelta(days=300))
        stats = []
        for i in range(start, min(n, start + 10_000), 2):
            failed = i % 3 == 0
            visited = NOW - timedelta(hours=i % 7000)
            stats.append(ProtocolVisitStats(
                f"https://forge.example/{i}", "git", last_visit=visited,
                last_visit_status=VisitOutcome.FAILED if failed else VisitOutcome.SUCCESSFUL,
                last_successful=None if failed else visited, last_snapshot=None if failed else b"\x01" * 20,
                last_scheduled=visited - timedelta(hours=1), queue_position=i % 400))
        store.merge_visit_stats(stats)
    return lister.id


def by_lister(order: ListingOrder) -> bool:
    """Whether the plan's grab is by lister (as swh's first visits after a listing are)."""
    return order is ListingOrder.FIRST_VISITS_AFTER_LISTING


def params(store, order: ListingOrder, lister_id: int) -> dict:
    grab = ListingGrab("git", 1000, order)
    return {"visit_type": "git", "lister_ids": [lister_id] if by_lister(order) else None,
            "scheduled_before": NOW - timedelta(days=200), "walk": WALK,
            **{name: store.db.time(value) for name, value in cooldown_bounds(grab, NOW).items()}}


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


@pytest.fixture(scope="module")
def seeded_pg(pg_server, pg_template):
    from ostinato.store.postgresql import PostgresStore

    name = "protocol_plans"
    dsn = pg_server.create_database(name, template=pg_template)
    with PostgresStore(dsn) as store:
        lister_id = seed(store, 60_000)
        with store.db.write() as conn:
            conn.execute("ANALYZE")
        yield store, lister_id
    pg_server.drop_database(name)


@pytest.mark.parametrize("locked", [True, False], ids=["real", "dry-run"])
@pytest.mark.parametrize("order", list(ListingOrder))
def test_postgresql_each_policy_walks_its_index(seeded_pg, order, locked):
    store, lister_id = seeded_pg
    q = store.db.queries("compat")
    with store.db.write(rollback=True) as conn:
        conn.execute(INDEX_DRIVEN_BATCHES)
        document = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
                                + walk_statement(q, order, q.grab_lock if locked else ""),
                                params(store, order, lister_id)).fetchone()["QUERY PLAN"]
    nodes = list(_nodes(document[0]["Plan"]))
    assert any(n["Node Type"] == "LockRows" for n in nodes) == locked, nodes
    walks = [n for n in nodes if n.get("Relation Name") == "origin_visit_stats"]
    assert [n.get("Index Name") for n in walks] == [INDEXES[order]], nodes
    assert walks[0]["Node Type"] == "Index Scan"
    assert not any(n["Node Type"] in ("Seq Scan", "Sort", "Hash Join", "Merge Join") for n in nodes), nodes
    # about the batch: the origins taken and those the cooldowns leave out on the way, not 60,000
    assert walks[0]["Actual Rows"] <= WALK
    assert walks[0]["Actual Rows"] + walks[0].get("Rows Removed by Filter", 0) < 6 * WALK, walks[0]
    # the listings joined, and for a grab by lister the probe of each origin walked: index lookups by URL
    listings = [n for n in nodes if n.get("Relation Name") == "listed_origin"]
    assert [n.get("Index Name") for n in listings] == ["listed_origin_url_idx"] * (2 if by_lister(order) else 1), listings


@pytest.mark.parametrize("order", list(ListingOrder))
def test_sqlite_each_policy_walks_its_index(tmp_path, order):
    from ostinato.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "plans.db")
    store.init_schema()
    try:
        lister_id = seed(store, 20_000)
        with store.db.write() as conn:
            conn.execute("ANALYZE")
            q = store.db.queries("compat")
            bound = params(store, order, lister_id)
            bound["lister_ids"] = None if bound["lister_ids"] is None else store.db.array(bound["lister_ids"])
            plan = "\n".join(row[3] for row in conn.execute(
                "EXPLAIN QUERY PLAN " + walk_statement(q, order, q.grab_lock), bound))
    finally:
        store.close()
    assert f"USING INDEX {INDEXES[order]}" in plan, plan
    assert "TEMP B-TREE FOR ORDER BY" not in plan and "SCAN s " not in plan + " ", plan


def _merge_batch(store) -> str:
    """A batch of 1,000 visit stats as ``merge_visit_stats`` sends it: 400 origins visited again, 300 sent as
    they are (they change nothing), 300 with no row yet."""
    from ostinato.store.compat.flow import merge_rows

    at = NOW + timedelta(hours=1)
    again = [ProtocolVisitStats(f"https://forge.example/{i}", "git", last_visit=at,
                                last_visit_status=VisitOutcome.SUCCESSFUL, last_successful=at,
                                last_snapshot=b"\x02" * 20) for i in range(1, 800, 2)]
    same = store.get_protocol_visit_stats([(f"https://forge.example/{i}", "git") for i in range(2000, 2600, 2)])
    new = [ProtocolVisitStats(f"https://forge.example/new/{i}", "git", last_visit=at,
                              last_visit_status=VisitOutcome.FAILED) for i in range(300)]
    assert len(same) == 300
    return store.db.records(merge_rows([*again, *same, *new]))


def test_postgresql_the_visit_stats_upsert_probes_its_keys(seeded_pg):
    """The upsert finds each row by a probe of its key: no table scanned, each read about the batch; the
    stats sent as they are write nothing."""
    store, _ = seeded_pg
    counts = "SELECT n_tup_upd, n_tup_ins FROM pg_stat_xact_user_tables WHERE relname = 'origin_visit_stats'"
    rows = _merge_batch(store)
    with store.db.pool.connection() as conn:
        conn.execute("BEGIN")
        try:
            conn.execute(INDEX_DRIVEN_BATCHES)
            # PostgreSQL 15's transaction counts also hold what the session left unreported: take the difference
            before = conn.execute(counts).fetchone() or {"n_tup_upd": 0, "n_tup_ins": 0}
            plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) "
                                + role_queries("compat").merge_visit_stats.rstrip().rstrip(";"),
                                {"rows": rows}).fetchone()["QUERY PLAN"][0]["Plan"]
            after = conn.execute(counts).fetchone()
        finally:
            conn.execute("ROLLBACK")
    nodes = list(_nodes(plan))
    assert not any(n["Node Type"] in ("Seq Scan", "Bitmap Heap Scan", "Materialize") for n in nodes), nodes
    walked = sum(n.get("Actual Rows", 0) * n.get("Actual Loops", 1) + n.get("Rows Removed by Filter", 0)
                 for n in nodes if n.get("Relation Name") == "origin_visit_stats" and n["Node Type"] != "ModifyTable")
    assert walked <= 2 * 1000, walked
    # 400 updated, 300 inserted, the 300 sent as they are left alone
    assert (after["n_tup_upd"] - before["n_tup_upd"], after["n_tup_ins"] - before["n_tup_ins"]) == (400, 300)
