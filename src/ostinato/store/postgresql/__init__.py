"""The PostgreSQL store: psycopg 3 with a connection pool."""

from .store import PostgresStore

__all__ = ["PostgresStore"]
