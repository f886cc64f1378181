"""PostgreSQL as the store's flows see it (see ``store/dialect.py``): psycopg 3 with a connection pool.

Claims that may race take row leases (``FOR UPDATE SKIP LOCKED``); bulk writes pass whole
batches as array parameters read by ``unnest``; every session runs in UTC and receives
``now`` from the caller. Times, durations, JSON documents and arrays travel as psycopg
adapts them (``timestamptz``, ``interval``, ``jsonb`` text, arrays); bytes in a JSON
document are written in hex.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, overload

import orjson
import psycopg
from psycopg.rows import DictRow, dict_row, tuple_row
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool

from ...domain.errors import ValidationError
from ..dialect import STORE_DIR
from ..migrations import load_migrations, load_schema
from ..queries import Queries, role_query_files
from .connect import check_reachable, connect_options

#: set at the start of a batch transaction: a batch of N ids is N primary-key probes (nested
#: loops), never a scan, hash or merge join over the whole table, whatever the statistics say
#: (a fresh table has none and looks tiny)
INDEX_DRIVEN_BATCHES = "SET LOCAL enable_seqscan = off; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off"


#: a connection of the pool: its rows are dicts (the pool's row factory), but for ``tuples``
Connection = psycopg.Connection[DictRow]

HERE = Path(__file__).parent
MIGRATIONS = load_migrations(HERE / "migrations")


@cache
def role_queries(role: str) -> Queries:
    """The named queries of a role in PostgreSQL (``store/<role>/postgresql.sql``, or
    ``postgresql_<subject>.sql`` for a role that keeps one file per subject)."""
    return Queries(*role_query_files(STORE_DIR / role, "postgresql"))


def _hex(value: Any) -> str:
    """orjson's fallback for what it does not write: bytes (snapshots) in hex, a duration as PostgreSQL
    reads an interval (its days kept apart from its seconds, as psycopg writes one)."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, timedelta):
        return f"{value.days} days {value.seconds} seconds {value.microseconds} microseconds"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _too_large(exc: psycopg.errors.ProgramLimitExceeded) -> Exception:
    """A value too large for an index entry (rolled back, nothing written): only a URL can be, in the
    keys of the origin tables (``domain.limits.MAX_URL_BYTES``)."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    if "index row" not in message:
        return exc
    return ValidationError("url", "a URL an index entry can hold: about 2,600 bytes, more only if it compresses well",
                           message[:200])


def _configure(conn: Connection) -> None:
    set_json_loads(orjson.loads, conn)
    conn.execute("SET TIME ZONE 'UTC'")
    # short, index-driven statements: compiling them costs more than it saves
    conn.execute("SET jit = off")
    # the driver prepares a statement run a few times, and the server may then keep one generic plan for it,
    # blind to the values: a filter `= ANY(<array parameter>)` is then searched in full for each row (a constant
    # array is hashed), which took a batch of 1,000 runs scheduled from 20 ms to 40 ms, and `<parameter> IS NULL
    # OR …` filters stop folding away. Each execution is planned for its values, as the plan tests check them.
    conn.execute("SET plan_cache_mode = force_custom_plan")
    conn.commit()


class PostgresDialect:
    """One PostgreSQL database through a pool of connections."""

    name = "postgresql"
    migrations = MIGRATIONS
    where = "the database"

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0):
        self.dsn = dsn
        options = connect_options(dsn)
        check_reachable(dsn, options)  # before the pool, which would only retry until its timeout
        self.pool: ConnectionPool[Connection] = ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"row_factory": dict_row, **options},
            configure=_configure,
            open=True,
            name="ostinato",
        )

    # -- SQL -----------------------------------------------------------------
    def queries(self, role: str) -> Queries:
        return role_queries(role)

    def schema_script(self) -> str:
        return load_schema(HERE)

    def run_script(self, conn: Connection, script: str) -> None:
        conn.execute(script)

    # -- transactions --------------------------------------------------------
    @contextmanager
    def write(self, *, batch: bool = False, rollback: bool = False,
              horizon: datetime | None = None) -> Iterator[Connection]:
        settings = [INDEX_DRIVEN_BATCHES] if batch else []
        if horizon is not None:  # read by the metric triggers (migrations/0012, 0013), in one round trip with the rest
            settings.append(f"SET LOCAL ostinato.metrics_horizon = '{self.time(horizon).isoformat()}'")
        try:
            with self.pool.connection() as conn, conn.transaction(force_rollback=rollback):
                if settings:
                    conn.execute("; ".join(settings))
                yield conn
        except psycopg.errors.ProgramLimitExceeded as exc:
            raise _too_large(exc) from None

    def read(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            return conn.execute(sql, params).fetchall()

    @staticmethod
    def pipeline(conn: Connection) -> AbstractContextManager[Any]:
        return conn.pipeline()

    def lock(self, conn: Connection, name: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (name,))

    def notify(self, conn: Connection, channel: str) -> None:
        conn.execute(f"NOTIFY {channel}")

    def listen(self, channel: str, wake: Callable[[], None], stop: threading.Event) -> bool:
        """Runs in the caller's thread; a lost connection is retried (polling remains the fallback)."""
        while not stop.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True) as conn:
                    conn.execute(f"LISTEN {channel}")
                    while not stop.is_set():
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            wake()
            except psycopg.Error:
                stop.wait(5.0)
        return True

    def close(self) -> None:
        self.pool.close()

    @staticmethod
    def tuples(conn: Connection, sql: str, params: Mapping[str, Any]) -> list[tuple]:
        return conn.cursor(row_factory=tuple_row).execute(sql, params).fetchall()

    @staticmethod
    def send(conn: Connection, sql: str, params: Mapping[str, Any]) -> Callable[[], list[tuple]]:
        cursor = conn.cursor(row_factory=tuple_row)
        cursor.execute(sql, params, binary=True)
        return cursor.fetchall

    @staticmethod
    def execute_many(conn: Connection, sql: str, rows: Iterable[Mapping[str, Any]]) -> None:
        with conn.cursor() as cur:
            cur.executemany(sql, rows)

    # -- values in and out ---------------------------------------------------
    @overload
    @staticmethod
    def time(value: None) -> None: ...
    @overload
    @staticmethod
    def time(value: datetime) -> datetime: ...
    @staticmethod
    def time(value: datetime | None) -> datetime | None:
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            raise ValidationError("time", "a timezone-aware time", value.isoformat() if isinstance(value, datetime) else value)
        return value

    @overload
    @staticmethod
    def read_time(value: None) -> None: ...
    @overload
    @staticmethod
    def read_time(value: datetime) -> datetime: ...
    @staticmethod
    def read_time(value: Any) -> datetime | None:
        return value

    @staticmethod
    def interval(value: timedelta | None) -> timedelta | None:
        return value

    @overload
    @staticmethod
    def read_interval(value: None) -> None: ...
    @overload
    @staticmethod
    def read_interval(value: timedelta) -> timedelta: ...
    @staticmethod
    def read_interval(value: Any) -> timedelta | None:
        return value

    @staticmethod
    def json(value: Any) -> str:
        return orjson.dumps(value, default=_hex).decode()

    @staticmethod
    def read_json(value: Any) -> Any:
        return value

    @staticmethod
    def array(values: Iterable[Any]) -> list[Any]:
        return list(values)

    @staticmethod
    def read_array(value: Any) -> list[Any]:
        return [] if value is None else list(value)

    @staticmethod
    def columns(**columns: Sequence[Any]) -> dict[str, Any]:
        return {name: list(values) for name, values in columns.items()}

    @staticmethod
    def is_unique_violation(exc: BaseException, column: str | None = None) -> bool:
        """PostgreSQL names the constraint: a column's own UNIQUE constraint is ``<table>_<column>_key``."""
        if not isinstance(exc, psycopg.errors.UniqueViolation):
            return False
        return column is None or exc.diag.constraint_name == column.replace(".", "_") + "_key"

    @staticmethod
    def digest(text: str) -> bytes:
        """The md5 of the text's UTF-8 (not for security: an index key, the text compared on a hit)."""
        return hashlib.md5(text.encode(), usedforsecurity=False).digest()

    @staticmethod
    def records(values: Sequence[Any]) -> str:
        return orjson.dumps(values, default=_hex).decode()

    @classmethod
    def execute_records(cls, conn: Connection, sql: str, records: Sequence[Any],
                        params: Mapping[str, Any] | None = None) -> int:
        return conn.execute(sql, {**(params or {}), "rows": cls.records(records)}).rowcount
