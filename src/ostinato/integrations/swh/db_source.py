"""Reading a live swh-scheduler 3.6 database, and nothing else (see docs/reference/swh-import.md).

:class:`SwhSchedulerSource` opens one connection whose only transaction is read-only and
repeatable-read: every table is read from the same snapshot, and the source is never written.
It refuses, before anything is read or written elsewhere, a URL that is not PostgreSQL's, a
server it cannot reach and a database whose ``dbversion`` is not the one this importer reads
(:data:`SCHEMA_VERSION`), each as a one-line :class:`SourceError` naming ``from``. Tables are
read in batches through server-side cursors, in primary-key order, as plain tuples; the SQL is
in ``scheduler_v38.sql``, written from the tables as ``swh db init`` makes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row, tuple_row

from ...domain.errors import ValidationError
from ...store import sqlite_path
from ...store.postgresql.connect import connect_options, redacted
from ...store.queries import Queries

QUERIES = Queries(Path(__file__).parent / "scheduler_v38.sql")
#: the schema version of swh-scheduler 3.6 (``dbversion``), the only one this importer reads
SCHEMA_VERSION = 38
PEER = "swh-scheduler 3.6"
URL_FORMS = "postgresql://USER@HOST:PORT/DBNAME (or libpq 'host=… dbname=…')"


class SourceError(ValidationError):
    """The source database cannot be read as asked: the message names ``from`` and says why
    (bad input, exit status 2; nothing is written)."""

    def __init__(self, why: str, got: Any = None):
        self.why = why
        super().__init__("from", why, got)

    def _message(self) -> str:
        return f"from: {self.why}"


def check_source_url(url: Any) -> str:
    """``url`` if it names a PostgreSQL database (a URL or libpq's ``key=value`` form)."""
    if not isinstance(url, str) or not url.strip():
        raise SourceError(f"expected the swh-scheduler database's URL, {URL_FORMS}")
    url = url.strip()
    if url.startswith(("postgresql://", "postgres://")):
        return url
    if "://" not in url and sqlite_path(url) is None:  # libpq keywords (host=… dbname=…)
        return url
    shown = f"a {url.split('://', 1)[0]}:// URL" if "@" in url else repr(url)  # never a password
    raise SourceError(f"expected a PostgreSQL URL, {URL_FORMS} (swh-scheduler keeps its database in PostgreSQL), "
                      f"got {shown}")


_Row = TypeVar("_Row")


def _one(row: _Row | None) -> _Row:
    """The row of a query that always answers one (an aggregate)."""
    assert row is not None, "an aggregate query answers one row"
    return row


class SwhSchedulerSource:
    """A read-only, repeatable-read connection to an swh-scheduler database at :data:`SCHEMA_VERSION`."""

    def __init__(self, url: str):
        self.url = check_source_url(url)
        self.shown = redacted(self.url)
        try:
            options = connect_options(self.url)
        except Exception as exc:  # StoreUnavailable: a URL libpq cannot parse
            raise SourceError(str(exc).replace("database ", "", 1)) from None
        try:
            self.conn = psycopg.connect(self.url, **options, row_factory=tuple_row)
        except psycopg.Error as exc:
            raise SourceError(f"cannot connect to {self.shown}: {_reason(exc)}") from None
        # the only transaction of this connection: one snapshot of every table, never a write
        self.conn.read_only = True
        self.conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        try:
            self.version = self._check_version()
        except BaseException:
            self.close()
            raise
        self._cursors = 0

    def _check_version(self) -> int:
        with self.conn.cursor(row_factory=dict_row) as cur:
            if not _one(cur.execute(QUERIES.has_dbversion).fetchone())["present"]:
                raise SourceError(f"{self.shown} is not an swh-scheduler database (it has no dbversion table); "
                                  f"expected schema version {SCHEMA_VERSION} ({PEER})")
            version = _one(cur.execute(QUERIES.dbversion).fetchone())["version"]
        if version != SCHEMA_VERSION:
            raise SourceError(f"swh-scheduler schema version {version} found in {self.shown}, version "
                              f"{SCHEMA_VERSION} expected ({PEER}, as `swh db init` makes it)")
        return version

    def close(self) -> None:
        if not self.conn.closed:
            self.conn.rollback()  # a read-only transaction: nothing to keep
            self.conn.close()

    def __enter__(self) -> SwhSchedulerSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self, table: str) -> int:
        """Rows of ``table`` in the snapshot (one of the tables the importer reads)."""
        return int(_one(self.conn.execute(getattr(QUERIES, f"count_{table}")).fetchone())[0])

    def all(self, name: str) -> list[tuple]:
        """Every row of a small query (task types, listers, queue positions, metrics)."""
        return self.conn.execute(getattr(QUERIES, name)).fetchall()

    def lookup(self, name: str, params: dict[str, Any]) -> list[tuple]:
        """The rows of a lookup query (the check after an import) for ``params``."""
        return self.conn.execute(getattr(QUERIES, name), params).fetchall()

    def batches(self, name: str, size: int) -> Iterator[list[tuple]]:
        """The rows of the query ``name`` in batches of ``size``, through a server-side cursor."""
        self._cursors += 1
        with self.conn.cursor(name=f"ostinato_import_{name}_{self._cursors}") as cur:
            cur.itersize = size
            cur.execute(getattr(QUERIES, name))
            while True:
                rows = cur.fetchmany(size)
                if not rows:
                    return
                yield rows


def _reason(exc: BaseException) -> str:
    """libpq's message on one line."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = "; ".join(lines) or type(exc).__name__
    return text.removeprefix("connection failed: ").removeprefix("connection is bad: ")
