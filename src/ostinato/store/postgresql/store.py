"""PostgreSQL implementation of the store: psycopg 3 with a connection pool.

Claims that may race take row leases (``FOR UPDATE SKIP LOCKED``); bulk writes
pass whole batches as array parameters read by ``unnest``; every session runs
in UTC and receives ``now`` from the caller.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Mapping

import psycopg

from ...domain.errors import ConflictError
from ..interface import SchemaState
from ..migrations import latest_version, load_migrations
from ..tasks.rows import run_of, task_of
from .dialect import PostgresDialect
from ..sql_store import SQLStore
from .compat import PostgresCompat
from .imports import PostgresImports
from .origins import PostgresOrigins
from .schedules import PostgresSchedules

HERE = Path(__file__).parent
MIGRATIONS = load_migrations(HERE / "migrations")
SCHEMA_VERSION_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_version ("
    "version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
)

# the compat mixin reads tasks and runs with these until its own flow replaces it
_row_to_task = partial(task_of, PostgresDialect)
_row_to_run = partial(run_of, PostgresDialect)


class PostgresStore(PostgresOrigins, PostgresCompat, PostgresSchedules, PostgresImports, SQLStore):

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0):
        self.dsn = dsn
        super().__init__(PostgresDialect(dsn, min_size=min_size, max_size=max_size, timeout=timeout))
        self._pool = self.db.pool

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection]:
        """A connection in a transaction, committed on success."""
        with self._pool.connection() as conn:
            with conn.transaction():
                yield conn

    def _batch_tx(self) -> AbstractContextManager[psycopg.Connection]:
        """A transaction whose joins are index-driven nested loops (the dialect's batch transaction)."""
        return self.db.write(batch=True)

    def _read(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._pool.connection() as conn:
            return conn.execute(sql, params).fetchall()

    # -- schema -----------------------------------------------------------
    def schema_state(self) -> SchemaState:
        with self._pool.connection() as conn:
            exists = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL AS e").fetchone()["e"]
            current = conn.execute("SELECT max(version) AS v FROM schema_version").fetchone()["v"] if exists else None
        return SchemaState(current, latest_version(MIGRATIONS))

    def init_schema(self) -> SchemaState:
        with self._tx() as conn:
            tables = conn.execute(
                "SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchone()["n"]
            if tables:
                raise ConflictError("the database is not empty: use `ostinato db upgrade` on an existing database")
            conn.execute(SCHEMA_VERSION_DDL)
            conn.execute((HERE / "schema.sql").read_text(encoding="utf-8"))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                    [(m.version, m.description) for m in MIGRATIONS],
                )
        return self.schema_state()

    def upgrade_schema(self) -> list[int]:
        applied = []
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('ostinato.migrations'))")
            conn.execute(SCHEMA_VERSION_DDL)
            current = conn.execute("SELECT coalesce(max(version), 0) AS v FROM schema_version").fetchone()["v"]
            for migration in MIGRATIONS:
                if migration.version <= current:
                    continue
                conn.execute(migration.sql)
                conn.execute(
                    "INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                    (migration.version, migration.description),
                )
                applied.append(migration.version)
        return applied
