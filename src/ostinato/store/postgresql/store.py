"""PostgreSQL implementation of the store: psycopg 3 with a connection pool.

Claims that may race take row leases (``FOR UPDATE SKIP LOCKED``); bulk writes
pass whole batches as array parameters read by ``unnest``; every session runs
in UTC and receives ``now`` from the caller.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import orjson
import psycopg
from psycopg.rows import tuple_row

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
    TaskRunStatus,
    TaskStatus,
    TaskType,
    lost_run_events,
    plan_run_events,
)
from ..common import DedupKey, in_input_order, prepare_task_batch, task_activity, task_key
from ..interface import ArchivedTask, SchemaState, TaskActivity
from ..migrations import latest_version, load_migrations
from ..queries import Queries
from .dialect import PostgresDialect
from ..sql_store import SQLStore
from .compat import PostgresCompat
from .imports import PostgresImports, arguments_digest
from ..dialect import chunks as _chunks
from .schedules import PostgresSchedules

HERE = Path(__file__).parent
QUERIES = Queries(HERE / "queries.sql")
MIGRATIONS = load_migrations(HERE / "migrations")
SCHEMA_VERSION_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_version ("
    "version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
)
_CHUNK = 10_000
NO_ARGUMENTS = TaskArguments()


def _row_to_task_type(row: Mapping[str, Any]) -> TaskType:
    return TaskType(
        type=row["type"],
        description=row["description"],
        backend_name=row["backend_name"],
        default_interval=row["default_interval"],
        min_interval=row["min_interval"],
        max_interval=row["max_interval"],
        backoff_factor=row["backoff_factor"],
        max_queue_length=row["max_queue_length"],
        num_retries=row["num_retries"],
        retry_delay=row["retry_delay"],
    )


def _row_to_task(row: Mapping[str, Any]) -> Task:
    arguments = row["arguments"]
    return Task(
        id=row["id"],
        type=row["type"],
        arguments=TaskArguments(tuple(arguments["args"]), arguments["kwargs"]),
        next_run=row["next_run"],
        current_interval=row["current_interval"],
        policy=POLICY_OF[row["policy"]],
        status=STATUS_OF[row["status"]],
        retries_left=row["retries_left"],
        priority=PRIORITY_OF[row["priority"]],
    )


def _grabbed_task(values: tuple) -> Task:
    """A task from the grab's RETURNING list, read by position: the runner's hottest path."""
    task_id, type_, arguments, next_run, interval, policy, status, retries_left, priority = values
    return Task(task_id, type_, TaskArguments(tuple(arguments["args"]), arguments["kwargs"]), next_run, interval,
                POLICY_OF[policy], STATUS_OF[status], retries_left, PRIORITY_OF[priority])


_digest = arguments_digest


def _new_task(task_id: int, task: NewTask) -> Task:
    """The stored form of a task just inserted (nothing to read back)."""
    return Task(task_id, task.type, task.arguments, task.next_run, task.current_interval, task.policy,
                TaskStatus.NEXT_RUN_NOT_SCHEDULED, task.retries_left or 0, task.priority)


def _row_to_task_state(row: Mapping[str, Any]) -> Task:
    """A task without its arguments, which the outcome rules never read."""
    return Task(row["id"], row["type"], NO_ARGUMENTS, row["next_run"], row["current_interval"], POLICY_OF[row["policy"]],
                STATUS_OF[row["status"]], row["retries_left"], PRIORITY_OF[row["priority"]])


def _row_to_run(row: Mapping[str, Any], prefix: str = "") -> TaskRun:
    return TaskRun(
        id=row[f"{prefix}id"],
        task=row[f"{prefix}task"],
        backend_id=row["backend_id"],
        scheduled=row["scheduled"],
        started=row["started"],
        ended=row["ended"],
        metadata=row["metadata"],
        status=RUN_STATUS_OF[row[f"{prefix}status"]],
    )


class PostgresStore(PostgresCompat, PostgresSchedules, PostgresImports, SQLStore):

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0):
        self.dsn = dsn
        super().__init__(PostgresDialect(dsn, min_size=min_size, max_size=max_size, timeout=timeout))
        self._pool = self.db.pool

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection]:
        """A connection in a transaction, committed on success."""
        with self._pool.connection() as conn:
            with conn.transaction():
                yield conn

    @contextmanager
    def _batch_tx(self) -> Iterator[psycopg.Connection]:
        """A transaction whose joins are index-driven nested loops (see ``index_driven_batches``)."""
        with self._tx() as conn:
            conn.execute(QUERIES.index_driven_batches)
            yield conn

    def _read(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._pool.connection() as conn:
            return conn.execute(sql, params).fetchall()

    # -- schema -----------------------------------------------------------
    def schema_state(self) -> SchemaState:
        with self._pool.connection() as conn:
            exists = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL AS e").fetchone()["e"]
            current = conn.execute("SELECT max(version) AS v FROM schema_version").fetchone()["v"] if exists else None
        return SchemaState(current, latest_version(MIGRATIONS))

    def init_schema(self) -> SchemaState:
        with self._tx() as conn:
            tables = conn.execute(
                "SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchone()["n"]
            if tables:
                raise ConflictError("the database is not empty: use `ostinato db upgrade` on an existing database")
            conn.execute(SCHEMA_VERSION_DDL)
            conn.execute((HERE / "schema.sql").read_text(encoding="utf-8"))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                    [(m.version, m.description) for m in MIGRATIONS],
                )
        return self.schema_state()

    def upgrade_schema(self) -> list[int]:
        applied = []
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('ostinato.migrations'))")
            conn.execute(SCHEMA_VERSION_DDL)
            current = conn.execute("SELECT coalesce(max(version), 0) AS v FROM schema_version").fetchone()["v"]
            for migration in MIGRATIONS:
                if migration.version <= current:
                    continue
                conn.execute(migration.sql)
                conn.execute(
                    "INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                    (migration.version, migration.description),
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
            "default_interval": task_type.default_interval,
            "min_interval": task_type.min_interval,
            "max_interval": task_type.max_interval,
            "backoff_factor": task_type.backoff_factor,
            "max_queue_length": task_type.max_queue_length,
            "num_retries": task_type.num_retries,
            "retry_delay": task_type.retry_delay,
        }
        try:
            with self._tx() as conn:
                conn.execute(QUERIES.insert_task_type, params)
        except psycopg.errors.UniqueViolation:
            raise ConflictError(f"task type {task_type.type!r} already exists") from None
        return task_type

    def get_task_type(self, name: str) -> TaskType | None:
        rows = self._read(QUERIES.get_task_type, {"type": name})
        return _row_to_task_type(rows[0]) if rows else None

    def list_task_types(self) -> list[TaskType]:
        return [_row_to_task_type(r) for r in self._read(QUERIES.list_task_types)]

    def _task_types_in(self, conn: psycopg.Connection, names: Iterable[str]) -> dict[str, TaskType]:
        rows = conn.execute(QUERIES.task_types_in, {"types": list(names)}).fetchall()
        return {r["type"]: _row_to_task_type(r) for r in rows}

    # -- tasks ------------------------------------------------------------
    def create_tasks(self, tasks: Sequence[NewTask], *, one_shot_by_next_run: bool = False) -> list[Task]:
        if not tasks:
            return []
        apart = one_shot_by_next_run
        with self._batch_tx() as conn:
            keys, unique = prepare_task_batch(tasks, lambda names: self._task_types_in(conn, names),
                                              one_shot_by_next_run=apart)
            conn.execute(QUERIES.lock_task_creation)
            stored: dict[DedupKey, Task] = {}
            for chunk in _chunks(list(unique.items())):
                digests = {key: _digest(key[1]) for key, _ in chunk}
                existing = conn.execute(QUERIES.find_pending_duplicates, {
                    "types": [k[0] for k, _ in chunk], "digests": list(digests.values()),
                    "arguments": [k[1] for k, _ in chunk], "policies": [k[2] for k, _ in chunk],
                    "priorities": [k[3] for k, _ in chunk], "next_runs": [k[4] for k, _ in chunk],
                })
                stored.update((task_key(t, one_shot_by_next_run=apart), t) for t in map(_row_to_task, existing))
                fresh = {(key[0], digests[key], *key[2:]): (key, t) for key, t in chunk if key not in stored}
                if not fresh:
                    continue
                inserted = conn.execute(QUERIES.insert_tasks, {
                    "types": [t.type for _, t in fresh.values()],
                    "arguments": [key[1] for key, _ in fresh.values()],
                    "digests": [digests[key] for key, _ in fresh.values()],
                    "next_runs": [t.next_run for _, t in fresh.values()],
                    "intervals": [t.current_interval for _, t in fresh.values()],
                    "policies": [key[2] for key, _ in fresh.values()],
                    "retries": [t.retries_left for _, t in fresh.values()],
                    "priorities": [key[3] for key, _ in fresh.values()],
                })
                for row in inserted:
                    kept_apart = row["next_run"] if apart and row["policy"] == TaskPolicy.ONESHOT.value else None
                    key, task = fresh[(row["type"], row["arguments_digest"], row["policy"], row["priority"], kept_apart)]
                    stored[key] = _new_task(row["id"], task)
        return in_input_order(keys, stored)

    def get_tasks(self, ids: Sequence[int]) -> list[Task]:
        return [_row_to_task(r) for chunk in _chunks(list(ids)) for r in self._read(QUERIES.tasks_in, {"ids": list(chunk)})]

    def search_tasks(self, *, task_type=None, status=None, policy=None, priority=None, before=None, after_id=0, limit=100) -> list[Task]:
        params = {
            "type": task_type,
            "statuses": [s.value for s in status] if status else None,
            "policy": policy.value if policy else None,
            "priorities": [p.value if p else "none" for p in priority] if priority else None,
            "before": before,
            "after_id": after_id,
            "limit": limit,
        }
        return [_row_to_task(r) for r in self._read(QUERIES.search_tasks, params)]

    def peek_ready_tasks(self, task_type: str, now: datetime, limit: int, *, priority: bool = False) -> list[Task]:
        if not priority:
            return [_row_to_task(r) for r in self._read(QUERIES.peek_ready_tasks, {"type": task_type, "now": now, "limit": limit})]
        found: list[Task] = []
        with self._pool.connection() as conn:
            for level in PRIORITY_ORDER:
                if len(found) >= limit:
                    break
                params = {"type": task_type, "now": now, "limit": limit - len(found), "priority": level.value}
                found.extend(_row_to_task(r) for r in conn.execute(QUERIES.peek_ready_priority_tasks, params))
        return found

    def grab_ready_tasks(self, task_type: str, now: datetime, limit: int, *, priority: bool = False, backend_id: str | None = None) -> list[ScheduledRun]:
        if limit <= 0:
            return []
        grabbed: list[Task] = []
        with self._batch_tx() as conn:
            for level in PRIORITY_ORDER if priority else (None,):
                room = limit - len(grabbed)
                if room <= 0:
                    break
                params = {"type": task_type, "now": now, "limit": room}
                cursor = conn.cursor(row_factory=tuple_row)
                if level is None:
                    cursor.execute(QUERIES.grab_ready_tasks, params)
                else:
                    cursor.execute(QUERIES.grab_ready_priority_tasks, {**params, "priority": level.value})
                grabbed.extend(sorted(map(_grabbed_task, cursor.fetchall()), key=lambda t: (t.next_run, t.id)))
            if not grabbed:
                return []
            cursor = conn.cursor(row_factory=tuple_row)
            cursor.execute(QUERIES.insert_scheduled_runs, {"ids": [t.id for t in grabbed], "now": now, "backend_id": backend_id})
            run_of_task = {task_id: run_id for run_id, task_id in cursor.fetchall()}
        return [ScheduledRun(t, TaskRun(run_of_task[t.id], t.id, backend_id, now, None, None, {}, TaskRunStatus.SCHEDULED))
                for t in grabbed]

    def set_task_status(self, ids: Sequence[int], status: TaskStatus, *, next_run: datetime | None = None) -> int:
        changed = 0
        with self._tx() as conn:
            for chunk in _chunks(list(ids)):
                if status is TaskStatus.DISABLED:
                    changed += conn.execute(QUERIES.disable_tasks, {"ids": list(chunk)}).rowcount
                elif status is TaskStatus.NEXT_RUN_NOT_SCHEDULED:
                    changed += conn.execute(QUERIES.respawn_tasks, {"ids": list(chunk), "next_run": next_run}).rowcount
                else:
                    raise ValidationError("status", "disabled or next_run_not_scheduled", status.value)
        return changed

    # -- task runs --------------------------------------------------------
    def record_run_events(self, events: Sequence[RunEvent]) -> int:
        if not events:
            return 0
        finished = 0
        with self._batch_tx() as conn:
            for chunk in _chunks(list(events)):
                ids = sorted({e.run_id for e in chunk})
                current = {}
                for row in conn.execute(QUERIES.runs_with_tasks_for_update, {"ids": ids}):
                    current[row["run_id"]] = (_row_to_run(row, prefix="run_"), _row_to_task_state(row))
                types = self._task_types_in(conn, {task.type for _, task in current.values()})
                plan = plan_run_events(current, types, chunk)
                if plan.runs:
                    conn.execute(QUERIES.update_runs, {
                        "ids": [r.id for r in plan.runs],
                        "statuses": [r.status.value for r in plan.runs],
                        "backend_ids": [r.backend_id for r in plan.runs],
                        "starteds": [r.started for r in plan.runs],
                        "endeds": [r.ended for r in plan.runs],
                        "metadatas": [orjson.dumps(r.metadata).decode() for r in plan.runs],
                    })
                if plan.tasks:
                    conn.execute(QUERIES.update_tasks_after_runs, {
                        "ids": [task_id for task_id, _ in plan.tasks],
                        "statuses": [c.status.value for _, c in plan.tasks],
                        "next_runs": [c.next_run for _, c in plan.tasks],
                        "intervals": [c.current_interval for _, c in plan.tasks],
                        "retries": [c.retries_left for _, c in plan.tasks],
                    })
                finished += plan.finished
        return finished

    def mark_lost_runs(self, now: datetime, timeout: timedelta, *, backend_ids: Sequence[str] | None = None) -> list[int]:
        if backend_ids is not None:
            rows = self._read(QUERIES.in_flight_runs_of, {"backend_ids": list(backend_ids)})
        else:
            rows = self._read(QUERIES.stale_in_flight_runs, {"cutoff": now - timeout, "limit": 100_000})
        ids = [r["id"] for r in rows]
        self.record_run_events(lost_run_events(ids, now))
        return ids

    def in_flight_backend_ids(self, prefix: str) -> list[str]:
        return [r["backend_id"] for r in self._read(QUERIES.in_flight_backend_ids, {"prefix": prefix})]

    def list_task_runs(self, *, task_id=None, status=None, after_id=0, limit=100) -> list[TaskRun]:
        params = {"task": task_id, "statuses": [s.value for s in status] if status else None, "after_id": after_id, "limit": limit}
        return [_row_to_run(r) for r in self._read(QUERIES.search_task_runs, params)]

    def count_tasks(self) -> dict[tuple[str, str], int]:
        return {(r["type"], r["status"]): r["n"] for r in self._read(QUERIES.count_tasks)}

    def task_activity(self, now: datetime, *, count_cap: int = 10_000, runs_window: int = 10_000,
                      failures_limit: int = 20) -> TaskActivity:
        return task_activity(self._read, QUERIES, self.list_task_types(), now, _row_to_run, count_cap=count_cap,
                             runs_window=runs_window, failures_limit=failures_limit)

    # -- archival ---------------------------------------------------------
    def archivable_tasks(self, before: datetime, *, after_id: int = 0, limit: int = 1000) -> list[ArchivedTask]:
        with self._pool.connection() as conn:
            tasks = [_row_to_task(r) for r in conn.execute(QUERIES.archivable_tasks, {"before": before, "after_id": after_id, "limit": limit})]
            runs: dict[int, list[TaskRun]] = {t.id: [] for t in tasks}
            if tasks:
                for row in conn.execute(QUERIES.runs_of_tasks, {"ids": list(runs)}):
                    runs[row["task"]].append(_row_to_run(row))
        return [ArchivedTask(t, tuple(runs[t.id])) for t in tasks]

    def delete_tasks(self, ids: Iterable[int]) -> int:
        deleted = 0
        with self._tx() as conn:
            for chunk in _chunks(list(ids)):
                conn.execute(QUERIES.delete_runs_of_tasks, {"ids": list(chunk)})
                deleted += conn.execute(QUERIES.delete_tasks, {"ids": list(chunk)}).rowcount
        return deleted
