"""Schema: init, upgrade, version; the canonical schema is its files in a fixed order, and equals the migrated one."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ostinato.domain.errors import ConflictError, SchemaError
from ostinato.store.migrations import SCHEMA_FILES, load_schema
from ostinato.store.postgresql import PostgresStore
from ostinato.store.sqlite import SQLiteStore


def test_fresh_store_is_at_latest_version(store):
    state = store.schema_state()
    assert state.up_to_date and state.current >= 1
    store.check_schema()
    assert store.upgrade_schema() == []


def test_init_refuses_a_database_that_is_not_empty(store):
    with pytest.raises(ConflictError):
        store.init_schema()


def test_empty_database_has_no_schema(tmp_path):
    store = SQLiteStore(tmp_path / "empty.db")
    assert store.schema_state().current is None
    with pytest.raises(SchemaError, match="ostinato db init"):
        store.check_schema()


def _sqlite_schema(store: SQLiteStore) -> list[tuple[str, str, str]]:
    rows = store.db.read("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
    return [(r["type"], r["name"], " ".join((r["sql"] or "").split())) for r in rows]


def test_sqlite_canonical_schema_equals_migrations(tmp_path):
    fresh = SQLiteStore(tmp_path / "fresh.db")
    fresh.init_schema()
    migrated = SQLiteStore(tmp_path / "migrated.db")
    assert migrated.upgrade_schema() == list(range(1, fresh.schema_state().latest + 1))
    assert _sqlite_schema(fresh) == _sqlite_schema(migrated)
    assert migrated.schema_state() == fresh.schema_state()


def _pg_dump_schema(dsn: str) -> str:
    pg_dump = shutil.which("pg_dump")
    assert pg_dump, "pg_dump (Debian postgresql-client) is needed by this test"
    out = subprocess.run([pg_dump, "--schema-only", "--no-owner", "--no-privileges", dsn],
                         check=True, capture_output=True, text=True).stdout
    return "\n".join(line for line in out.splitlines() if line.strip() and not line.startswith(("--", "\\restrict", "\\unrestrict")))


def test_postgresql_canonical_schema_equals_migrations(pg_server):
    fresh_dsn = pg_server.create_database("schema_fresh")
    migrated_dsn = pg_server.create_database("schema_migrated")
    try:
        with PostgresStore(fresh_dsn) as fresh, PostgresStore(migrated_dsn) as migrated:
            fresh.init_schema()
            assert migrated.upgrade_schema() == list(range(1, fresh.schema_state().latest + 1))
            assert migrated.schema_state() == fresh.schema_state()
        assert _pg_dump_schema(fresh_dsn) == _pg_dump_schema(migrated_dsn)
    finally:
        pg_server.drop_database("schema_fresh")
        pg_server.drop_database("schema_migrated")


def test_the_canonical_schema_is_its_files_in_order(tmp_path):
    for index, name in enumerate(reversed(SCHEMA_FILES)):
        (tmp_path / name).write_text(f"CREATE TABLE t{index} (x INTEGER);\n", encoding="utf-8")
    script = load_schema(tmp_path)
    assert [line for line in script.splitlines() if line] == [
        (tmp_path / name).read_text(encoding="utf-8").strip() for name in SCHEMA_FILES]
    (tmp_path / "schema_more.sql").write_text("CREATE TABLE more (x INTEGER);\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="found .*schema_more.sql"):
        load_schema(tmp_path)
