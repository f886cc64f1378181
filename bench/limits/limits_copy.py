"""The bare write limit of each kind of row, for bench/limits/limits.py: the same rows, on the same server, in
the same run, into a table with only its primary key.

On PostgreSQL a second limit, the **schema's**: the rows the store writes for them, ``COPY``ed into
clones of the store's own tables with all their indexes, checks and storage parameters (``LIKE …
INCLUDING ALL``, then the table's ``reloptions``; no triggers, so not the metric cells). A visit status writes no new row but rewrites its origin's visit
stats: its schema's limit is the new stats rows (computed beforehand, untimed, by the domain's rule)
``COPY``ed into a staging table and applied by one ``UPDATE … FROM`` to the clone of the visit stats,
which the listings filled with every origin's row. Between the two limits lies what the schema's indexes cost;
between the schema's limit and the store lies what the store's flow costs (reading before writing,
the duplicate checks, the merge of listings, the metric cells).

On PostgreSQL each batch is one binary ``COPY`` and a commit (the fastest way a client writes rows);
on SQLite, which has no ``COPY``, one ``executemany`` of a plain ``INSERT`` in one transaction.
Each writer times only the write and its commit: building the rows from the domain records counts,
as it does for the store's calls, which get the same records.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ostinato.domain.origins import ListedOrigin
from ostinato.domain.politeness import host_of
from ostinato.domain.tasks import NewTask, ScheduledRun
from ostinato.domain.visits import VisitStats, VisitStatus
from ostinato.store.postgresql.dialect import PostgresDialect

#: kind of row -> (table, its columns with PostgreSQL's types, primary key)
TABLES: dict[str, tuple[str, tuple[tuple[str, str], ...], str]] = {
    "listed_origin": ("limit_listed_origin", (
        ("lister_id", "int8"), ("url", "text"), ("visit_type", "text"), ("extra_loader_arguments", "jsonb"),
        ("enabled", "bool"), ("first_seen", "timestamptz"), ("last_seen", "timestamptz"),
        ("last_update", "timestamptz"), ("is_fork", "bool"), ("forked_from_url", "text")),
        "lister_id, url, visit_type"),
    "visit_status": ("limit_visit_status", (
        ("origin", "text"), ("visit_type", "text"), ("visit", "int8"), ("status", "text"),
        ("date", "timestamptz"), ("snapshot", "bytea")), "origin, visit_type, visit"),
    "task": ("limit_task", (
        ("id", "int8"), ("type", "text"), ("arguments", "jsonb"), ("next_run", "timestamptz"),
        ("current_interval", "interval"), ("status", "text"), ("policy", "text"), ("retries_left", "int8"),
        ("priority", "text")), "id"),
    "task_run": ("limit_task_run", (
        ("id", "int8"), ("task", "int8"), ("backend_id", "text"), ("scheduled", "timestamptz"),
        ("status", "text")), "id"),
}

#: kind of row -> the store's tables its rows go to, with the columns the store sets for a new row
SHAPED: dict[str, tuple[tuple[str, tuple[tuple[str, str], ...]], ...]] = {
    "listed_origin": (
        ("listed_origin", (*TABLES["listed_origin"][1], ("host", "text"))),
        ("origin_visit_stats", (
            ("url", "text"), ("visit_type", "text"), ("enabled", "bool"), ("first_seen", "timestamptz"),
            ("last_update", "timestamptz"), ("is_fork", "bool"), ("lister_id", "int8"),
            ("extra_loader_arguments", "jsonb"), ("listing_count", "int4"), ("host", "text"))),
    ),
    "task": (("task", (
        ("id", "int8"), ("type", "text"), ("arguments", "jsonb"), ("arguments_digest", "bytea"),
        ("next_run", "timestamptz"), ("current_interval", "interval"), ("status", "text"), ("policy", "text"),
        ("retries_left", "int8"), ("priority", "text"))),),
}

#: kind of row -> the store's table whose rows it rewrites, and the columns it sets (after the key: url, visit type)
SHAPED_UPDATES: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "visit_status": ("origin_visit_stats", (
        ("url", "text"), ("visit_type", "text"), ("last_visit", "timestamptz"), ("last_visit_status", "text"),
        ("last_successful", "timestamptz"), ("last_snapshot", "bytea"), ("last_eventful", "timestamptz"),
        ("last_uneventful", "timestamptz"), ("failure_count", "int4"), ("last_scheduled", "timestamptz"),
        ("next_visit_target", "timestamptz"), ("last_status_date", "timestamptz"), ("successful_visits", "int4"),
        ("cooldown_until", "timestamptz"), ("rate_changes", "float8"), ("rate_days", "float8"),
        ("next_optimal_visit", "timestamptz"), ("rate_evidence", "float4[]"))),
}

_SQLITE_TYPES = {"int8": "INTEGER", "text": "TEXT", "jsonb": "TEXT", "bool": "INTEGER", "timestamptz": "TEXT",
                 "bytea": "BLOB", "interval": "REAL"}


def listed_rows(lister_id: int, now: Any, origins: Sequence[ListedOrigin]) -> Iterator[tuple]:
    for o in origins:
        yield (lister_id, o.url, o.visit_type, o.extra_loader_arguments, o.enabled, now, now, o.last_update,
               o.is_fork, o.forked_from_url)


def shaped_listed_rows(lister_id: int, now: Any, origins: Sequence[ListedOrigin]) -> tuple[list[tuple], ...]:
    """The rows of a new origin's listing and of its visit stats, as the store writes them."""
    listed, stats = [], []
    for o in origins:
        host = host_of(o.url)  # the store's rule (no lister-given key in these listings)
        listed.append((lister_id, o.url, o.visit_type, o.extra_loader_arguments, o.enabled, now, now, o.last_update,
                       o.is_fork, o.forked_from_url, host))
        stats.append((o.url, o.visit_type, o.enabled, now, o.last_update, bool(o.is_fork), lister_id,
                      o.extra_loader_arguments, 1, host))
    return listed, stats


def shaped_task_rows(ids: TaskIds, tasks: Sequence[NewTask], default_interval: Any) -> tuple[list[tuple]]:
    """The task rows with the digest of their arguments, as the store writes them (its canonical JSON and digest)."""
    return ([(*row[:3], PostgresDialect.digest(t.arguments.to_json()), *row[3:])
             for row, t in zip(task_rows(ids, tasks, default_interval), tasks, strict=True)],)


def shaped_stats_rows(stats: Sequence[VisitStats]) -> list[tuple]:
    """Visit stats as the store writes them after a status (the columns of :data:`SHAPED_UPDATES`)."""
    return [(s.url, s.visit_type, s.last_visit, None if s.last_visit_status is None else s.last_visit_status.value,
             s.last_successful, s.last_snapshot, s.last_eventful, s.last_uneventful, s.failure_count, s.last_scheduled,
             s.next_visit_target, s.last_status_date, s.successful_visits, s.cooldown_until, s.rate_changes,
             s.rate_days, s.next_optimal_visit, None if s.rate_evidence is None else list(s.rate_evidence))
            for s in stats]


def status_rows(statuses: Sequence[VisitStatus]) -> Iterator[tuple]:
    for s in statuses:
        yield (s.origin, s.type, s.visit, s.status.value, s.date, s.snapshot)


class TaskIds:
    """The ids a bare table gives its tasks (a sequence, as ``task.id`` is an identity)."""

    def __init__(self) -> None:
        self.next = 1

    def take(self, count: int) -> range:
        start, self.next = self.next, self.next + count
        return range(start, start + count)


def task_rows(ids: TaskIds, tasks: Sequence[NewTask], default_interval: Any) -> Iterator[tuple]:
    for task_id, t in zip(ids.take(len(tasks)), tasks, strict=True):
        yield (task_id, t.type, list(t.arguments.args), t.next_run, t.current_interval or default_interval,
               "next_run_not_scheduled", t.policy.value, t.retries_left or 0,
               t.priority.value if t.priority else None)


def run_rows(ids: TaskIds, grabbed: Sequence[ScheduledRun]) -> Iterator[tuple]:
    for run_id, g in zip(ids.take(len(grabbed)), grabbed, strict=True):
        yield (run_id, g.task.id, g.run.backend_id, g.run.scheduled, g.run.status.value)


def copy_rows(cur: psycopg.Cursor, table: str, columns: Sequence[tuple[str, str]], rows: Iterator[tuple]) -> None:
    """One binary ``COPY`` of the rows into the table's named columns (PostgreSQL's types given: no guessing)."""
    names = ", ".join(name for name, _ in columns)
    with cur.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([kind_ for _, kind_ in columns])
        jsonb = [i for i, (_, kind_) in enumerate(columns) if kind_ == "jsonb"]
        for row in rows:
            if jsonb:
                row = tuple(Jsonb(v) if i in jsonb else v for i, v in enumerate(row))
            copy.write_row(row)


def copy_shaped(cur: psycopg.Cursor, kind: str, table_name: Any, rows: Sequence[Sequence[tuple]]) -> None:
    """COPY each of the store's tables' rows for ``kind`` into the table ``table_name(store_table)`` names."""
    for (table, columns), table_rows in zip(SHAPED[kind], rows, strict=True):
        copy_rows(cur, table_name(table), columns, iter(table_rows))


def update_from_staged(cur: psycopg.Cursor, kind: str, staged: str, target: str, rows: Sequence[tuple]) -> None:
    """COPY the new rows of ``kind`` into the staging table and apply them to ``target`` by one ``UPDATE … FROM``."""
    _, columns = SHAPED_UPDATES[kind]
    sets = ", ".join(f"{name} = r.{name}" for name, _ in columns[2:])
    copy_rows(cur, staged, columns, iter(rows))
    cur.execute(f"UPDATE {target} AS s SET {sets} FROM {staged} AS r WHERE s.url = r.url AND s.visit_type = r.visit_type")


class PostgresLimit:
    """``COPY`` into the bare tables of one PostgreSQL database (its own connection), and into its clones of the
    store's tables (create it after the store's schema)."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn)
        self.conn.execute("SET jit = off")  # as the store's sessions: compiling a batch's plan costs more than it saves
        for table, columns, key in TABLES.values():
            cols = ", ".join(f"{name} {kind}" for name, kind in columns)
            self.conn.execute(f"CREATE TABLE {table} ({cols}, PRIMARY KEY ({key}))")
        for tables in SHAPED.values():
            for table, _ in tables:
                self.conn.execute(f"CREATE TABLE limit_shaped_{table} (LIKE {table} INCLUDING ALL)")
                # and its storage parameters (the room each page keeps for updates), which LIKE leaves out
                options = self.conn.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass",
                                            (table,)).fetchone()[0]
                if options:
                    self.conn.execute(f"ALTER TABLE limit_shaped_{table} SET ({', '.join(options)})")
        for table, columns in SHAPED_UPDATES.values():
            cols = ", ".join(f"{name} {kind}" for name, kind in columns)
            self.conn.execute(f"CREATE TEMPORARY TABLE limit_staged_{table} ({cols}) ON COMMIT DELETE ROWS")
        self.conn.commit()

    def write(self, kind: str, rows: Iterator[tuple]) -> float:
        """COPY the rows into the bare table and commit; seconds spent."""
        table, columns, _ = TABLES[kind]
        start = time.perf_counter()
        with self.conn.cursor() as cur:
            copy_rows(cur, table, columns, rows)
        self.conn.commit()
        return time.perf_counter() - start

    def write_shaped(self, kind: str, rows: Sequence[Sequence[tuple]]) -> float:
        """COPY each table's rows into the clone of the store's table, all in one commit; seconds spent."""
        start = time.perf_counter()
        with self.conn.cursor() as cur:
            copy_shaped(cur, kind, lambda table: f"limit_shaped_{table}", rows)
        self.conn.commit()
        return time.perf_counter() - start

    def write_updated(self, kind: str, rows: Sequence[tuple]) -> float:
        """COPY the new rows into a staging table, apply them to the clone of the store's table with one
        ``UPDATE … FROM`` and commit; seconds spent."""
        table, _ = SHAPED_UPDATES[kind]
        start = time.perf_counter()
        with self.conn.cursor() as cur:
            update_from_staged(cur, kind, f"limit_staged_{table}", f"limit_shaped_{table}", rows)
        self.conn.commit()
        return time.perf_counter() - start

    def close(self) -> None:
        self.conn.close()


class SQLiteLimit:
    """A plain ``INSERT`` by ``executemany`` into the bare tables of the store's SQLite file (no schema's limit)."""

    write_shaped = None

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA busy_timeout=30000")
        for table, columns, key in TABLES.values():
            cols = ", ".join(f"{name} {_SQLITE_TYPES[kind]}" for name, kind in columns)
            self.conn.execute(f"CREATE TABLE {table} ({cols}, PRIMARY KEY ({key}))")

    def write(self, kind: str, rows: Iterator[tuple]) -> float:
        table, columns, _ = TABLES[kind]
        start = time.perf_counter()
        plain = [tuple(_sqlite_value(v) for v in row) for row in rows]
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", plain)
        self.conn.execute("COMMIT")
        return time.perf_counter() - start

    def close(self) -> None:
        self.conn.close()


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(timespec="microseconds")
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return value


@contextlib.contextmanager
def limit_writer(store_name: str, dsn: str | None, db_path: Path) -> Iterator[PostgresLimit | SQLiteLimit]:
    writer: PostgresLimit | SQLiteLimit = PostgresLimit(dsn) if store_name == "postgresql" else SQLiteLimit(db_path)  # type: ignore[arg-type]  # postgresql comes with its dsn
    try:
        yield writer
    finally:
        writer.close()


def relation_sizes(dsn: str) -> dict[str, Any]:
    """Each table of the database with its heap (and TOAST) size and each of its indexes' sizes, in bytes."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT c.relname, pg_table_size(c.oid), c.reltuples::bigint FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' "
            "ORDER BY 1").fetchall()
        indexes = conn.execute(
            "SELECT t.relname, i.relname, pg_relation_size(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
            "WHERE n.nspname = 'public' ORDER BY 1, 2").fetchall()
    sizes: dict[str, Any] = {name: {"heap_bytes": heap, "rows_estimate": rows, "indexes": {}} for name, heap, rows in tables}
    for table, index, size in indexes:
        sizes[table]["indexes"][index] = size
    return sizes

