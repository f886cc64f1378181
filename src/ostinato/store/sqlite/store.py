"""The SQLite store: :class:`SQLStore` over :class:`SQLiteDialect` (one connection, one writer at a time)."""

from __future__ import annotations

from pathlib import Path

from ..sql_store import SQLStore
from .dialect import SQLiteDialect


class SQLiteStore(SQLStore):
    """Every role of the store on one SQLite file (see ``store/sqlite/dialect.py``)."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0, create: bool = True):
        """Open the database file at ``path``; with ``create`` (the default) a missing file and its
        directories are created, without it a missing file is a :class:`StoreUnavailable` and nothing
        is written to the file system (a command that only reads must not leave an empty file behind)."""
        self.path = str(path)
        super().__init__(SQLiteDialect(self.path, timeout=timeout, create=create))
