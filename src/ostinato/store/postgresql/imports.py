"""The PostgreSQL store's imports: records written as given, keyed by their own identities
(see docs/reference/swh-import.md and ``Store.import_*``).

Mixed into :class:`~ostinato.store.postgresql.store.PostgresStore`, whose connection pool and
transactions it uses; its SQL is in ``import_queries.sql``. Bulk rows travel as array
parameters or one JSON parameter, as in the rest of the store.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

import orjson

from ...domain.errors import ConflictError, NotFoundError, ValidationError
from ...domain.imported import (
    check_lister, check_origin_metrics, check_stored_listed_origin, check_task, check_task_run, check_visit_stats,
)
from ...domain.origin_metrics import OriginMetrics
from ...domain.origins import Lister, StoredListedOrigin
from ...domain.tasks import Task, TaskRun, TaskType
from ...domain.visit_policies import live_cooldown
from ...domain.visits import VisitStats
from ..common import at_id, at_index, checked_records
from ..queries import Queries
from ..dialect import chunks
from ..origins.rows import row_to_lister

QUERIES = Queries(Path(__file__).parent / "import_queries.sql")


def arguments_digest(arguments_json: str) -> bytes:
    """The md5 of a task's canonical arguments, which the duplicate check of ``create_tasks`` probes."""
    return hashlib.md5(arguments_json.encode(), usedforsecurity=False).digest()


def _task_type_params(task_type: TaskType) -> dict[str, Any]:
    return {name: getattr(task_type, name) for name in (
        "type", "description", "backend_name", "default_interval", "min_interval", "max_interval", "backoff_factor",
        "max_queue_length", "num_retries", "retry_delay")}


def _listing_row(listed: StoredListedOrigin) -> dict[str, Any]:
    o = listed.origin
    return {"lister_id": listed.lister_id, "url": o.url, "visit_type": o.visit_type,
            "extra_loader_arguments": o.extra_loader_arguments, "enabled": o.enabled, "first_seen": listed.first_seen,
            "last_seen": listed.last_seen, "last_update": o.last_update, "is_fork": o.is_fork,
            "forked_from_url": o.forked_from_url}


def _metrics_params(m: OriginMetrics) -> dict[str, Any]:
    return {"lister_id": m.lister_id, "visit_type": m.visit_type, "computed_at": m.computed_at,
            "origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
            "origins_never_visited": m.origins_never_visited,
            "origins_with_pending_changes": m.origins_with_pending_changes,
            "lag_histogram": orjson.dumps(dict(m.lag_histogram)).decode(), "lag_max": m.lag_max,
            "visits_in_flight": m.visits_in_flight, "visits_last_hour": m.visits_last_hour,
            "eventful_visits_last_hour": m.eventful_visits_last_hour,
            "uneventful_visits_last_hour": m.uneventful_visits_last_hour,
            "origins_never_successful": m.origins_never_successful}


class PostgresImports:
    def import_task_types(self, task_types: Sequence[TaskType]) -> int:
        checked = checked_records(task_types, lambda t: t.validated(), lambda i, t: f"task type {getattr(t, 'type', i)}")
        changed = 0
        with self._tx() as conn:
            for task_type in checked:
                changed += conn.execute(QUERIES.import_task_type, _task_type_params(task_type)).rowcount
        return changed

    def import_tasks(self, tasks: Sequence[Task]) -> int:
        checked = checked_records(tasks, check_task, at_id("task"))
        changed = 0
        with self._batch_tx() as conn:
            known = set(self._task_types_in(conn, {t.type for t in checked}))
            for task in checked:
                if task.type not in known:
                    raise ValidationError("type", "a known task type (import the task types first)", task.type,
                                          record=f"task {task.id}")
            for chunk in chunks(checked):
                arguments = [t.arguments.to_json() for t in chunk]
                params = {"ids": [t.id for t in chunk], "types": [t.type for t in chunk],
                          "digests": [arguments_digest(a) for a in arguments]}
                conflict = conn.execute(QUERIES.import_task_conflict, params).fetchone()
                if conflict is not None:
                    raise ConflictError(f"task {conflict['id']} is already another task (of type {conflict['type']}): "
                                        "import into an empty store, or one an earlier import of the same source filled")
                changed += conn.execute(QUERIES.import_tasks, {
                    **params, "arguments": arguments, "next_runs": [t.next_run for t in chunk],
                    "intervals": [t.current_interval for t in chunk], "statuses": [t.status.value for t in chunk],
                    "policies": [t.policy.value for t in chunk], "retries": [t.retries_left for t in chunk],
                    "priorities": [t.priority.value if t.priority else None for t in chunk],
                }).rowcount
            if checked:
                conn.execute(QUERIES.raise_task_ids, {"top": max(t.id for t in checked)})
        return changed

    def import_task_runs(self, runs: Sequence[TaskRun]) -> int:
        checked = checked_records(runs, check_task_run, at_id("task run"))
        changed = 0
        with self._batch_tx() as conn:
            for chunk in chunks(checked):
                params = {"ids": [r.id for r in chunk], "tasks": [r.task for r in chunk]}
                conflict = conn.execute(QUERIES.import_run_conflict, params).fetchone()
                if conflict is not None:
                    raise ConflictError(f"task run {conflict['id']} is already a run of another task ({conflict['task']}): "
                                        "import into an empty store, or one an earlier import of the same source filled")
                changed += conn.execute(QUERIES.import_task_runs, {
                    **params, "backend_ids": [r.backend_id for r in chunk], "scheduleds": [r.scheduled for r in chunk],
                    "starteds": [r.started for r in chunk], "endeds": [r.ended for r in chunk],
                    "metadatas": [orjson.dumps(dict(r.metadata)).decode() for r in chunk],
                    "statuses": [r.status.value for r in chunk],
                }).rowcount
            if checked:
                conn.execute(QUERIES.raise_task_run_ids, {"top": max(r.id for r in checked)})
        return changed

    def import_listers(self, listers: Sequence[Lister]) -> tuple[list[Lister], int]:
        checked = checked_records(listers, check_lister, at_index("lister"))
        changed = 0
        stored: list[Lister] = []
        with self._tx() as conn:
            for lister in checked:
                params = {"name": lister.name, "instance_name": lister.instance_name,
                          "current_state": orjson.dumps(dict(lister.current_state)).decode(),
                          "last_listing_finished_at": lister.last_listing_finished_at, "updated": lister.updated}
                changed += conn.execute(QUERIES.import_lister, params).rowcount
                stored.append(row_to_lister(self.db, conn.execute(
                    "SELECT * FROM lister WHERE name = %(name)s AND instance_name = %(instance_name)s", params).fetchone()))
        return stored, changed

    def _check_listers(self, conn: Any, ids: set[int]) -> None:
        known = {r["id"] for r in conn.execute(QUERIES.listers_known, {"ids": sorted(ids)})}
        missing = sorted(ids - known)
        if missing:
            raise NotFoundError("lister", str(missing[0]))

    def import_listed_origins(self, origins: Sequence[StoredListedOrigin]) -> int:
        checked = checked_records(origins, check_stored_listed_origin, at_index("origin"))
        changed = 0
        with self._batch_tx() as conn:
            self._check_listers(conn, {o.lister_id for o in checked})
            for chunk in chunks(checked):
                rows = orjson.dumps([_listing_row(o) for o in chunk]).decode()
                keys = conn.execute(QUERIES.import_listed_origins, {"rows": rows}).fetchall()
                changed += len(keys)
                if keys:
                    conn.execute(QUERIES.import_sync_visit_stats, {"urls": [k["url"] for k in keys],
                                                                   "visit_types": [k["visit_type"] for k in keys]})
        return changed

    def import_visit_stats(self, stats: Sequence[VisitStats], now: datetime) -> int:
        checked = checked_records(stats, check_visit_stats, at_index("visit stats"))
        if not isinstance(now, datetime) or now.tzinfo is None:
            raise ValidationError("now", "a time with a zone", now)
        changed = 0
        with self._batch_tx() as conn:
            for chunk in chunks(checked):
                rows = [s if live_cooldown(s.cooldown_until, now) == s.cooldown_until else replace(s, cooldown_until=None)
                        for s in chunk]
                changed += self.db.execute_records(conn, QUERIES.import_visit_stats, rows, {"now": now})
        return changed

    def import_origin_metrics(self, metrics: Sequence[OriginMetrics]) -> int:
        checked = checked_records(metrics, check_origin_metrics, at_index("metrics"))
        changed = 0
        with self._tx() as conn:
            self._check_listers(conn, {m.lister_id for m in checked})
            for m in checked:
                changed += conn.execute(QUERIES.import_origin_metrics, _metrics_params(m)).rowcount
        return changed

