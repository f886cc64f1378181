"""The migration that indexes a type's tasks by id (task_by_type_idx) on a database with tasks, on both stores;
on PostgreSQL it keeps an index built beforehand with CREATE INDEX CONCURRENTLY and replaces one such build
left invalid (see docs/how-to/deploy.md, "Upgrading")."""

from __future__ import annotations

from helpers import GIT, HG, new

from ostinato.store.postgresql import PostgresStore
from ostinato.store.sqlite import SQLiteStore


def _upgrade_to_before(store) -> int:
    """The store migrated to the version before the index, with tasks of two types; the index's version."""
    every = store.db.migrations
    [by_type] = [m for m in every if m.description == "tasks by type"]
    store.db.migrations = [m for m in every if m.version < by_type.version]
    store.upgrade_schema()
    store.create_task_type(GIT)
    store.create_task_type(HG)
    store.create_tasks([new(f"t{i}", type="load-hg" if i % 3 == 0 else "load-git") for i in range(30)])
    store.db.migrations = every
    return by_type.version


def _hg_ids(store) -> list[int]:
    return [t.id for t in store.search_tasks(task_type="load-hg", limit=100)]


def test_sqlite_migration_indexes_the_tasks_by_type(tmp_path):
    with SQLiteStore(tmp_path / "old.db") as store:
        version = _upgrade_to_before(store)
        before = _hg_ids(store)
        assert store.upgrade_schema() == [m.version for m in store.db.migrations if m.version >= version]
        [index] = store.db.read("SELECT sql FROM sqlite_master WHERE name = 'task_by_type_idx'")
        assert index["sql"] == "CREATE INDEX task_by_type_idx ON task (type)"
        assert _hg_ids(store) == before and len(before) == 10


def _index(store) -> dict | None:
    rows = store.db.read("SELECT i.indexrelid::bigint AS oid, i.indisvalid AS valid, pg_get_indexdef(i.indexrelid) AS definition "
                         "FROM pg_index AS i WHERE i.indexrelid = to_regclass('task_by_type_idx')")
    return rows[0] if rows else None


def test_postgresql_migration_keeps_a_concurrent_build_and_replaces_a_failed_one(pg_server):
    import psycopg

    wanted = "CREATE INDEX task_by_type_idx ON public.task USING btree (type, id)"
    for case in ("none", "built", "failed"):
        dsn = pg_server.create_database(f"by_type_{case}")
        try:
            with PostgresStore(dsn) as store:
                version = _upgrade_to_before(store)
                before = _hg_ids(store)
                with psycopg.connect(dsn, autocommit=True) as conn:  # outside a transaction, as an operator does it
                    if case == "built":
                        conn.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS task_by_type_idx ON task (type, id)")
                    elif case == "failed":  # a build that fails (here: duplicate keys) leaves its index invalid
                        try:
                            conn.execute("CREATE UNIQUE INDEX CONCURRENTLY task_by_type_idx ON task (type)")
                        except psycopg.errors.UniqueViolation:
                            pass
                prebuilt = _index(store)
                assert (prebuilt is None) == (case == "none")
                if case == "failed":
                    assert prebuilt is not None and not prebuilt["valid"]
                assert store.upgrade_schema()[0] == version
                index = _index(store)
                assert index is not None and index["valid"] and index["definition"] == wanted, index
                if case == "built":
                    assert prebuilt is not None and index["oid"] == prebuilt["oid"]  # kept, not built again
                assert _hg_ids(store) == before and len(before) == 10
        finally:
            pg_server.drop_database(f"by_type_{case}")
