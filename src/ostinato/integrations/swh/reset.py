"""Emptying a database between the tests of a conformance harness (``ostinato swh-rpc serve
--test-reset``, see docs/reference/swh-compat.md): every table's rows go, the schema and
the API tokens stay, and identifiers start again from 1. Never for a database in use."""

from __future__ import annotations

from typing import Any

from ...store import Store

_KEPT = ("schema_version", "api_token")


def empty_store(store: Store) -> None:
    if store.dialect == "sqlite":
        db: Any = store.db  # type: ignore[attr-defined]  # an SQL store's dialect (Store names none)
        conn = db.conn
        with db.lock_:
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()]
            conn.execute("PRAGMA foreign_keys=OFF")
            try:
                conn.execute("BEGIN IMMEDIATE")
                for table in tables:
                    if table not in _KEPT:
                        conn.execute(f'DELETE FROM "{table}"')
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
                    conn.execute("DELETE FROM sqlite_sequence WHERE name NOT IN ('api_token')")
                conn.execute("COMMIT")
            finally:
                conn.execute("PRAGMA foreign_keys=ON")
        return
    with store.db.write() as conn:  # type: ignore[attr-defined]  # an SQL store's dialect (Store names none)
        tables = [r["tablename"] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()]
        wiped = [f'"{t}"' for t in tables if t not in _KEPT]
        if wiped:
            conn.execute(f"TRUNCATE {', '.join(wiped)} RESTART IDENTITY CASCADE")
