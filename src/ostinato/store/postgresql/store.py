"""The PostgreSQL store: :class:`SQLStore` over :class:`PostgresDialect` (psycopg 3 with a pool)."""

from __future__ import annotations

from ..sql_store import SQLStore
from .dialect import PostgresDialect


class PostgresStore(SQLStore):
    """Every role of the store on one PostgreSQL database (see ``store/postgresql/dialect.py``)."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0):
        self.dsn = dsn
        super().__init__(PostgresDialect(dsn, min_size=min_size, max_size=max_size, timeout=timeout))
