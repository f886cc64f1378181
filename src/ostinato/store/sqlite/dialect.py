"""SQLite as the store's flows see it (see ``store/dialect.py``): one connection, one writer at a time.

Writes run in ``BEGIN IMMEDIATE`` transactions (SQLite's single-writer lock is the row
lease here). Times travel as ISO 8601 text in UTC with microseconds (text order is time
order), durations as seconds, JSON documents and lists as JSON text read by ``json_each``
(times in them written the same way, bytes in hex, read with ``unhex``, which the dialect
supplies where SQLite is older than 3.41), a batch of parallel columns or of records as one
JSON array of rows (values by position), or a statement over a batch of records run once per
record (``executemany``). The connection is shared by the threads of one process under a
lock; several processes on one file are serialised by SQLite itself (WAL, busy timeout).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import fields
from datetime import UTC, date, datetime, time, timedelta
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any, overload

import orjson

from ...domain.errors import ValidationError
from ...domain.politeness import host_of
from ..dialect import STORE_DIR
from ..migrations import load_migrations, load_schema
from ..queries import Queries, role_query_files
from .connect import open_sqlite_file

HERE = Path(__file__).parent
MIGRATIONS = load_migrations(HERE / "migrations")


@cache
def role_queries(role: str) -> Queries:
    """The named queries of a role in SQLite (``store/<role>/sqlite.sql``, or
    ``sqlite_<subject>.sql`` for a role that keeps one file per subject)."""
    return Queries(*role_query_files(STORE_DIR / role, "sqlite"))


def to_db_time(value: datetime | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValidationError("time", "a timezone-aware time", value.isoformat() if isinstance(value, datetime) else value)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def to_db_interval(value: timedelta | None) -> float | None:
    return None if value is None else value.total_seconds()


def _json_default(value: Any) -> Any:
    """What orjson hands back: times written as ``to_db_time`` writes them, bytes in hex."""
    if isinstance(value, datetime):
        return to_db_time(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (date, time)):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def json_text(value: Any) -> str:
    return orjson.dumps(value, default=_json_default, option=orjson.OPT_PASSTHROUGH_DATETIME).decode()


def _unhex(text: str | None) -> bytes | None:
    """SQLite's own ``unhex`` (3.41) for an older SQLite: hex text to bytes."""
    return None if text is None else bytes.fromhex(text)


#: how a record's field of each of these types is written (others as they are, enums by value)
_RECORD_VALUES: dict[type, Callable[[Any], Any]] = {datetime: to_db_time, dict: json_text, list: json_text,
                                                    tuple: json_text}


@cache
def _field_names(record_type: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(record_type))


def _json_record_value(value: Any) -> Any:
    """orjson's fallback in a batch of records: times and durations as stored, bytes as hex."""
    if isinstance(value, datetime):
        return to_db_time(value)
    if isinstance(value, timedelta):
        return to_db_interval(value)
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def record_params(record: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """A record's fields as named parameters, after ``params``."""
    row = dict(params)
    for name in _field_names(type(record)):  # type: ignore[arg-type]  # classes are hashable
        value = getattr(record, name)
        write = _RECORD_VALUES.get(type(value))
        row[name] = write(value) if write else value.value if isinstance(value, Enum) else value
    return row


class SQLiteDialect:
    """One SQLite database file (or ``:memory:``)."""

    name = "sqlite"
    migrations = MIGRATIONS

    def __init__(self, path: str, *, timeout: float = 30.0, create: bool = True):
        self.path = self.where = path
        self.conn = open_sqlite_file(path, timeout, create=create)
        self.conn.row_factory = sqlite3.Row
        self.lock_ = threading.RLock()
        with self.lock_:
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            # the migration to politeness per host fills the hosts of the rows already listed
            self.conn.create_function("ostinato_host", 1, host_of, deterministic=True)
            if sqlite3.sqlite_version_info < (3, 41, 0):
                self.conn.create_function("unhex", 1, _unhex, deterministic=True)

    # -- SQL -----------------------------------------------------------------
    def queries(self, role: str) -> Queries:
        return role_queries(role)

    def schema_script(self) -> str:
        return load_schema(HERE)

    def run_script(self, conn: sqlite3.Connection, script: str) -> None:
        """One statement at a time (``executescript`` would commit the transaction)."""
        for statement in statements(script):
            conn.execute(statement)

    # -- transactions --------------------------------------------------------
    @contextmanager
    def write(self, *, batch: bool = False, rollback: bool = False,
              horizon: datetime | None = None) -> Iterator[sqlite3.Connection]:
        with self.lock_:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("ROLLBACK" if rollback else "COMMIT")

    def read(self, sql: str, params: Mapping[str, Any] | None = None) -> list[sqlite3.Row]:
        with self.lock_:
            return self.conn.execute(sql, params or {}).fetchall()

    @staticmethod
    def pipeline(conn: sqlite3.Connection) -> AbstractContextManager[Any]:
        return nullcontext()

    def lock(self, conn: Any, name: str) -> None:
        """Nothing to do: the ``BEGIN IMMEDIATE`` write transaction is the only writer."""

    def notify(self, conn: Any, channel: str) -> None:
        """Nothing to do: SQLite has no notifications (schedulers poll)."""

    def listen(self, channel: str, wake: Callable[[], None], stop: threading.Event) -> bool:
        return False

    def close(self) -> None:
        with self.lock_:
            self.conn.close()

    @staticmethod
    def tuples(conn: sqlite3.Connection, sql: str, params: Mapping[str, Any]) -> list[tuple]:
        cursor = conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

    @classmethod
    def send(cls, conn: sqlite3.Connection, sql: str, params: Mapping[str, Any]) -> Callable[[], list[tuple]]:
        rows = cls.tuples(conn, sql, params)
        return lambda: rows

    @staticmethod
    def execute_many(conn: sqlite3.Connection, sql: str, rows: Iterable[Mapping[str, Any]]) -> None:
        conn.executemany(sql, rows)

    # -- values in and out ---------------------------------------------------
    time = staticmethod(to_db_time)

    @overload
    @staticmethod
    def read_time(value: None) -> None: ...
    @overload
    @staticmethod
    def read_time(value: str) -> datetime: ...
    @staticmethod
    def read_time(value: str | None) -> datetime | None:
        return None if value is None else datetime.fromisoformat(value)

    interval = staticmethod(to_db_interval)

    @overload
    @staticmethod
    def read_interval(value: None) -> None: ...
    @overload
    @staticmethod
    def read_interval(value: float) -> timedelta: ...
    @staticmethod
    def read_interval(value: float | None) -> timedelta | None:
        return None if value is None else timedelta(seconds=value)

    @staticmethod
    def json(value: Any) -> str:
        return json_text(value)

    @staticmethod
    def read_json(value: Any) -> Any:
        return None if value is None else orjson.loads(value)

    @staticmethod
    def array(values: Iterable[Any]) -> str:
        return json_text(list(values))

    @staticmethod
    def read_array(value: Any) -> list[Any]:
        return [] if value is None else orjson.loads(value)

    @staticmethod
    def columns(**columns: Sequence[Any]) -> dict[str, Any]:
        return {"rows": json_text([list(row) for row in zip(*columns.values(), strict=True)])}

    @staticmethod
    def is_unique_violation(exc: BaseException, column: str | None = None) -> bool:
        """SQLite names the columns: ``UNIQUE constraint failed: api_token.name``."""
        if not isinstance(exc, sqlite3.IntegrityError) or "UNIQUE" not in str(exc):
            return False
        return column is None or str(exc).endswith(f": {column}")

    @staticmethod
    def digest(text: str) -> str:
        """The text itself: SQLite's indexes hold it."""
        return text

    @staticmethod
    def records(values: Sequence[Any]) -> str:
        rows = [[getattr(value, name) for name in _field_names(type(value))]  # type: ignore[arg-type]  # classes are hashable
                for value in values]
        return orjson.dumps(rows, default=_json_record_value, option=orjson.OPT_PASSTHROUGH_DATETIME).decode()

    @staticmethod
    def execute_records(conn: sqlite3.Connection, sql: str, records: Sequence[Any],
                        params: Mapping[str, Any] | None = None) -> int:
        return conn.executemany(sql, [record_params(record, params or {}) for record in records]).rowcount


def statements(script: str) -> list[str]:
    """Split a schema script into statements (our scripts have no ';' inside literals); a trigger's
    body (``BEGIN … END``) stays whole, as ``sqlite3.complete_statement`` tells."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    found: list[str] = []
    pending = ""
    for part in "\n".join(lines).split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                found.append(pending.strip().rstrip(";").strip())
            pending = ""
    if pending.strip(" \n;"):
        found.append(pending.strip().rstrip(";").strip())
    return found
