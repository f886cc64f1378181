"""The tasks role's flow, written once over a :class:`~ostinato.store.dialect.Dialect` (see docs/design/tasks.md).

Task types; tasks created in batches without duplicating a pending one; the runner's grab (the
hottest path: one statement per priority level and one for the runs, rows read by position); runs
and their outcomes, moved by the domain's rules in batches; a glance at the activity; archival.
Rows become records in ``rows.py``, batches are checked and keyed in ``batches.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from ...domain.audit import AuditEvent, applied_fields, target_of, update_outcome
from ...domain.errors import ConflictError, NotFoundError, ValidationError
from ...domain.limits import check_whole
from ...domain.task_actions import IN_FLIGHT, retry_refusal, task_type_in_use
from ...domain.tasks import (
    PRIORITY_ORDER,
    NewTask,
    RunEvent,
    ScheduledRun,
    Task,
    TaskRun,
    TaskRunStatus,
    TaskStatus,
    TaskType,
    canonical_json,
    lost_run_events,
    plan_run_events,
)
from ..audit.flow import write_audit
from ..dialect import Connection, Dialect, chunks
from .batches import Part, TaskBatch, apart_by, check_type_names
from .interface import ArchivedTask, TaskActivity, TaskStore
from .rows import grabbed_tasks, run_of, task_of, task_state_of, task_type_of, task_type_params

#: the users of a task type a refused deletion names, at most
USERS_NAMED = 5
#: the lock that serialises task creators, so that two of them cannot both create the same pending task
CREATE_TASKS_LOCK = "ostinato.create_tasks"
#: tasks per statement of ``create_tasks``: a part is checked and keyed while the server writes the one before
CREATE_PART = 2_000
PENDING = TaskStatus.NEXT_RUN_NOT_SCHEDULED


class TaskFlow(TaskStore):
    db: Dialect

    @property
    def _tasks(self):
        return self.db.queries("tasks")

    # -- task types -------------------------------------------------------
    def create_task_type(self, task_type: TaskType, *, strict: bool = True) -> TaskType:
        return self._insert_task_type(task_type, strict, None)

    def add_task_type(self, task_type: TaskType, now: datetime, *, actor: str) -> TaskType:
        event = AuditEvent(now, actor, "task-type.add", target_of("task-type", task_type.type), "done: added")
        return self._insert_task_type(task_type, True, event.validated())

    def update_task_type(self, task_type: TaskType, now: datetime, *, fields: Sequence[str] | None = None,
                         actor: str) -> TaskType:
        knobs = [f.name for f in dataclasses.fields(TaskType) if f.name != "type"]
        wanted = knobs if fields is None else list(fields)
        if unknown := sorted(set(wanted) - set(knobs)):
            raise ValidationError("fields", f"names among {', '.join(knobs)}", unknown)
        event = AuditEvent(now, actor, "task-type.update", target_of("task-type", task_type.type), "done").validated()
        with self.db.write() as conn:
            row = conn.execute(self._tasks.task_type_for_update, {"type": task_type.type}).fetchone()
            if row is None:
                raise NotFoundError("task type", task_type.type)
            held = task_type_of(self.db, row)
            updated, changed = applied_fields(held, task_type, wanted)
            updated = updated.validated()
            if changed:
                conn.execute(self._tasks.update_task_type, task_type_params(self.db, updated))
            write_audit(self.db, conn, dataclasses.replace(event, outcome=update_outcome(changed)))
        return updated

    def delete_task_type(self, name: str, now: datetime, *, actor: str) -> None:
        event = AuditEvent(now, actor, "task-type.delete", target_of("task-type", name), "done: deleted").validated()
        with self.db.write() as conn:
            self.db.lock(conn, CREATE_TASKS_LOCK)  # no task of it created meanwhile
            if conn.execute(self._tasks.task_type_for_update, {"type": name}).fetchone() is None:
                raise NotFoundError("task type", name)
            tasks = sorted(r["id"] for r in conn.execute(self._tasks.tasks_of_type, {"type": name, "limit": USERS_NAMED + 1}))
            schedules = [r["name"] for r in conn.execute(self._tasks.schedules_of_type,
                                                         {"type": name, "limit": USERS_NAMED + 1})]
            if tasks or schedules:
                raise ConflictError(task_type_in_use(name, tasks, schedules, USERS_NAMED))
            conn.execute(self._tasks.delete_task_type, {"type": name})
            write_audit(self.db, conn, event)

    def _insert_task_type(self, task_type: TaskType, strict: bool, event: AuditEvent | None) -> TaskType:
        task_type.validated(strict=strict)
        try:
            with self.db.write() as conn:
                conn.execute(self._tasks.insert_task_type, task_type_params(self.db, task_type))
                if event is not None:
                    write_audit(self.db, conn, event)
        except Exception as exc:
            if not self.db.is_unique_violation(exc):
                raise
            raise ConflictError(f"task type {task_type.type!r} already exists") from None
        return task_type

    def get_task_type(self, name: str) -> TaskType | None:
        rows = self.db.read(self._tasks.get_task_type, {"type": name})
        return task_type_of(self.db, rows[0]) if rows else None

    def list_task_types(self) -> list[TaskType]:
        return [task_type_of(self.db, r) for r in self.db.read(self._tasks.list_task_types)]

    def _task_types_in(self, conn: Connection, names: Iterable[str]) -> dict[str, TaskType]:
        rows = conn.execute(self._tasks.task_types_in, {"types": self.db.array(names)}).fetchall()
        return {r["type"]: task_type_of(self.db, r) for r in rows}

    # -- tasks ------------------------------------------------------------
    def create_tasks(self, tasks: Sequence[NewTask], *, one_shot_by_next_run: bool = False,
                     clamp: bool = True) -> list[Task]:
        if not tasks:
            return []
        db = self.db
        names = check_type_names(tasks)
        with db.write(batch=True) as conn:
            db.lock(conn, CREATE_TASKS_LOCK)  # before the types are read: a type is deleted under this lock too
            batch = TaskBatch(tasks, self._task_types_in(conn, names), db.digest, one_shot_by_next_run=one_shot_by_next_run,
                              clamp=clamp)
            with db.pipeline(conn):  # a part checked and keyed while the server writes the one before
                sent = None
                for start in range(0, len(tasks), CREATE_PART):
                    part = batch.part(start, min(start + CREATE_PART, len(tasks)))
                    ahead = self._send_part(conn, part, one_shot_by_next_run) if part else None
                    if sent is not None:
                        self._receive_part(conn, *sent, batch.found, one_shot_by_next_run)
                    sent = ahead
                if sent is not None:
                    self._receive_part(conn, *sent, batch.found, one_shot_by_next_run)
        return batch.in_input_order()

    def _send_part(self, conn: Connection, part: list[Part],
                   apart: bool) -> tuple[list[Part], Callable[[], list[tuple[Any, ...]]]]:
        """Send the part's insert (``insert_tasks``: a task with a pending duplicate is skipped); its rows are
        read later (``_receive_part``), the server writing meanwhile."""
        params = {"rows": self.db.records([row for _, _, row in part]), "apart": apart}
        return part, self.db.send(conn, self._tasks.insert_tasks, params)

    def _receive_part(self, conn: Connection, part: list[Part], inserted: Callable[[], list],
                      found: list[Task | None], apart: bool) -> None:
        """``found`` gets every task of the part in its slot: the inserted ones, then the pending duplicates of the
        others (a task created in another status is always new) (``find_pending_duplicates``, sent only when the insert skipped some: a batch of new tasks skips
        none). A row comes back with its arguments' digest (``Dialect.digest``), not its arguments: where the
        part's digests differ (they do but for one arguments' tasks of another type, policy or priority), the
        digest tells its task, else the whole key does."""
        db, queries = self.db, self._tasks
        read_time = db.read_time
        by_digest = {item[2].digest: item for item in part}
        if len(by_digest) < len(part) or apart:
            # a key's tasks in the part's order (several only for tasks made in another status than pending,
            # never deduplicated: rows come back in the order given)
            by_key: dict[tuple, list[Part]] = {}
            for slot, task, r in part:
                by_key.setdefault((r.type, r.digest, r.policy, r.priority, r.status,
                                   apart_by(r.policy, r.next_run, apart)), []).append((slot, task, r))

            def item_of(type_: str, digest: Any, policy: str, priority: str | None, status: str, next_run: Any) -> Part:
                items = by_key[(type_, digest, policy, priority, status, apart_by(policy, read_time(next_run), apart))]
                return next((item for item in items if found[item[0]] is None), items[0])
        else:
            def item_of(type_: str, digest: Any, policy: str, priority: str | None, status: str, next_run: Any) -> Part:
                return by_digest[digest]

        def take(rows: list) -> int:
            for task_id, type_, digest, policy, priority, status, next_run in rows:
                slot, task, row = item_of(type_, digest, policy, priority, status, next_run)
                found[slot] = Task(task_id, task.type, task.arguments, task.next_run, row.current_interval,
                                   task.policy, task.status, row.retries_left, task.priority)
            return len(rows)

        if take(inserted()) == len(part):
            return
        missing = [item for item in part if found[item[0]] is None]
        while missing:  # a duplicate that stops being pending meanwhile (a runner grabbed it) is inserted next turn
            params = {"rows": db.records([row for _, _, row in missing]), "apart": apart}
            for row in db.tuples(conn, queries.find_pending_duplicates, params):
                found[item_of(row[1], row[9], row[5], row[8], row[6], row[3])[0]] = grabbed_tasks(db, [row[:9]])[0]
            missing = [item for item in missing if found[item[0]] is None]
            if missing:
                take(db.tuples(conn, queries.insert_tasks, {**params, "rows": db.records([row for _, _, row in missing])}))
                missing = [item for item in missing if found[item[0]] is None]

    def get_tasks(self, ids: Sequence[int]) -> list[Task]:
        return [task_of(self.db, r) for chunk in chunks(list(ids))
                for r in self.db.read(self._tasks.tasks_in, {"ids": self.db.array(chunk)})]

    def search_tasks(self, *, task_type=None, status=None, policy=None, priority=None, before=None, after_id=0,
                     limit=100) -> list[Task]:
        db = self.db
        params = {
            "type": task_type,
            "statuses": db.array(s.value for s in status) if status else None,
            "policy": policy.value if policy else None,
            "priorities": db.array(p.value if p else "none" for p in priority) if priority else None,
            "before": db.time(before),
            "after_id": after_id,
            "limit": limit,
        }
        # one type's tasks: a walk of that type's entries of task_by_type_idx, not of every task by id
        query = self._tasks.search_tasks if task_type is None else self._tasks.search_tasks_of_type
        return [task_of(db, r) for r in db.read(query, params)]

    def peek_ready_tasks(self, task_type: str, now: datetime, limit: int, *, priority: bool = False,
                         by_next_run: bool = False) -> list[Task]:
        db, queries = self.db, self._tasks
        params = {"type": task_type, "now": db.time(now), "limit": limit}
        if not priority:
            return [task_of(db, r) for r in db.read(queries.peek_ready_tasks, params)]
        found: list[Task] = []
        for level in PRIORITY_ORDER:
            if len(found) >= limit and not by_next_run:
                break
            rows = db.read(queries.peek_ready_priority_tasks,
                           {**params, "limit": limit if by_next_run else limit - len(found), "priority": level.value})
            found.extend(task_of(db, r) for r in rows)
        if by_next_run:  # every level's first ones, merged by next run
            found = sorted(found, key=lambda t: (t.next_run, t.id))[:limit]
        return found

    def grab_ready_tasks(self, task_type: str, now: datetime, limit: int, *, priority: bool = False,
                         backend_id: str | None = None, by_next_run: bool = False) -> list[ScheduledRun]:
        if limit <= 0:
            return []
        db, queries = self.db, self._tasks
        at = db.time(now)
        grabbed: list[Task] = []
        with db.write(batch=True) as conn:
            if priority and by_next_run:
                # every level's first ones merged by next run, then those taken (a task a concurrent runner took
                # meanwhile is left to it)
                chosen = [t.id for t in self.peek_ready_tasks(task_type, now, limit, priority=True, by_next_run=True)]
                rows = db.tuples(conn, queries.grab_tasks_by_id, {"ids": db.array(chosen)}) if chosen else []
                grabbed = sorted(grabbed_tasks(db, rows), key=lambda t: (t.next_run, t.id))
            levels = () if priority and by_next_run else PRIORITY_ORDER if priority else (None,)
            for level in levels:
                room = limit - len(grabbed)
                if room <= 0:
                    break
                params = {"type": task_type, "now": at, "limit": room}
                if level is None:
                    rows = db.tuples(conn, queries.grab_ready_tasks, params)
                else:
                    rows = db.tuples(conn, queries.grab_ready_priority_tasks, {**params, "priority": level.value})
                grabbed.extend(sorted(grabbed_tasks(db, rows), key=lambda t: (t.next_run, t.id)))
            if not grabbed:
                return []
            runs = db.tuples(conn, queries.insert_scheduled_runs,
                             {"ids": db.array(t.id for t in grabbed), "now": at, "backend_id": backend_id})
            run_of_task = {task_id: run_id for run_id, task_id in runs}
        return [ScheduledRun(t, TaskRun(run_of_task[t.id], t.id, backend_id, now, None, None, {}, TaskRunStatus.SCHEDULED))
                for t in grabbed]

    def set_task_status(self, ids: Sequence[int], status: TaskStatus, *, next_run: datetime | None = None) -> int:
        with self.db.write() as conn:
            return len(self._set_status(conn, ids, status, next_run))

    def disable_tasks(self, ids: Sequence[int], now: datetime, *, actor: str) -> list[int]:
        event = AuditEvent(now, actor, "task.disable", target_of("task", 0), "done: disabled").validated()
        with self.db.write() as conn:
            changed = self._set_status(conn, ids, TaskStatus.DISABLED, None)
            for task_id in changed:
                write_audit(self.db, conn, dataclasses.replace(event, target=target_of("task", task_id)))
        return list(changed)

    def respawn_tasks(self, ids: Sequence[int], now: datetime, *, next_run: datetime | None = None,
                      actor: str) -> list[int]:
        event = AuditEvent(now, actor, "task.enable", target_of("task", 0), "done").validated()
        with self.db.write() as conn:
            changed = self._set_status(conn, ids, TaskStatus.NEXT_RUN_NOT_SCHEDULED, next_run, idle_only=True)
            for task_id, row in changed.items():
                pending = self.db.read_time(row["next_run"]).isoformat()
                write_audit(self.db, conn, dataclasses.replace(
                    event, target=target_of("task", task_id),
                    outcome=f"done: pending again at its next run ({pending}), retries refilled"))
        return list(changed)

    def retry_task_run(self, run_id: int, now: datetime, *, actor: str) -> Task:
        check_whole(run_id, "run_id")
        event = AuditEvent(now, actor, "task.retry", target_of("task", 0), "done").validated()
        with self.db.write() as conn:
            row = conn.execute(self._tasks.run_with_task_for_update, {"id": run_id}).fetchone()
            if row is None:
                raise NotFoundError("task run", run_id)
            run, task = run_of(self.db, row, prefix="run_"), task_state_of(self.db, row)
            refusal = retry_refusal(run, task)
            if refusal is not None:
                raise ConflictError(refusal)
            if not self._set_status(conn, [task.id], TaskStatus.NEXT_RUN_NOT_SCHEDULED, now, idle_only=True):
                raise ConflictError(IN_FLIGHT.format(id=task.id))
            write_audit(self.db, conn, dataclasses.replace(
                event, target=target_of("task", task.id),
                outcome=f"done: pending again now, retries refilled (after run #{run.id}, {run.status.value})"))
        return self.get_tasks([task.id])[0]

    def _set_status(self, conn: Connection, ids: Sequence[int], status: TaskStatus,
                    next_run: datetime | None, *, idle_only: bool = False) -> dict[int, Any]:
        """Disable or respawn ``ids`` in the transaction of ``conn``: the rows changed (``RETURNING``) by id,
        in the order given. ``idle_only``: an operator's respawn, of tasks with no run in flight only."""
        if status is TaskStatus.DISABLED:
            query, extra = self._tasks.disable_tasks, {}
        elif status is TaskStatus.NEXT_RUN_NOT_SCHEDULED:
            query = self._tasks.respawn_idle_tasks if idle_only else self._tasks.respawn_tasks
            extra = {"next_run": self.db.time(next_run)}
        else:
            raise ValidationError("status", "disabled or next_run_not_scheduled", status.value)
        changed: dict[int, Any] = {}
        for chunk in chunks(list(ids)):
            for row in conn.execute(query, {"ids": self.db.array(chunk), **extra}).fetchall():
                changed[int(row["id"])] = row
        return {i: changed[i] for i in dict.fromkeys(ids) if i in changed}

    # -- task runs --------------------------------------------------------
    def record_run_events(self, events: Sequence[RunEvent], *, as_told: bool = False) -> int:
        if not events:
            return 0
        db, queries = self.db, self._tasks
        finished = 0
        with db.write(batch=True) as conn:
            for chunk in chunks(list(events)):
                ids = sorted({e.run_id for e in chunk})
                current = {}
                for row in conn.execute(queries.runs_with_tasks_for_update, {"ids": db.array(ids)}):
                    current[row["run_id"]] = (run_of(db, row, prefix="run_"), task_state_of(db, row))
                types = self._task_types_in(conn, {task.type for _, task in current.values()})
                plan = plan_run_events(current, types, chunk, as_told=as_told)
                if plan.runs:
                    conn.execute(queries.update_runs, {**db.columns(
                        ids=[r.id for r in plan.runs], statuses=[r.status.value for r in plan.runs],
                        backend_ids=[r.backend_id for r in plan.runs], starteds=[db.time(r.started) for r in plan.runs],
                        endeds=[db.time(r.ended) for r in plan.runs],
                        metadatas=[canonical_json(r.metadata) for r in plan.runs]), "as_told": as_told})
                if plan.tasks:
                    conn.execute(queries.update_tasks_after_runs, db.columns(
                        ids=[task_id for task_id, _ in plan.tasks], statuses=[c.status.value for _, c in plan.tasks],
                        next_runs=[db.time(c.next_run) for _, c in plan.tasks],
                        intervals=[db.interval(c.current_interval) for _, c in plan.tasks],
                        retries=[c.retries_left for _, c in plan.tasks]))
                finished += plan.finished
        return finished

    def mark_lost_runs(self, now: datetime, timeout: timedelta, *, backend_ids: Sequence[str] | None = None) -> list[int]:
        if backend_ids is not None:
            rows = self.db.read(self._tasks.in_flight_runs_of, {"backend_ids": self.db.array(backend_ids)})
        else:
            rows = self.db.read(self._tasks.stale_in_flight_runs, {"cutoff": self.db.time(now - timeout), "limit": 100_000})
        ids = [r["id"] for r in rows]
        self.record_run_events(lost_run_events(ids, now))
        return ids

    def in_flight_backend_ids(self, prefix: str) -> list[str]:
        return [r["backend_id"] for r in self.db.read(self._tasks.in_flight_backend_ids, {"prefix": prefix})]

    def list_task_runs(self, *, task_id=None, status=None, after_id=0, limit=100) -> list[TaskRun]:
        params = {"task": task_id, "statuses": self.db.array(s.value for s in status) if status else None,
                  "after_id": after_id, "limit": limit}
        query = self._tasks.search_task_runs if task_id is None else self._tasks.task_runs_of_task
        return [run_of(self.db, r) for r in self.db.read(query, params)]

    def recent_task_runs(self, task_type: str, *, limit: int = 50, window: int = 10_000) -> list[TaskRun]:
        for name, value in (("limit", limit), ("window", window)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(name, "a positive whole number", value)
        params = {"type": task_type, "limit": limit, "window": window}
        return [run_of(self.db, r) for r in self.db.read(self._tasks.recent_runs_of_type, params)]

    def count_tasks(self) -> dict[tuple[str, str], int]:
        return {(r["type"], r["status"]): r["n"] for r in self.db.read(self._tasks.count_tasks)}

    def task_activity(self, now: datetime, *, count_cap: int = 10_000, runs_window: int = 10_000,
                      failures_limit: int = 20) -> TaskActivity:
        for name, value in (("count_cap", count_cap), ("runs_window", runs_window), ("failures_limit", failures_limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(name, "a positive whole number", value)
        db, queries = self.db, self._tasks
        at = db.time(now)
        ready = {}
        for task_type in self.list_task_types():
            rows = db.read(queries.count_ready_tasks, {"type": task_type.type, "now": at, "cap": count_cap})
            ready[task_type.type] = min(int(rows[0]["ready"]), count_cap)
        in_flight = {r["type"]: int(r["in_flight"]) for r in db.read(queries.in_flight_runs_by_type, {"cap": count_cap})}
        window = {"window": runs_window}
        failed = {r["type"]: int(r["failed"]) for r in db.read(queries.recent_failed_runs_by_type, window)}
        recent = tuple((r["task_type"], run_of(db, r))
                       for r in db.read(queries.recent_failed_runs, {**window, "limit": failures_limit}))
        return TaskActivity(ready, in_flight, count_cap, failed, runs_window, recent)

    # -- archival ---------------------------------------------------------
    def archivable_tasks(self, before: datetime, *, after_id: int = 0, limit: int = 1000) -> list[ArchivedTask]:
        db, queries = self.db, self._tasks
        params = {"before": db.time(before), "after_id": after_id, "limit": limit}
        tasks = [task_of(db, r) for r in db.read(queries.archivable_tasks, params)]
        runs: dict[int, list[TaskRun]] = {t.id: [] for t in tasks}
        if tasks:
            for row in db.read(queries.runs_of_tasks, {"ids": db.array(runs)}):
                runs[row["task"]].append(run_of(db, row))
        return [ArchivedTask(t, tuple(runs[t.id])) for t in tasks]

    def delete_tasks(self, ids: Iterable[int]) -> int:
        deleted = 0
        with self.db.write() as conn:
            for chunk in chunks(list(ids)):
                conn.execute(self._tasks.delete_runs_of_tasks, {"ids": self.db.array(chunk)})
                deleted += conn.execute(self._tasks.delete_tasks, {"ids": self.db.array(chunk)}).rowcount
        return deleted
