"""The SQLite store: :class:`SQLStore` over :class:`SQLiteDialect` (one connection, one writer at a time).

The origins role, not yet written once, is still mixed in from this package.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..sql_store import SQLStore
from .dialect import SQLiteDialect
from .origins import SQLiteOrigins


class SQLiteStore(SQLiteOrigins, SQLStore):

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
        with self.db.write(rollback=rollback) as conn:
            yield conn

    def _read(self, sql: str, params: Mapping[str, Any] | Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()
