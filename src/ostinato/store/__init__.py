"""Storage: the :class:`Store` interface and :func:`open_store` for a database URL.

``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite:///:memory:``
or a plain file path open the embedded SQLite store; ``postgresql://…`` (or a libpq
``host=… dbname=…`` string) opens the PostgreSQL store.
"""

from __future__ import annotations

import re

from .. import extras
from ..domain.errors import StoreUnavailable, ValidationError
from .interface import ArchivedTask, SchemaState, Store, TaskActivity

DB_URL_FORMS = "sqlite:///PATH, sqlite:///:memory: or postgresql://USER@HOST:PORT/DBNAME (or libpq 'host=… dbname=…')"
_LIBPQ_KEYWORDS = re.compile(r"^\s*(host|hostaddr|port|dbname|user|password|service|sslmode|options|application_name|connect_timeout)\s*=")


def sqlite_path(url: str) -> str | None:
    """The file path of a SQLite URL, or None if the URL is not SQLite."""
    if url.startswith("sqlite://"):
        rest = url[len("sqlite://"):]
        if rest in ("", "/", "/:memory:", ":memory:"):
            return ":memory:"
        if not rest.startswith("/"):
            raise ValidationError("db", DB_URL_FORMS, url)
        return rest[1:] or ":memory:"
    if "://" not in url and not _LIBPQ_KEYWORDS.match(url):
        return url
    return None


def shown_url(url: str) -> str:
    """The database URL as a message may show it: a PostgreSQL URL's password as ``***``."""
    if sqlite_path(url) is not None:
        return url
    from .postgresql.connect import redacted  # a PostgreSQL URL: its driver is installed

    return redacted(url)


def open_store(url: str, *, create: bool = True, **options) -> Store:
    """Open the store a URL names. The schema is not checked: see ``Store.check_schema``.

    ``create=False`` refuses a SQLite file that does not exist (a :class:`StoreUnavailable`) instead of
    creating it: for whatever only reads. A PostgreSQL database is never created; an unreachable server
    is a :class:`StoreUnavailable` too.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValidationError("db", DB_URL_FORMS, url)
    url = url.strip()
    path = sqlite_path(url)
    if path is not None:
        from .sqlite import SQLiteStore

        return SQLiteStore(path, create=create, **options)
    if url.startswith(("postgresql://", "postgres://")) or _LIBPQ_KEYWORDS.match(url):
        extras.require("postgresql", "a PostgreSQL database (--db postgresql://…)")
        from .postgresql import PostgresStore

        return PostgresStore(url, **options)
    raise ValidationError("db", DB_URL_FORMS, url)


__all__ = ["ArchivedTask", "SchemaState", "Store", "StoreUnavailable", "TaskActivity", "open_store", "shown_url", "sqlite_path"]
