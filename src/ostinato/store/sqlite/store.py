"""SQLite implementation of the store: one connection, one writer at a time.

Writes run in ``BEGIN IMMEDIATE`` transactions (SQLite's single-writer lock is
the row lease here); arrays travel as JSON text read by ``json_each``. The
connection is shared by the threads of one process under a lock; several
processes on one file are serialised by SQLite itself (WAL, busy timeout).
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ...domain.errors import ConflictError
from ..interface import SchemaState
from ..migrations import latest_version, load_migrations
from ..tasks.rows import run_of, task_of
from .codec import to_db_time
from .dialect import SQLiteDialect
from ..sql_store import SQLStore
from .compat import SQLiteCompat
from .imports import SQLiteImports
from .origins import SQLiteOrigins
from .schedules import SQLiteSchedules

HERE = Path(__file__).parent
MIGRATIONS = load_migrations(HERE / "migrations")
SCHEMA_VERSION_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_version ("
    "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT"
)

# the compat mixin reads tasks and runs with these until its own flow replaces it
_row_to_task = partial(task_of, SQLiteDialect)
_row_to_run = partial(run_of, SQLiteDialect)


class SQLiteStore(SQLiteOrigins, SQLiteSchedules, SQLiteCompat, SQLiteImports, SQLStore):

    def __init__(self, path: str | Path, *, timeout: float = 30.0, create: bool = True):
        """Open the database file at ``path``; with ``create`` (the default) a missing file and its
        directories are created, without it a missing file is a :class:`StoreUnavailable` and nothing
        is written to the file system (a command that only reads must not leave an empty file behind)."""
        self.path = str(path)
        super().__init__(SQLiteDialect(self.path, timeout=timeout, create=create))
        self._conn = self.db.conn
        self._lock = self.db.lock_

    @contextmanager
    def _write(self, *, rollback: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction, committed on success (rolled back always with ``rollback``: a dry run)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("ROLLBACK" if rollback else "COMMIT")

    def _read(self, sql: str, params: Mapping[str, Any] | Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # -- schema -----------------------------------------------------------
    def schema_state(self) -> SchemaState:
        with self._lock:
            exists = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'").fetchone()
            current = self._conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] if exists else None
        return SchemaState(current, latest_version(MIGRATIONS))

    def init_schema(self) -> SchemaState:
        with self._write() as conn:
            tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
            if tables:
                raise ConflictError(f"{self.path} is not empty: use `ostinato db upgrade` on an existing database")
            conn.execute(SCHEMA_VERSION_DDL)
            for statement in _statements((HERE / "schema.sql").read_text(encoding="utf-8")):
                conn.execute(statement)
            now = to_db_time(datetime.now(timezone.utc))
            conn.executemany(
                "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                [(m.version, m.description, now) for m in MIGRATIONS],
            )
        return self.schema_state()

    def upgrade_schema(self) -> list[int]:
        applied = []
        with self._write() as conn:
            conn.execute(SCHEMA_VERSION_DDL)
            current = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]
            for migration in MIGRATIONS:
                if migration.version <= current:
                    continue
                for statement in _statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.description, to_db_time(datetime.now(timezone.utc))),
                )
                applied.append(migration.version)
        return applied


def _statements(script: str) -> list[str]:
    """Split a schema script into statements (our scripts have no ';' inside literals)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
