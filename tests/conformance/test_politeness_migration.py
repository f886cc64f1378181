"""The migration to politeness per host fills the hosts of the origins already listed, on both stores,
and changes no metric (see docs/reference/origins.md, "Politeness per host")."""

from __future__ import annotations

from datetime import timedelta

from conftest import T0

from ostinato.domain.tasks import TaskType
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.store.postgresql import PostgresStore
from ostinato.store.sqlite import SQLiteStore

URLS = ["https://User@GitHub.com:443/a/b", "git://[::1]:9418/r", "/srv/repos/x", "https://h.example"]


def _migrate(store) -> None:
    every = store.db.migrations
    [politeness] = [m for m in every if "host politeness" in m.description or "host_politeness" in m.description]
    store.db.migrations = [m for m in every if m.version < politeness.version]
    store.upgrade_schema()
    lister = store.get_or_create_lister("forge", "one", T0)
    time = store.db.time(T0)
    with store.db.write() as conn:
        for url in URLS:
            conn.execute("INSERT INTO origin_visit_stats (url, visit_type, enabled, lister_id, listing_count, first_seen) "
                         f"VALUES ('{url}', 'git', true, {lister.id}, 1, '{time}')")
    before = store.update_origin_metrics(T0)
    store.db.migrations = every
    assert store.upgrade_schema() == [m.version for m in every if m.version >= politeness.version]
    hosts = {r["url"]: r["host"] for r in store.db.read("SELECT url, host FROM origin_visit_stats")}
    assert hosts == {URLS[0]: "github.com", URLS[1]: "[::1]", URLS[2]: None, URLS[3]: "h.example"}
    assert store.update_origin_metrics(T0) == before
    store.create_task_type(TaskType("load-git", "git", "x:y", default_interval=timedelta(days=1)))
    store.set_visit_type_politeness("git", max_concurrent_per_host=1)
    assert len(store.grab_next_visits("git", [GrabRequest(VisitPolicy.OLDEST_SCHEDULED_FIRST, 10)], T0)) == 4


def test_sqlite_migration_fills_the_hosts(tmp_path):
    with SQLiteStore(tmp_path / "old.db") as store:
        _migrate(store)


def test_postgresql_migration_fills_the_hosts(pg_server):
    dsn = pg_server.create_database("politeness_migration")
    try:
        with PostgresStore(dsn) as store:
            _migrate(store)
    finally:
        pg_server.drop_database("politeness_migration")
