"""The SQLite store: the embedded default, standard library only."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
