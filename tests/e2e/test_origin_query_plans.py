"""Every scheduling policy's pick is an index walk whose cost follows the batch,
not the table: plans checked on seeded data (PostgreSQL: 200,000 origins, half
of them cooling down; SQLite: 50,000)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from ostinato.domain.policy_picks import PICKS as DECLARED
from ostinato.store.origins.picks import pick_statement
from ostinato.store.postgresql.dialect import INDEX_DRIVEN_BATCHES
from ostinato.store.postgresql.dialect import role_queries as pg_queries
from ostinato.store.sqlite.dialect import role_queries as lite_queries

PG = pg_queries("origins")
LITE = lite_queries("origins")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
PICKS = sorted(DECLARED)
PICK_INDEXES = {name: pick.index for name, pick in DECLARED.items()}
BATCH = 1000

# i % 3: never loaded / loaded once / loaded three times; i % 5 = 0: no last_update;
# i % 2 = 0: cooling down (grabbed or just visited); 80 % git, 20 % hg
SEED_PG = """
INSERT INTO lister (name, instance_name, updated) VALUES ('forge', 'forge', %(now)s), ('other', 'other', %(now)s);
INSERT INTO listed_origin (lister_id, url, visit_type, first_seen, last_seen, last_update, is_fork)
SELECT 1, 'https://forge.example/' || i, CASE WHEN i % 10 < 8 THEN 'git' ELSE 'hg' END,
       %(now)s - interval '400 days' + (i % 1000) * interval '1 minute', %(now)s,
       CASE WHEN i % 5 <> 0 THEN %(now)s - (i % 1000) * interval '1 hour' END, i % 10 = 3
FROM generate_series(1, 200000) AS i;
INSERT INTO origin_visit_stats (url, visit_type, enabled, first_seen, last_update, is_fork, last_visit, last_successful,
                                successful_visits, next_visit_target, last_scheduled, cooldown_until, last_status_date,
                                next_optimal_visit)
SELECT o.url, o.visit_type, true, o.first_seen, o.last_update, coalesce(o.is_fork, false),
       CASE WHEN i % 3 > 0 THEN %(now)s - (i % 700) * interval '1 hour' END,
       CASE WHEN i % 3 > 0 THEN %(now)s - (i % 700) * interval '1 hour' END,
       CASE i % 3 WHEN 0 THEN 0 WHEN 1 THEN 1 ELSE 3 END,
       CASE WHEN i % 3 > 0 THEN %(now)s - (i % 40) * interval '1 day' + interval '20 days' END,
       CASE WHEN i % 7 > 0 THEN %(now)s - (i % 30) * interval '1 day' END,
       CASE WHEN i % 2 = 0 THEN %(now)s + interval '1 day' END,
       CASE WHEN i % 3 > 0 THEN %(now)s - (i % 700) * interval '1 hour' END,
       CASE WHEN i % 3 > 0 THEN %(now)s - (i % 50) * interval '1 day' + interval '25 days' END
FROM listed_origin AS o, LATERAL (SELECT substr(o.url, 23)::int AS i) AS n;
ANALYZE;
"""


@pytest.fixture(scope="module")
def seeded_pg(pg_server, pg_template):
    name = "origin_plans"
    dsn = pg_server.create_database(name, template=pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in filter(str.strip, SEED_PG.split(";")):
            conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": NOW})
        yield conn
    pg_server.drop_database(name)


def pg_pick(name: str) -> str:
    """The pick as the PostgreSQL store renders it from its template."""
    return pick_statement(PG, "postgresql", name)


def lite_pick(name: str) -> str:
    return pick_statement(LITE, "sqlite", name)


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _analyze(conn, sql: str, params: dict, setup: str = PG.index_ordered_picks) -> dict:
    """The plan as the store runs it: in a transaction with the grab's settings, rolled back."""
    conn.execute("BEGIN")
    try:
        conn.execute(setup)
        return conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params).fetchone()[0][0]["Plan"]
    finally:
        conn.execute("ROLLBACK")


def _params(lister_id=None) -> dict:
    return {"visit_type": "git", "now": NOW, "visited_before": NOW - timedelta(days=1), "lister_id": lister_id,
            "limit": BATCH}


def _grab_sql(pick: str) -> str:
    """The statement a grab runs: the pick and the marking of what it locked (as the store composes it)."""
    return PG.grab_picked.replace("{pick}", pg_pick(pick).rstrip().rstrip(";"))


@pytest.mark.parametrize("pick", PICKS)
@pytest.mark.parametrize("lister_id", [None, 1])
def test_postgresql_picks_walk_their_index_about_the_batch(seeded_pg, pick, lister_id):
    plan = _analyze(seeded_pg, _grab_sql(pick), {**_params(lister_id), "cooldown_until": NOW + timedelta(days=1)})
    nodes = list(_nodes(plan))
    scans = [n for n in nodes if n.get("Index Name")]
    # the policy's index, walked in order; each locked row then updated by its tuple id
    assert [n["Index Name"] for n in scans if n["Index Name"].startswith("visit_")] == [PICK_INDEXES[pick]], nodes
    assert any(n["Node Type"] == "Tid Scan" for n in nodes), nodes
    assert not any(n["Node Type"] in ("Sort", "Incremental Sort", "Seq Scan", "Bitmap Heap Scan") for n in nodes), nodes
    [scan] = [n for n in scans if n["Index Name"] == PICK_INDEXES[pick]]
    walked = scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0)
    assert scan["Actual Rows"] > 0
    assert walked <= BATCH, f"{pick} walked {walked} index entries for a batch of {BATCH}"


@pytest.mark.parametrize("pick", PICKS)
def test_postgresql_dry_picks_walk_their_index_and_write_no_row_version(seeded_pg, pick):
    sql = PG.dry_picked.replace("{pick}", pg_pick(pick).rstrip().rstrip(";"))
    plan = _analyze(seeded_pg, sql, {**_params(), "cooldown_until": NOW + timedelta(days=1)})
    nodes = list(_nodes(plan))
    assert [n["Index Name"] for n in nodes if n.get("Index Name", "").startswith("visit_")] == [PICK_INDEXES[pick]], nodes
    # the rows are locked as a real grab locks them (SKIP LOCKED), and nothing else is written
    assert any(n["Node Type"] == "LockRows" for n in nodes), nodes
    assert not any(n["Node Type"] in ("ModifyTable", "Sort", "Seq Scan", "Bitmap Heap Scan") for n in nodes), nodes
    [scan] = [n for n in nodes if n.get("Index Name") == PICK_INDEXES[pick]]
    assert 0 < scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) <= BATCH


def test_postgresql_a_dry_pick_updates_no_row_where_the_grab_updates_each(seeded_pg):
    pick = pg_pick("pick_never_visited_oldest_update_first").rstrip().rstrip(";")
    counts = "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'origin_visit_stats'"
    # PostgreSQL 15's transaction counts also hold what earlier transactions of the session left
    # unreported (reported at most once a second): the statement's own part is the difference
    for template, updated in ((PG.dry_picked, 0), (PG.grab_picked, BATCH)):
        seeded_pg.execute("BEGIN")
        try:
            seeded_pg.execute(PG.index_ordered_picks)
            before = seeded_pg.execute(counts).fetchone()
            rows = seeded_pg.execute(template.replace("{pick}", pick),
                                     {**_params(), "cooldown_until": NOW + timedelta(days=1)}).fetchall()
            assert len(rows) == BATCH
            after = seeded_pg.execute(counts).fetchone()
            assert after[0] - (before[0] if before else 0) == updated
        finally:
            seeded_pg.execute("ROLLBACK")


def test_postgresql_grab_support_queries_use_keys(seeded_pg):
    urls = [f"https://forge.example/{i}" for i in range(1, 2001)]
    cases = [
        (PG.release_cooldowns, {"visit_type": "git", "now": NOW - timedelta(hours=1)}, "visit_cooldown_idx"),
        (PG.release_grabbed, {"urls": urls, "visit_types": ["git"] * len(urls)}, "origin_visit_stats_pkey"),
    ]
    batches = [  # in the store's batch transactions (INDEX_DRIVEN_BATCHES)
        (PG.record_listed_origins, {"lister_id": 2, "now": NOW, "touch_last_seen": True, "answer": True, "rows": json.dumps([
            {"url": u, "visit_type": "git", "enabled": True, "last_update": NOW.isoformat()} for u in urls])},
         "listed_origin_url_idx"),
        (PG.restate_listed_origins, {"lister_id": 2, "urls": urls, "visit_types": ["git"] * len(urls)},
         "listed_origin_url_idx"),
        (PG.visit_stats_for_update, {"urls": urls, "visit_types": ["git"] * len(urls)}, "origin_visit_stats_pkey"),
    ]
    for (sql, params, index), setup in [(c, PG.index_ordered_picks) for c in cases] + [(c, INDEX_DRIVEN_BATCHES) for c in batches]:
        plan = _analyze(seeded_pg, sql, params, setup)
        nodes = list(_nodes(plan))
        assert index in {n.get("Index Name") for n in nodes}, (index, nodes)
        assert not any(n["Node Type"] == "Seq Scan" and n.get("Relation Name") in ("origin_visit_stats", "listed_origin")
                       for n in nodes), nodes


SEED_LITE = """
INSERT INTO lister (name, instance_name, updated) VALUES ('forge', 'forge', '2026-01-01T00:00:00.000000+00:00');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
INSERT INTO origin_visit_stats (url, visit_type, enabled, first_seen, last_update, is_fork, last_visit, last_successful,
                                successful_visits, next_visit_target, last_scheduled, cooldown_until, next_optimal_visit)
SELECT 'https://forge.example/' || i, CASE WHEN i % 10 < 8 THEN 'git' ELSE 'hg' END, 1,
       strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2025-01-01', '+' || (i % 1000) || ' minutes'),
       CASE WHEN i % 5 <> 0 THEN strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2026-01-01', '-' || (i % 1000) || ' hours') END,
       i % 10 = 3,
       CASE WHEN i % 3 > 0 THEN strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2026-01-01', '-' || (i % 700) || ' hours') END,
       CASE WHEN i % 3 > 0 THEN strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2026-01-01', '-' || (i % 700) || ' hours') END,
       CASE i % 3 WHEN 0 THEN 0 WHEN 1 THEN 1 ELSE 3 END,
       CASE WHEN i % 3 > 0 THEN strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2026-01-01', '+' || (20 - i % 40) || ' days') END,
       CASE WHEN i % 7 > 0 THEN strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2026-01-01', '-' || (i % 30) || ' days') END,
       CASE WHEN i % 2 = 0 THEN '2026-01-02T00:00:00.000000+00:00' END,
       CASE WHEN i % 3 > 0 THEN strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2026-01-01', '+' || (25 - i % 50) || ' days') END
FROM n;
INSERT INTO listed_origin (lister_id, url, visit_type, first_seen, last_seen, last_update, is_fork)
SELECT 1, url, visit_type, first_seen, first_seen, last_update, is_fork FROM origin_visit_stats;
ANALYZE;
"""


def test_sqlite_picks_walk_their_index(tmp_path):
    from ostinato.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "plans.db")
    store.init_schema()
    store.close()
    conn = sqlite3.connect(tmp_path / "plans.db")
    conn.executescript(SEED_LITE)
    iso = lambda t: t.isoformat(timespec="microseconds")
    for lister_id in (None, 1):
        params = {"visit_type": "git", "now": iso(NOW), "visited_before": iso(NOW - timedelta(days=1)),
                  "lister_id": lister_id, "limit": BATCH}
        for pick in PICKS:
            plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + lite_pick(pick), params))
            index = PICK_INDEXES[pick]
            assert f"USING INDEX {index}" in plan or f"USING COVERING INDEX {index}" in plan, (pick, plan)
            assert "TEMP B-TREE" not in plan, (pick, plan)
    plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + LITE.release_cooldowns,
                                                    {"visit_type": "git", "now": iso(NOW)}))
    assert "visit_cooldown_idx" in plan, plan


def test_postgresql_plans_hold_on_a_fresh_table_without_statistics(pg_dsn):
    """Right after a first big listing nothing has been analyzed: the grab, the listing
    and the feedback must still be index walks, not scans of a table that looks tiny."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for table in ("listed_origin", "origin_visit_stats", "lister"):
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        for statement in filter(str.strip, SEED_PG.split(";")):
            if "ANALYZE" not in statement:
                conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": NOW})
        assert conn.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'origin_visit_stats'").fetchone()[0] == 0
        urls = [f"https://forge.example/{i}" for i in range(1, 2001)]
        statements = [(_grab_sql(pick), {**_params(), "cooldown_until": NOW}, PG.index_ordered_picks) for pick in PICKS]
        statements += [
            (PG.record_listed_origins, {"lister_id": 2, "now": NOW, "touch_last_seen": True, "answer": True, "rows": json.dumps([
                {"url": u, "visit_type": "git", "enabled": True} for u in urls])}, INDEX_DRIVEN_BATCHES),
            (PG.restate_listed_origins, {"lister_id": 2, "urls": urls, "visit_types": ["git"] * len(urls)},
             INDEX_DRIVEN_BATCHES),
            (PG.visit_stats_for_update, {"urls": urls, "visit_types": ["git"] * len(urls)},
             INDEX_DRIVEN_BATCHES),
        ]
        for sql, params, setup in statements:
            nodes = list(_nodes(_analyze(conn, sql, params, setup)))
            assert not any(n["Node Type"] == "Seq Scan" and n.get("Relation Name") in ("origin_visit_stats", "listed_origin")
                           for n in nodes), nodes
            # a sort of the batch itself (the listing, put in key order) reads no table
            assert not any(n["Node Type"] == "Sort" and any(c.get("Relation Name") for c in _nodes(n)) for n in nodes), nodes
            walked = sum(n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)
                         for n in nodes if n.get("Relation Name") in ("origin_visit_stats", "listed_origin"))
            assert walked <= 10 * len(urls), (sql[:60], walked)


def test_postgresql_rate_sample_reads_a_share_of_the_pages(seeded_pg):
    plan = _analyze(seeded_pg, PG.sample_change_rates, {"visit_type": "git", "percent": 1.5, "seed": 1}, setup="SELECT 1")
    [scan] = [n for n in _nodes(plan) if n["Node Type"].endswith("Scan")]
    assert scan["Node Type"] == "Sample Scan", plan
    pages = seeded_pg.execute("SELECT relpages FROM pg_class WHERE relname = 'origin_visit_stats'").fetchone()[0]
    read = plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)
    assert read < pages * 0.05, (read, pages)


def test_sqlite_rate_sample_probes_rowids(tmp_path):
    from ostinato.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "plans.db")
    store.init_schema()
    store.close()
    conn = sqlite3.connect(tmp_path / "plans.db")
    conn.executescript(SEED_LITE)
    plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + LITE.sample_change_rates,
                                                    {"rows": 50_000, "percent": 1.2, "seed": 2, "visit_type": "git"}))
    assert "USING INTEGER PRIMARY KEY" in plan or "USING ROWID" in plan.upper(), plan
    assert "SCAN origin_visit_stats" not in plan, plan
    conn.close()
    with SQLiteStore(tmp_path / "plans.db") as seeded:  # 50,000 rows: sampled, not read whole
        sample = seeded.sample_change_rates("git", 200, seed=2)
        assert len(sample.beliefs) == 200
        assert sample.enabled_origins == pytest.approx(40_000, rel=0.15)  # 80 % of the rows are git


LISTING_READS = {  # the listings of a URL, of a lister, of both, of all: each walks an index from the cursor
    "listed_origins_of_url": "listed_origin_url_idx", "listed_origins_of_lister": "listed_origin_pkey",
    "listed_origins_of_url_and_lister": "listed_origin_pkey", "search_listed_origins": "listed_origin_url_idx",
}


@pytest.mark.parametrize("query", sorted(LISTING_READS))
def test_listing_reads_walk_an_index_on_both_stores(seeded_pg, tmp_path, query):
    """`origin show URL`, a lister's page of the console: one statement per filter, none a scan of the table."""
    params = {"url": "https://forge.example/77", "lister_id": 1, "after_url": "https://forge.example/5",
              "after_type": "", "after_lister": 0, "limit": 50}
    plan = _analyze(seeded_pg, getattr(PG, query), params, setup="SELECT 1")
    nodes = list(_nodes(plan))
    assert [n.get("Index Name") for n in nodes if n.get("Index Name")] == [LISTING_READS[query]], nodes
    assert not any(n["Node Type"] in ("Seq Scan", "Bitmap Heap Scan") for n in nodes), nodes
    assert sum(n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0) for n in nodes
               if n.get("Index Name")) <= 100, nodes
    from ostinato.store.sqlite import SQLiteStore

    SQLiteStore(tmp_path / "plans.db").init_schema()
    conn = sqlite3.connect(tmp_path / "plans.db")
    conn.executescript(SEED_LITE)
    lite = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + getattr(LITE, query), params))
    assert lite.startswith("SEARCH listed_origin USING INDEX"), lite
