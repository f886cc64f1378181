"""The PostgreSQL store: :class:`SQLStore` over :class:`PostgresDialect` (psycopg 3 with a pool).

The origins role, not yet written once, is still mixed in from this package.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from typing import Any, Iterator, Mapping

import psycopg

from ..sql_store import SQLStore
from .dialect import PostgresDialect
from .origins import PostgresOrigins


class PostgresStore(PostgresOrigins, SQLStore):

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0):
        self.dsn = dsn
        super().__init__(PostgresDialect(dsn, min_size=min_size, max_size=max_size, timeout=timeout))
        self._pool = self.db.pool

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection]:
        """A connection in a transaction, committed on success."""
        with self.db.write() as conn:
            yield conn

    def _batch_tx(self) -> AbstractContextManager[psycopg.Connection]:
        """A transaction whose joins are index-driven nested loops (the dialect's batch transaction)."""
        return self.db.write(batch=True)

    def _read(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return self.db.read(sql, params)
