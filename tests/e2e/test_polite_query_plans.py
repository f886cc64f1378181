"""The polite grab stays an index walk when one host holds most origins and has no room (see
docs/reference/origins.md, "Politeness per host"): plans on seeded data (PostgreSQL: 200,000 origins,
nine in ten on one host, half of all cooling down; SQLite: 50,000)."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import psycopg
import pytest
from test_origin_query_plans import (
    BATCH,
    LITE,
    NOW,
    PG,
    PICK_INDEXES,
    PICKS,
    SEED_LITE,
    SEED_PG,
    _analyze,
    _nodes,
    _params,
    lite_pick,
    pg_pick,
)

from ostinato.store.origins.polite_grab import polite_statement

#: nine origins in ten on big.example, the rest over 2,000 small hosts, interleaved in every order
HOSTS = """
UPDATE origin_visit_stats SET host = CASE WHEN hashtext(url) % 10 <> 0 THEN 'big.example'
                                          ELSE 'h' || (abs(hashtext(url)) % 2000) || '.example' END;
INSERT INTO host_politeness (visit_type, host, last_start)
SELECT 'git', 'h' || i || '.example', %(now)s - i * interval '1 second' FROM generate_series(0, 1999) AS i;
ANALYZE;
"""
#: the share of origins the walk may pass over: those of the closed host (nine in ten) and a margin
WALK_FACTOR = 15


@pytest.fixture(scope="module")
def busy_host_pg(pg_server, pg_template):
    name = "polite_plans"
    dsn = pg_server.create_database(name, template=pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in filter(str.strip, (SEED_PG + HOSTS).split(";")):
            conn.execute(statement.replace("%", "%%").replace("%%(now)s", "%(now)s"), {"now": NOW})
        yield conn
    pg_server.drop_database(name)


def _polite(queries, pick: str) -> str:
    return polite_statement(queries.polite_pick, (pg_pick if queries is PG else lite_pick)(pick), queries.host_filter)


@pytest.mark.parametrize("pick", PICKS)
def test_postgresql_polite_picks_walk_their_index_past_the_closed_host(busy_host_pg, pick):
    params = {**_params(), "closed_hosts": ["big.example", "h1.example", "h2.example"]}
    plan = _analyze(busy_host_pg, _polite(PG, pick), params)
    nodes = list(_nodes(plan))
    assert not any(n["Node Type"] in ("Sort", "Incremental Sort", "Seq Scan", "Bitmap Heap Scan") for n in nodes), nodes
    [scan] = [n for n in nodes if n.get("Index Name") == PICK_INDEXES[pick]]
    walked = scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0)
    assert scan["Actual Rows"] > 0
    assert walked <= WALK_FACTOR * BATCH, f"{pick} walked {walked} index entries for a batch of {BATCH}"


def test_postgresql_polite_support_queries_use_their_indexes(busy_host_pg):
    hosts = [f"h{i}.example" for i in range(200)] + ["big.example"]
    cases = [
        (PG.in_flight_by_host, {"visit_type": "git", "now": NOW}, "visit_in_flight_by_host_idx"),
        (PG.in_flight_of_hosts, {"visit_type": "git", "now": NOW, "hosts": hosts}, "visit_in_flight_by_host_idx"),
        (PG.recent_starts, {"visit_type": "git", "since": NOW - timedelta(seconds=30)}, "host_politeness_last_start_idx"),
        (PG.starts_of_hosts, {"visit_type": "git", "hosts": hosts}, "host_politeness_pkey"),
        (PG.mark_grabbed, {"visit_type": "git", "now": NOW, "cooldown_until": NOW + timedelta(days=1),
                           "urls": [f"https://forge.example/{i}" for i in range(1, 1001)]}, "origin_visit_stats_pkey"),
        (PG.politeness, {"visit_type": "git"}, "host_politeness_pkey"),
    ]
    for sql, params, index in cases:
        nodes = list(_nodes(_analyze(busy_host_pg, sql, params)))
        assert index in {n.get("Index Name") for n in nodes}, (index, nodes)
        assert not any(n["Node Type"] == "Seq Scan" and n.get("Relation Name") in ("origin_visit_stats", "host_politeness")
                       for n in nodes), nodes


def test_sqlite_polite_picks_walk_their_index(tmp_path):
    from ostinato.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "plans.db")
    store.init_schema()
    store.close()
    conn = sqlite3.connect(tmp_path / "plans.db")
    conn.executescript(SEED_LITE + """
        UPDATE origin_visit_stats SET host = CASE WHEN rowid % 10 <> 0 THEN 'big.example'
                                                  ELSE 'h' || (rowid % 2000) || '.example' END;
        ANALYZE;""")
    iso = lambda t: t.isoformat(timespec="microseconds")
    params = {"visit_type": "git", "now": iso(NOW), "visited_before": iso(NOW - timedelta(days=1)),
              "lister_id": None, "limit": BATCH, "closed_hosts": '["big.example", "h10.example"]'}
    for pick in PICKS:
        plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + _polite(LITE, pick), params))
        index = PICK_INDEXES[pick]
        assert f"USING INDEX {index}" in plan or f"USING COVERING INDEX {index}" in plan, (pick, plan)
        assert "TEMP B-TREE" not in plan, (pick, plan)
    plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + LITE.in_flight_by_host,
                                                    {"visit_type": "git", "now": iso(NOW)}))
    assert "visit_in_flight_by_host_idx" in plan, plan
