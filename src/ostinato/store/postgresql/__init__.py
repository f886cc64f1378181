"""The PostgreSQL store: psycopg 3 with a connection pool."""

from .store import PostgresStore, ReplayState

__all__ = ["PostgresStore", "ReplayState"]
