"""The SQLite store's imports: records written as given, keyed by their own identities
(see docs/reference/swh-import.md and ``Store.import_*``).

Mixed into :class:`~ostinato.store.sqlite.store.SQLiteStore`, whose connection and write
transactions it uses; its SQL is in ``import_queries.sql``. What changed is counted by
SQLite's own change counter, which an upsert that writes nothing leaves alone.
"""

from __future__ import annotations

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
from .codec import chunks, json_array, to_db_interval, to_db_time
from ..origins.rows import VISIT_TIMES, row_to_lister

QUERIES = Queries(Path(__file__).parent / "import_queries.sql")


def _task_type_params(task_type: TaskType) -> dict[str, Any]:
    params: dict[str, Any] = {name: getattr(task_type, name) for name in (
        "type", "description", "backend_name", "backoff_factor", "max_queue_length", "num_retries")}
    for name in ("default_interval", "min_interval", "max_interval", "retry_delay"):
        params[name] = to_db_interval(getattr(task_type, name))
    if params["backoff_factor"] is not None:
        params["backoff_factor"] = float(params["backoff_factor"])
    return params


def _task_row(task: Task) -> list[Any]:
    return [task.id, task.type, task.arguments.to_json(), to_db_time(task.next_run),
            to_db_interval(task.current_interval), task.status.value, task.policy.value, task.retries_left,
            task.priority.value if task.priority else None]


def _run_row(run: TaskRun) -> list[Any]:
    return [run.id, run.task, run.backend_id, to_db_time(run.scheduled), to_db_time(run.started),
            to_db_time(run.ended), orjson.dumps(dict(run.metadata)).decode(), run.status.value]


def _listing_row(listed: StoredListedOrigin) -> list[Any]:
    o = listed.origin
    return [listed.lister_id, o.url, o.visit_type, orjson.dumps(dict(o.extra_loader_arguments)).decode(), o.enabled,
            to_db_time(listed.first_seen), to_db_time(listed.last_seen), to_db_time(o.last_update), o.is_fork,
            o.forked_from_url]


def _metrics_params(m: OriginMetrics) -> dict[str, Any]:
    return {"lister_id": m.lister_id, "visit_type": m.visit_type, "computed_at": to_db_time(m.computed_at),
            "origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
            "origins_never_visited": m.origins_never_visited,
            "origins_with_pending_changes": m.origins_with_pending_changes,
            "lag_histogram": orjson.dumps(dict(m.lag_histogram)).decode(), "lag_max": to_db_interval(m.lag_max),
            "visits_in_flight": m.visits_in_flight, "visits_last_hour": m.visits_last_hour,
            "eventful_visits_last_hour": m.eventful_visits_last_hour,
            "uneventful_visits_last_hour": m.uneventful_visits_last_hour,
            "origins_never_successful": m.origins_never_successful}



def _visit_stats_params(stats: VisitStats) -> dict[str, Any]:
    """A visit stats record as the parameters of ``import_visit_stats`` (one row per call)."""
    params = {name: to_db_time(getattr(stats, name)) for name in VISIT_TIMES}
    params.update(url=stats.url, visit_type=stats.visit_type, failure_count=stats.failure_count,
                  last_snapshot=stats.last_snapshot, successful_visits=stats.successful_visits,
                  rate_changes=stats.rate_changes, rate_days=stats.rate_days,
                  rate_evidence=None if stats.rate_evidence is None else orjson.dumps(stats.rate_evidence).decode(),
                  last_visit_status=stats.last_visit_status.value if stats.last_visit_status else None)
    return params


class SQLiteImports:
    def import_task_types(self, task_types: Sequence[TaskType]) -> int:
        checked = checked_records(task_types, lambda t: t.validated(), lambda i, t: f"task type {getattr(t, 'type', i)}")
        with self._write() as conn:
            before = conn.total_changes
            for task_type in checked:
                conn.execute(QUERIES.import_task_type, _task_type_params(task_type))
            return conn.total_changes - before

    def import_tasks(self, tasks: Sequence[Task]) -> int:
        checked = checked_records(tasks, check_task, at_id("task"))
        with self._write() as conn:
            known = set(self._task_types_in(conn, {t.type for t in checked}))
            for task in checked:
                if task.type not in known:
                    raise ValidationError("type", "a known task type (import the task types first)", task.type,
                                          record=f"task {task.id}")
            before = conn.total_changes
            for chunk in chunks(checked):
                rows = [_task_row(t) for t in chunk]
                conflict = conn.execute(QUERIES.import_task_conflict, {"keys": json_array(r[:3] for r in rows)}).fetchone()
                if conflict is not None:
                    raise ConflictError(f"task {conflict['id']} is already another task (of type {conflict['type']}): "
                                        "import into an empty store, or one an earlier import of the same source filled")
                conn.execute(QUERIES.import_tasks, {"rows": json_array(rows)})
            if checked:
                conn.execute(QUERIES.raise_task_ids, {"top": max(t.id for t in checked)})
            return conn.total_changes - before

    def import_task_runs(self, runs: Sequence[TaskRun]) -> int:
        checked = checked_records(runs, check_task_run, at_id("task run"))
        with self._write() as conn:
            before = conn.total_changes
            for chunk in chunks(checked):
                conflict = conn.execute(QUERIES.import_run_conflict,
                                        {"keys": json_array([r.id, r.task] for r in chunk)}).fetchone()
                if conflict is not None:
                    raise ConflictError(f"task run {conflict['id']} is already a run of another task ({conflict['task']}): "
                                        "import into an empty store, or one an earlier import of the same source filled")
                conn.execute(QUERIES.import_task_runs, {"rows": json_array(_run_row(r) for r in chunk)})
            if checked:
                conn.execute(QUERIES.raise_task_run_ids, {"top": max(r.id for r in checked)})
            return conn.total_changes - before

    def import_listers(self, listers: Sequence[Lister]) -> tuple[list[Lister], int]:
        checked = checked_records(listers, check_lister, at_index("lister"))
        stored: list[Lister] = []
        with self._write() as conn:
            before = conn.total_changes
            for lister in checked:
                params = {"name": lister.name, "instance_name": lister.instance_name,
                          "current_state": orjson.dumps(dict(lister.current_state)).decode(),
                          "last_listing_finished_at": to_db_time(lister.last_listing_finished_at),
                          "updated": to_db_time(lister.updated)}
                conn.execute(QUERIES.import_lister, params)
                stored.append(row_to_lister(self.db, conn.execute(
                    "SELECT * FROM lister WHERE name = :name AND instance_name = :instance_name", params).fetchone()))
            return stored, conn.total_changes - before

    def _check_listers(self, conn: Any, ids: set[int]) -> None:
        known = {r["id"] for r in conn.execute(QUERIES.listers_known, {"ids": json_array(sorted(ids))})}
        missing = sorted(ids - known)
        if missing:
            raise NotFoundError("lister", str(missing[0]))

    def import_listed_origins(self, origins: Sequence[StoredListedOrigin]) -> int:
        checked = checked_records(origins, check_stored_listed_origin, at_index("origin"))
        changed = 0
        with self._write() as conn:
            self._check_listers(conn, {o.lister_id for o in checked})
            for chunk in chunks(checked):
                keys = [[r["url"], r["visit_type"]] for r in conn.execute(
                    QUERIES.import_listed_origins, {"rows": json_array(_listing_row(o) for o in chunk)}).fetchall()]
                changed += len(keys)
                if keys:
                    conn.execute(QUERIES.import_sync_visit_stats, {"keys": json_array(keys)})
        return changed

    def import_visit_stats(self, stats: Sequence[VisitStats], now: datetime) -> int:
        checked = checked_records(stats, check_visit_stats, at_index("visit stats"))
        if not isinstance(now, datetime) or now.tzinfo is None:
            raise ValidationError("now", "a time with a zone", now)
        db_now = to_db_time(now)
        with self._write() as conn:
            before = conn.total_changes
            for chunk in chunks(checked):
                conn.executemany(QUERIES.import_visit_stats, [{**_visit_stats_params(
                    s if live_cooldown(s.cooldown_until, now) == s.cooldown_until else replace(s, cooldown_until=None)),
                    "now": db_now} for s in chunk])
            return conn.total_changes - before

    def import_origin_metrics(self, metrics: Sequence[OriginMetrics]) -> int:
        checked = checked_records(metrics, check_origin_metrics, at_index("metrics"))
        with self._write() as conn:
            self._check_listers(conn, {m.lister_id for m in checked})
            before = conn.total_changes
            for m in checked:
                conn.execute(QUERIES.import_origin_metrics, _metrics_params(m))
            return conn.total_changes - before
