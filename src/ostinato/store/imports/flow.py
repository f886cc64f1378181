"""The imports role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`: records
written as given, keyed by their own identities (see docs/reference/swh-import.md).

Every record of a batch is checked before anything is written; each upsert writes a row only
when a stored field differs, so that the rows a statement changed are what the verb counts and
a second import of the same records counts 0. Tasks and runs travel as parallel columns, listings
and visit stats as one JSON array of records (on PostgreSQL parsed in C), 10,000 to a statement:
these are the verbs an import of an archive's scheduler (10^6 origins and more) spends its time in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from ...domain.errors import ConflictError, NotFoundError, ValidationError
from ...domain.imported import (
    check_lister,
    check_origin_metrics,
    check_stored_listed_origin,
    check_task,
    check_task_run,
    check_visit_stats,
)
from ...domain.origin_metrics import OriginMetrics
from ...domain.origins import Lister, StoredListedOrigin
from ...domain.tasks import Task, TaskRun, TaskType
from ...domain.visit_policies import live_cooldown
from ...domain.visits import VisitStats
from ..dialect import Connection, Dialect, Row, chunks
from ..origins.rows import metrics_params, row_to_lister
from ..queries import Queries
from ..tasks.rows import task_type_params
from .checks import at_id, at_index, checked_records
from .interface import ImportStore


def _listing(listed: StoredListedOrigin) -> dict[str, Any]:
    """A listing as ``import_listed_origins`` reads it (the dialect's ``json`` writes its times)."""
    o = listed.origin
    return {"lister_id": listed.lister_id, "url": o.url, "visit_type": o.visit_type,
            "extra_loader_arguments": o.extra_loader_arguments, "enabled": o.enabled, "first_seen": listed.first_seen,
            "last_seen": listed.last_seen, "last_update": o.last_update, "is_fork": o.is_fork,
            "forked_from_url": o.forked_from_url}


def _metadata(run: TaskRun) -> dict[str, Any]:
    """A checked run's metadata (``check_task_run`` takes only a JSON object)."""
    assert run.metadata is not None, "a checked run has its metadata"
    return dict(run.metadata)


class ImportFlow(ImportStore):
    db: Dialect

    @property
    def _imports(self) -> Queries:
        return self.db.queries("imports")

    def import_task_types(self, task_types: Sequence[TaskType]) -> int:
        checked = checked_records(task_types, lambda t: t.validated(strict=False), lambda i, t: f"task type {getattr(t, 'type', i)}")
        changed = 0
        with self.db.write() as conn:
            for task_type in checked:
                changed += conn.execute(self._imports.import_task_type, task_type_params(self.db, task_type)).rowcount
        return changed

    def import_tasks(self, tasks: Sequence[Task]) -> int:
        checked = checked_records(tasks, check_task, at_id("task"))
        q = self._imports
        return self._write_with_ids(
            checked, self._task_columns, conflict=q.import_task_conflict, upsert=q.import_tasks,
            raise_ids=q.raise_task_ids, check=lambda conn: self._check_task_types(conn, checked),
            conflicting=lambda row: f"task {row['id']} is already another task (of type {row['type']})")

    def import_task_runs(self, runs: Sequence[TaskRun]) -> int:
        checked = checked_records(runs, check_task_run, at_id("task run"))
        q = self._imports
        return self._write_with_ids(
            checked, self._run_columns, conflict=q.import_run_conflict, upsert=q.import_task_runs,
            raise_ids=q.raise_task_run_ids,
            conflicting=lambda row: f"task run {row['id']} is already a run of another task ({row['task']})")

    def import_listers(self, listers: Sequence[Lister]) -> tuple[list[Lister], int]:
        checked = checked_records(listers, check_lister, at_index("lister"))
        q, db = self._imports, self.db
        changed = 0
        stored: list[Lister] = []
        with db.write() as conn:
            for lister in checked:
                params = {"name": lister.name, "instance_name": lister.instance_name,
                          "current_state": db.json(dict(lister.current_state)),
                          "last_listing_finished_at": db.time(lister.last_listing_finished_at),
                          "updated": db.time(lister.updated)}
                changed += conn.execute(q.import_lister, params).rowcount
                stored.append(row_to_lister(db, conn.execute(q.lister_by_name, params).fetchone()))
        return stored, changed

    def import_listed_origins(self, origins: Sequence[StoredListedOrigin]) -> int:
        checked = checked_records(origins, check_stored_listed_origin, at_index("origin"))
        q, db = self._imports, self.db
        changed = 0
        with db.write(batch=True) as conn:
            self._check_listers(conn, {o.lister_id for o in checked})
            for chunk in chunks(checked):
                keys = conn.execute(q.import_listed_origins, {"rows": db.json([_listing(o) for o in chunk])}).fetchall()
                changed += len(keys)
                if keys:
                    conn.execute(q.import_sync_visit_stats, db.columns(urls=[k["url"] for k in keys],
                                                                       visit_types=[k["visit_type"] for k in keys]))
        return changed

    def import_visit_stats(self, stats: Sequence[VisitStats], now: datetime) -> int:
        checked = checked_records(stats, check_visit_stats, at_index("visit stats"))
        if not isinstance(now, datetime) or now.tzinfo is None:
            raise ValidationError("now", "a time with a zone", now)
        q, db = self._imports, self.db
        changed = 0
        with db.write(batch=True) as conn:
            for chunk in chunks(checked):
                rows = [s if live_cooldown(s.cooldown_until, now) == s.cooldown_until else replace(s, cooldown_until=None)
                        for s in chunk]
                changed += conn.execute(q.import_visit_stats, {"rows": db.json(rows), "now": db.time(now)}).rowcount
        return changed

    def import_origin_metrics(self, metrics: Sequence[OriginMetrics]) -> int:
        checked = checked_records(metrics, check_origin_metrics, at_index("metrics"))
        changed, upsert = 0, self.db.queries("origins").upsert_origin_metrics  # as a count writes them
        with self.db.write() as conn:
            self._check_listers(conn, {m.lister_id for m in checked})
            for m in checked:
                changed += conn.execute(upsert, metrics_params(self.db, m)).rowcount
        return changed

    # -- helpers ---------------------------------------------------------------------------
    def _write_with_ids(self, records: list[Any], columns: Callable[[Sequence[Any]], dict[str, Any]], *,
                        conflict: str, upsert: str, raise_ids: str, conflicting: Callable[[Row], str],
                        check: Callable[[Connection], None] | None = None) -> int:
        """Records with ids of their own (tasks, runs), ``columns`` of 10,000 to a statement, in one
        transaction (after ``check``): a stored row with one of their ids that is another record is a
        ConflictError (``conflicting`` says which) and nothing is written; the ids created later
        then come after the largest written. Returns the rows created or changed."""
        changed = 0
        with self.db.write(batch=True) as conn:
            if check is not None:
                check(conn)
            for chunk in chunks(records):
                batch = columns(chunk)
                row = conn.execute(conflict, batch).fetchone()
                if row is not None:
                    raise ConflictError(f"{conflicting(row)}: import into an empty store, or one an earlier import "
                                        "of the same source filled")
                changed += conn.execute(upsert, batch).rowcount
            if records:
                conn.execute(raise_ids, {"top": max(r.id for r in records)})
        return changed

    def _check_task_types(self, conn: Connection, tasks: Sequence[Task]) -> None:
        """ValidationError at the first task whose type is not stored."""
        types = self.db.array(sorted({t.type for t in tasks}))
        known = {r["type"] for r in conn.execute(self._imports.known_task_types, {"types": types}).fetchall()}
        for task in tasks:
            if task.type not in known:
                raise ValidationError("type", "a known task type (import the task types first)", task.type,
                                      record=f"task {task.id}")

    def _task_columns(self, chunk: Sequence[Task]) -> dict[str, Any]:
        """Tasks as ``import_tasks`` reads them (on SQLite by position, in this order)."""
        time, interval = self.db.time, self.db.interval
        arguments = [t.arguments.to_json() for t in chunk]
        return self.db.columns(
            ids=[t.id for t in chunk], types=[t.type for t in chunk], arguments=arguments,
            digests=[self.db.digest(a) for a in arguments], next_runs=[time(t.next_run) for t in chunk],
            intervals=[interval(t.current_interval) for t in chunk], statuses=[t.status.value for t in chunk],
            policies=[t.policy.value for t in chunk], retries=[t.retries_left for t in chunk],
            priorities=[t.priority.value if t.priority else None for t in chunk])

    def _run_columns(self, chunk: Sequence[TaskRun]) -> dict[str, Any]:
        """Task runs as ``import_task_runs`` reads them (on SQLite by position, in this order)."""
        time, json = self.db.time, self.db.json
        return self.db.columns(
            ids=[r.id for r in chunk], tasks=[r.task for r in chunk], backend_ids=[r.backend_id for r in chunk],
            scheduleds=[time(r.scheduled) for r in chunk], starteds=[time(r.started) for r in chunk],
            endeds=[time(r.ended) for r in chunk], metadatas=[json(_metadata(r)) for r in chunk],
            statuses=[r.status.value for r in chunk])

    def _check_listers(self, conn: Connection, ids: set[int]) -> None:
        """NotFoundError for the lowest of ``ids`` no lister has."""
        rows = conn.execute(self._imports.listers_known, {"ids": self.db.array(sorted(ids))}).fetchall()
        missing = sorted(ids - {r["id"] for r in rows})
        if missing:
            raise NotFoundError("lister", str(missing[0]))
