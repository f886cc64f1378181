"""What a database dialect supplies to the store's flows, and nothing more.

Each role of the store (tasks, origins, schedules, tokens, …) writes its flow once
— load, apply the domain rule, write back, in batches — against this protocol. A
dialect (``store/sqlite/dialect.py``, ``store/postgresql/dialect.py``) supplies:

- its **SQL**: the role's named queries in that dialect (``queries(role)``), the
  same names in both dialects;
- its **transaction hook**: ``write()`` for a write transaction (rolled back with
  ``rollback``: a dry run), ``read()`` for a read outside one;
- its **value conversions**: how a time, a duration, a JSON document, a list or a
  batch of parallel columns travels as a parameter, and how each is read back.

Rows come back as mappings by column name (``row["name"]``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar, overload

from .migrations import Migration
from .queries import Queries

#: rows per statement for batched writes and reads by key
CHUNK = 10_000

#: the folder holding each role's package (``store/<role>/sqlite.sql`` and ``postgresql.sql``, or
#: ``sqlite_<subject>.sql`` and ``postgresql_<subject>.sql``)
STORE_DIR = Path(__file__).parent


class Row(Protocol):
    """A row read by column name, ``row["name"]`` (an ``sqlite3.Row``; a dict on PostgreSQL)."""

    def __getitem__(self, column: str, /) -> Any: ...


class Connection(Protocol):
    """The part of a DB-API connection the flows use inside a transaction."""

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...


#: the dialect's own connection type (``sqlite3.Connection``, ``psycopg.Connection``), which its
#: methods take; the flows see only the part that :class:`Connection` describes
ConnT = TypeVar("ConnT", bound=Connection)


class Dialect(Protocol[ConnT]):
    """A database as the flows see it (see the module docstring)."""

    #: "sqlite" or "postgresql"
    name: str
    #: the database as messages name it (a file path, or "the database": never a password)
    where: str
    #: the dialect's migrations, in version order (``store/<dialect>/migrations/``)
    migrations: list[Migration]

    # -- SQL -----------------------------------------------------------------
    def queries(self, role: str) -> Queries:
        """The named queries of ``role`` (a package of ``store/``) in this dialect."""
        ...

    def schema_script(self) -> str:
        """The canonical schema a fresh database gets (``store/<dialect>/schema_*.sql``, in the order of
        :data:`~ostinato.store.migrations.SCHEMA_FILES`)."""
        ...

    def run_script(self, conn: ConnT, script: str) -> None:
        """Run a schema script or migration (several statements) inside the transaction ``conn``."""
        ...

    # -- transactions --------------------------------------------------------
    def write(self, *, batch: bool = False, rollback: bool = False,
              horizon: datetime | None = None) -> AbstractContextManager[ConnT]:
        """A write transaction, committed on success; with ``rollback`` always rolled back (a dry
        run). ``batch``: a transaction of batch joins (on PostgreSQL, joins planned as index-driven
        nested loops; nothing on SQLite). ``horizon``: no metrics pass after this transaction counts
        activity up to then (the writer's ``MetricClock.since``): a database that gathers metric
        changes may leave such activity out (PostgreSQL does; SQLite keeps all until the pass).
        Concurrent writers of one row wait for each other."""
        ...

    def read(self, sql: str, params: Mapping[str, Any] | None = None) -> Sequence[Row]:
        """The rows of one query, outside any transaction."""
        ...

    def pipeline(self, conn: ConnT) -> AbstractContextManager[Any]:
        """Inside, the statements of ``conn``'s transaction are sent without waiting for each to finish
        (PostgreSQL's pipeline mode), so that the client prepares the next while the server runs them;
        their rows are read, and an error raised, at the latest when the block ends (the transaction
        then fails whole). SQLite runs each at once."""
        ...

    def lock(self, conn: ConnT, name: str) -> None:
        """Serialise, until the transaction ends, every transaction that takes the lock ``name``
        (a PostgreSQL advisory lock; SQLite's write transaction already holds the only lock)."""
        ...

    def notify(self, conn: ConnT, channel: str) -> None:
        """Tell listeners of ``channel`` when the transaction commits (PostgreSQL's NOTIFY;
        nothing on SQLite, whose processes poll)."""
        ...

    def listen(self, channel: str, wake: Callable[[], None], stop: threading.Event) -> bool:
        """Call ``wake`` at every notification of ``channel`` until ``stop`` (blocking); False at
        once where the database has no notifications."""
        ...

    def close(self) -> None: ...

    def tuples(self, conn: ConnT, sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of one statement in the transaction ``conn``, each a tuple read by position (the
        order of its SELECT or RETURNING list): for the hot paths, no mapping made per row."""
        ...

    def send(self, conn: ConnT, sql: str, params: Mapping[str, Any]) -> Callable[[], list[tuple[Any, ...]]]:
        """Run one statement in the transaction ``conn`` and answer how to read its rows (as ``tuples``) later:
        inside ``pipeline`` PostgreSQL sends it and goes on (the rows read at the latest when the block ends);
        SQLite runs it to the end at once, its rows kept for the reading."""
        ...

    def execute_many(self, conn: ConnT, sql: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Run ``sql`` once for each mapping of parameters of ``rows``, in order, in ``conn``'s
        transaction (DB-API ``executemany``: one statement, pipelined on PostgreSQL). For a batch whose
        rows must apply one after the other (one key twice); a batch of distinct keys is one
        statement over ``columns`` or a ``json`` array instead."""
        ...

    # -- values in and out ---------------------------------------------------
    def time(self, value: datetime | None) -> Any:
        """A timezone-aware time as a parameter (ValidationError naming ``time`` if naive)."""
        ...

    # a NULL reads as None, any other value as a time (a duration): the overloads say so
    @overload
    def read_time(self, value: None) -> None: ...
    @overload
    def read_time(self, value: Any) -> datetime: ...
    def read_time(self, value: Any) -> datetime | None: ...

    def interval(self, value: timedelta | None) -> Any: ...

    @overload
    def read_interval(self, value: None) -> None: ...
    @overload
    def read_interval(self, value: Any) -> timedelta: ...
    def read_interval(self, value: Any) -> timedelta | None: ...

    def json(self, value: Any) -> Any:
        """A JSON document (dict, list, dataclasses, …) as a parameter. Bytes in it are written in
        hex (read back with ``decode(…, 'hex')`` on PostgreSQL, ``unhex(…)`` on SQLite), times as
        the dialect compares them (on SQLite as ``time`` writes them)."""
        ...

    def read_json(self, value: Any) -> Any: ...

    def array(self, values: Iterable[Any]) -> Any:
        """A list of scalars as one parameter (``json_each`` on SQLite, ``ANY``/``unnest`` on PostgreSQL)."""
        ...

    def read_array(self, value: Any) -> list[Any]: ...

    def columns(self, **columns: Sequence[Any]) -> dict[str, Any]:
        """Parallel columns of a batch as parameters: on PostgreSQL one array per column (read with
        ``unnest``, under the column's name); on SQLite one JSON array of rows under ``rows`` (read
        with ``json_each(:rows)``, a row's values by position in the order given). Times and
        durations must already be converted (``time``, ``interval``)."""
        ...

    def is_unique_violation(self, exc: BaseException, column: str | None = None) -> bool:
        """Whether ``exc`` is a unique-constraint violation (with ``column``, ``"table.column"``, of
        that column's own UNIQUE constraint)."""
        ...

    def digest(self, text: str) -> Any:
        """What an index keyed by a long text holds for ``text`` (``task.arguments_digest``): on
        PostgreSQL its md5 (bytes; the text itself is compared on a hit); SQLite indexes the text
        itself, so there the text is its own digest."""
        ...

    def records(self, values: Sequence[Any]) -> Any:
        """A batch of records (dataclasses) as one JSON parameter: on PostgreSQL objects by field name
        (read with ``json_to_recordset``), on SQLite arrays of the fields by position in the record's
        order (read with ``json_each``, ``value ->> 0``, as ``columns``); times inside as ``time``
        writes them, bytes as hex (SQLite reads them through ``execute_records``: it has no ``unhex``
        before 3.41)."""
        ...

    def execute_records(self, conn: ConnT, sql: str, records: Sequence[Any],
                        params: Mapping[str, Any] | None = None) -> int:
        """Run ``sql`` over a batch of records (dataclasses), ``params`` the same for each; the rows
        changed. On PostgreSQL one statement, the batch one JSON parameter ``rows`` (``records``,
        bytes read with ``decode(…, 'hex')``), parsed in C where a column per field costs more to
        build than to apply. On SQLite one run per record (``executemany``), its fields as named
        parameters (times as ``time`` writes them, enums by value, dicts, lists and tuples as JSON
        text), where reading a wide record out of JSON costs more: SQLite parses the record again
        for each field it reads."""
        ...


def chunks(values: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    """``values`` in slices of at most ``size``."""
    for start in range(0, len(values), size):
        yield values[start:start + size]
