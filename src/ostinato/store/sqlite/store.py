"""SQLite implementation of the store: one connection, one writer at a time.

Writes run in ``BEGIN IMMEDIATE`` transactions (SQLite's single-writer lock is
the row lease here); arrays travel as JSON text read by ``json_each``. The
connection is shared by the threads of one process under a lock; several
processes on one file are serialised by SQLite itself (WAL, busy timeout).
"""

from __future__ import annotations

import sqlite3

import orjson
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ...domain.errors import ConflictError, ValidationError
from ...domain.tasks import (
    POLICY_OF,
    PRIORITY_OF,
    PRIORITY_ORDER,
    RUN_STATUS_OF,
    STATUS_OF,
    NewTask,
    RunEvent,
    ScheduledRun,
    Task,
    TaskArguments,
    TaskPolicy,
    TaskRun,
    TaskStatus,
    TaskType,
    lost_run_events,
    plan_run_events,
)
from ..common import DedupKey, in_input_order, prepare_task_batch, task_activity
from ..interface import ArchivedTask, SchemaState, TaskActivity
from ..migrations import latest_version, load_migrations
from ..queries import Queries
from .codec import chunks as _chunks, from_db_interval, from_db_time, json_array as _json, to_db_interval, to_db_time
from .dialect import SQLiteDialect
from ..sql_store import SQLStore
from .compat import SQLiteCompat
from .imports import SQLiteImports
from .schedules import SQLiteSchedules

HERE = Path(__file__).parent
QUERIES = Queries(HERE / "queries.sql")
MIGRATIONS = load_migrations(HERE / "migrations")
SCHEMA_VERSION_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_version ("
    "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT"
)


def _row_to_task_type(row: sqlite3.Row) -> TaskType:
    return TaskType(
        type=row["type"],
        description=row["description"],
        backend_name=row["backend_name"],
        default_interval=from_db_interval(row["default_interval"]),
        min_interval=from_db_interval(row["min_interval"]),
        max_interval=from_db_interval(row["max_interval"]),
        backoff_factor=row["backoff_factor"],
        max_queue_length=row["max_queue_length"],
        num_retries=row["num_retries"],
        retry_delay=from_db_interval(row["retry_delay"]),
    )


def _row_to_task(row: sqlite3.Row) -> Task:
    arguments = orjson.loads(row["arguments"])
    return Task(
        id=row["id"],
        type=row["type"],
        arguments=TaskArguments(tuple(arguments["args"]), arguments["kwargs"]),
        next_run=datetime.fromisoformat(row["next_run"]),
        current_interval=from_db_interval(row["current_interval"]),
        policy=POLICY_OF[row["policy"]],
        status=STATUS_OF[row["status"]],
        retries_left=row["retries_left"],
        priority=PRIORITY_OF[row["priority"]],
    )


def _stored_key(row: sqlite3.Row, one_shot_by_next_run: bool) -> DedupKey:
    """The deduplication key of a stored task: its arguments are already canonical JSON."""
    apart = one_shot_by_next_run and row["policy"] == TaskPolicy.ONESHOT.value
    return (row["type"], row["arguments"], row["policy"], row["priority"], from_db_time(row["next_run"]) if apart else None)


def _row_to_run(row: Mapping[str, Any], prefix: str = "") -> TaskRun:
    return TaskRun(
        id=row[f"{prefix}id"],
        task=row[f"{prefix}task"],
        backend_id=row["backend_id"],
        scheduled=from_db_time(row["scheduled"]),
        started=from_db_time(row["started"]),
        ended=from_db_time(row["ended"]),
        metadata=orjson.loads(row["metadata"]),
        status=RUN_STATUS_OF[row[f"{prefix}status"]],
    )


class SQLiteStore(SQLiteSchedules, SQLiteCompat, SQLiteImports, SQLStore):

    def __init__(self, path: str | Path, *, timeout: float = 30.0, create: bool = True):
        """Open the database file at ``path``; with ``create`` (the default) a missing file and its
        directories are created, without it a missing file is a :class:`StoreUnavailable` and nothing
        is written to the file system (a command that only reads must not leave an empty file behind)."""
        self.path = str(path)
        super().__init__(SQLiteDialect(self.path, timeout=timeout, create=create))
        self._conn = self.db.conn
        self._lock = self.db.lock_

    @contextmanager
    def _write(self, *, rollback: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction, committed on success (rolled back always with ``rollback``: a dry run)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("ROLLBACK" if rollback else "COMMIT")

    def _read(self, sql: str, params: Mapping[str, Any] | Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # -- schema -----------------------------------------------------------
    def schema_state(self) -> SchemaState:
        with self._lock:
            exists = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'").fetchone()
            current = self._conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] if exists else None
        return SchemaState(current, latest_version(MIGRATIONS))

    def init_schema(self) -> SchemaState:
        with self._write() as conn:
            tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
            if tables:
                raise ConflictError(f"{self.path} is not empty: use `ostinato db upgrade` on an existing database")
            conn.execute(SCHEMA_VERSION_DDL)
            for statement in _statements((HERE / "schema.sql").read_text(encoding="utf-8")):
                conn.execute(statement)
            now = to_db_time(datetime.now(timezone.utc))
            conn.executemany(
                "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                [(m.version, m.description, now) for m in MIGRATIONS],
            )
        return self.schema_state()

    def upgrade_schema(self) -> list[int]:
        applied = []
        with self._write() as conn:
            conn.execute(SCHEMA_VERSION_DDL)
            current = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]
            for migration in MIGRATIONS:
                if migration.version <= current:
                    continue
                for statement in _statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.description, to_db_time(datetime.now(timezone.utc))),
                )
                applied.append(migration.version)
        return applied

    # -- task types -------------------------------------------------------
    def create_task_type(self, task_type: TaskType) -> TaskType:
        task_type.validated()
        params = {
            "type": task_type.type,
            "description": task_type.description,
            "backend_name": task_type.backend_name,
            "default_interval": to_db_interval(task_type.default_interval),
            "min_interval": to_db_interval(task_type.min_interval),
            "max_interval": to_db_interval(task_type.max_interval),
            "backoff_factor": task_type.backoff_factor,
            "max_queue_length": task_type.max_queue_length,
            "num_retries": task_type.num_retries,
            "retry_delay": to_db_interval(task_type.retry_delay),
        }
        try:
            with self._write() as conn:
                conn.execute(QUERIES.insert_task_type, params)
        except sqlite3.IntegrityError:
            raise ConflictError(f"task type {task_type.type!r} already exists") from None
        return task_type

    def get_task_type(self, name: str) -> TaskType | None:
        rows = self._read(QUERIES.get_task_type, {"type": name})
        return _row_to_task_type(rows[0]) if rows else None

    def list_task_types(self) -> list[TaskType]:
        return [_row_to_task_type(r) for r in self._read(QUERIES.list_task_types)]

    def _task_types_in(self, conn: sqlite3.Connection, names: Iterable[str]) -> dict[str, TaskType]:
        rows = conn.execute(QUERIES.task_types_in, {"types": _json(names)}).fetchall()
        return {r["type"]: _row_to_task_type(r) for r in rows}

    # -- tasks ------------------------------------------------------------
    def create_tasks(self, tasks: Sequence[NewTask], *, one_shot_by_next_run: bool = False) -> list[Task]:
        if not tasks:
            return []
        apart = one_shot_by_next_run
        with self._write() as conn:
            keys, unique = prepare_task_batch(tasks, lambda names: self._task_types_in(conn, names),
                                              one_shot_by_next_run=apart)
            stored: dict[DedupKey, Task] = {}
            for chunk in _chunks(list(unique.items())):
                probes = [[*k[:4], to_db_time(k[4])] for k, _ in chunk]
                existing = conn.execute(QUERIES.find_pending_duplicates, {"keys": _json(probes)})
                stored.update((_stored_key(r, apart), _row_to_task(r)) for r in existing)
                rows = [
                    [t.type, key[1], to_db_time(t.next_run), to_db_interval(t.current_interval),
                     t.policy.value, t.retries_left, key[3]]
                    for key, t in chunk if key not in stored
                ]
                if rows:
                    inserted = conn.execute(QUERIES.insert_tasks, {"rows": _json(rows)})
                    stored.update((_stored_key(r, apart), _row_to_task(r)) for r in inserted)
        return in_input_order(keys, stored)

    def get_tasks(self, ids: Sequence[int]) -> list[Task]:
        return [_row_to_task(r) for chunk in _chunks(list(ids)) for r in self._read(QUERIES.tasks_in, {"ids": _json(chunk)})]

    def search_tasks(self, *, task_type=None, status=None, policy=None, priority=None, before=None, after_id=0, limit=100) -> list[Task]:
        params = {
            "type": task_type,
            "statuses": _json(s.value for s in status) if status else None,
            "policy": policy.value if policy else None,
            "priorities": _json(p.value if p else "none" for p in priority) if priority else None,
            "before": to_db_time(before),
            "after_id": after_id,
            "limit": limit,
        }
        return [_row_to_task(r) for r in self._read(QUERIES.search_tasks, params)]

    def peek_ready_tasks(self, task_type: str, now: datetime, limit: int, *, priority: bool = False) -> list[Task]:
        found: list[Task] = []
        with self._lock:
            if not priority:
                rows = self._conn.execute(QUERIES.peek_ready_tasks, {"type": task_type, "now": to_db_time(now), "limit": limit})
                return [_row_to_task(r) for r in rows]
            for level in PRIORITY_ORDER:
                if len(found) >= limit:
                    break
                params = {"type": task_type, "now": to_db_time(now), "limit": limit - len(found), "priority": level.value}
                found.extend(_row_to_task(r) for r in self._conn.execute(QUERIES.peek_ready_priority_tasks, params))
        return found

    def grab_ready_tasks(self, task_type: str, now: datetime, limit: int, *, priority: bool = False, backend_id: str | None = None) -> list[ScheduledRun]:
        if limit <= 0:
            return []
        grabbed: list[Task] = []
        with self._write() as conn:
            levels = PRIORITY_ORDER if priority else (None,)
            for level in levels:
                room = limit - len(grabbed)
                if room <= 0:
                    break
                params = {"type": task_type, "now": to_db_time(now), "limit": room}
                if level is None:
                    rows = conn.execute(QUERIES.grab_ready_tasks, params).fetchall()
                else:
                    rows = conn.execute(QUERIES.grab_ready_priority_tasks, {**params, "priority": level.value}).fetchall()
                grabbed.extend(sorted((_row_to_task(r) for r in rows), key=lambda t: (t.next_run, t.id)))
            if not grabbed:
                return []
            runs = conn.execute(
                QUERIES.insert_scheduled_runs,
                {"ids": _json(t.id for t in grabbed), "now": to_db_time(now), "backend_id": backend_id},
            ).fetchall()
        run_by_task = {r["task"]: _row_to_run(r) for r in runs}
        return [ScheduledRun(t, run_by_task[t.id]) for t in grabbed]

    def set_task_status(self, ids: Sequence[int], status: TaskStatus, *, next_run: datetime | None = None) -> int:
        changed = 0
        with self._write() as conn:
            for chunk in _chunks(list(ids)):
                if status is TaskStatus.DISABLED:
                    changed += conn.execute(QUERIES.disable_tasks, {"ids": _json(chunk)}).rowcount
                elif status is TaskStatus.NEXT_RUN_NOT_SCHEDULED:
                    changed += conn.execute(QUERIES.respawn_tasks, {"ids": _json(chunk), "next_run": to_db_time(next_run)}).rowcount
                else:
                    raise ValidationError("status", "disabled or next_run_not_scheduled", status.value)
        return changed

    # -- task runs --------------------------------------------------------
    def record_run_events(self, events: Sequence[RunEvent]) -> int:
        if not events:
            return 0
        finished = 0
        with self._write() as conn:
            for chunk in _chunks(list(events)):
                ids = sorted({e.run_id for e in chunk})
                current = {}
                for row in conn.execute(QUERIES.runs_with_tasks, {"ids": _json(ids)}):
                    current[row["run_id"]] = (_row_to_run(row, prefix="run_"), _row_to_task(row))
                types = self._task_types_in(conn, {task.type for _, task in current.values()})
                plan = plan_run_events(current, types, chunk)
                conn.executemany(QUERIES.update_run, [
                    {"id": r.id, "status": r.status.value, "backend_id": r.backend_id, "started": to_db_time(r.started),
                     "ended": to_db_time(r.ended), "metadata": orjson.dumps(r.metadata, option=orjson.OPT_SORT_KEYS).decode()}
                    for r in plan.runs
                ])
                conn.executemany(QUERIES.update_task_after_run, [
                    {"id": task_id, "status": c.status.value, "next_run": to_db_time(c.next_run),
                     "current_interval": to_db_interval(c.current_interval), "retries_left": c.retries_left}
                    for task_id, c in plan.tasks
                ])
                finished += plan.finished
        return finished

    def mark_lost_runs(self, now: datetime, timeout: timedelta, *, backend_ids: Sequence[str] | None = None) -> list[int]:
        if backend_ids is not None:
            rows = self._read(QUERIES.in_flight_runs_of, {"backend_ids": _json(backend_ids)})
        else:
            rows = self._read(QUERIES.stale_in_flight_runs, {"cutoff": to_db_time(now - timeout), "limit": 100_000})
        ids = [r["id"] for r in rows]
        self.record_run_events(lost_run_events(ids, now))
        return ids

    def in_flight_backend_ids(self, prefix: str) -> list[str]:
        return [r[0] for r in self._read(QUERIES.in_flight_backend_ids, {"prefix": prefix})]

    def list_task_runs(self, *, task_id=None, status=None, after_id=0, limit=100) -> list[TaskRun]:
        params = {"task": task_id, "statuses": _json(s.value for s in status) if status else None, "after_id": after_id, "limit": limit}
        return [_row_to_run(r) for r in self._read(QUERIES.search_task_runs, params)]

    def count_tasks(self) -> dict[tuple[str, str], int]:
        return {(r["type"], r["status"]): r["n"] for r in self._read(QUERIES.count_tasks)}

    def task_activity(self, now: datetime, *, count_cap: int = 10_000, runs_window: int = 10_000,
                      failures_limit: int = 20) -> TaskActivity:
        return task_activity(self._read, QUERIES, self.list_task_types(), to_db_time(now), _row_to_run, count_cap=count_cap,
                             runs_window=runs_window, failures_limit=failures_limit)

    # -- archival ---------------------------------------------------------
    def archivable_tasks(self, before: datetime, *, after_id: int = 0, limit: int = 1000) -> list[ArchivedTask]:
        with self._lock:
            tasks = [_row_to_task(r) for r in self._conn.execute(QUERIES.archivable_tasks, {"before": to_db_time(before), "after_id": after_id, "limit": limit})]
            runs: dict[int, list[TaskRun]] = {t.id: [] for t in tasks}
            if tasks:
                for row in self._conn.execute(QUERIES.runs_of_tasks, {"ids": _json(runs)}):
                    runs[row["task"]].append(_row_to_run(row))
        return [ArchivedTask(t, tuple(runs[t.id])) for t in tasks]

    def delete_tasks(self, ids: Iterable[int]) -> int:
        deleted = 0
        with self._write() as conn:
            for chunk in _chunks(list(ids)):
                conn.execute(QUERIES.delete_runs_of_tasks, {"ids": _json(chunk)})
                deleted += conn.execute(QUERIES.delete_tasks, {"ids": _json(chunk)}).rowcount
        return deleted


def _statements(script: str) -> list[str]:
    """Split a schema script into statements (our scripts have no ';' inside literals)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
