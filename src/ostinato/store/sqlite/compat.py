"""The SQLite store's verbs for the compatibility faces (see docs/reference/swh-compat.md):
runs scheduled and found by their executor's id, task statuses set as told, runs to archive,
compat records, and the swh protocol's grab of listings, visit stats and counts
(``domain.listing_grabs``).

Mixed into :class:`~ostinato.store.sqlite.store.SQLiteStore`, whose connection and write
transactions it uses; its SQL is in ``compat_queries.sql``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

import orjson

from ...domain.errors import ValidationError
from ...domain.tasks import NewTaskRun, Task, TaskRun, TaskStatus
from ...domain.listing_grabs import ListingCounts, ListingGrab, ListingOrder, VisitStatsUpdate, cooldown_bounds
from ...domain.origins import StoredListedOrigin
from ..compat_checks import (
    check_namespace,
    check_new_runs,
    check_page,
    check_range,
    check_records,
    check_visit_stats_updates,
    position_of,
)
from ..queries import Queries
from .codec import chunks, json_array, to_db_time

QUERIES = Queries(Path(__file__).parent / "compat_queries.sql")


class SQLiteCompat:
    def schedule_task_runs(self, runs: Sequence[NewTaskRun]) -> list[TaskRun]:
        from .store import _row_to_run

        checked = check_new_runs(runs)
        answer = []
        with self._write() as conn:  # type: ignore[attr-defined]
            for index, run in enumerate(checked):
                params = {"task": run.task, "backend_id": run.backend_id, "scheduled": to_db_time(run.scheduled),
                          "metadata": orjson.dumps(dict(run.metadata)).decode()}
                if conn.execute(QUERIES.task_exists, params).fetchone() is None:
                    raise ValidationError(f"runs[{index}].task", "the id of an existing task", run.task)
                row = conn.execute(QUERIES.adopt_grabbed_run, params).fetchone()
                if row is None:
                    row = conn.execute(QUERIES.insert_run, params).fetchone()
                answer.append(_row_to_run(row))
        return answer

    def get_task_runs_by_backend_id(self, backend_ids: Sequence[str]) -> list[TaskRun]:
        from .store import _row_to_run

        runs = []
        for chunk in chunks(list(backend_ids)):
            runs.extend(_row_to_run(r) for r in self._read(QUERIES.runs_by_backend_id, {"backend_ids": json_array(chunk)}))  # type: ignore[attr-defined]
        return sorted(runs, key=lambda r: r.id)

    def overwrite_task_status(self, ids: Sequence[int], status: TaskStatus, *, next_run: datetime | None = None,
                              except_completed_before: datetime | None = None) -> int:
        if not isinstance(status, TaskStatus):
            raise ValidationError("status", "a task status", status)
        changed = 0
        with self._write() as conn:  # type: ignore[attr-defined]
            for chunk in chunks(list(ids)):
                changed += conn.execute(QUERIES.overwrite_task_status, {
                    "ids": json_array(chunk), "status": status.value, "next_run": to_db_time(next_run),
                    "except_completed_before": to_db_time(except_completed_before)}).rowcount
        return changed

    def list_runs_to_archive(self, after: datetime, before: datetime, *, after_run: tuple[int, int] = (0, 0),
                             limit: int = 1000) -> list[tuple[Task, TaskRun]]:
        from .store import _row_to_run, _row_to_task

        check_range(after, before)
        after_task, after_id = check_page(after_run, limit)
        rows = self._read(QUERIES.runs_to_archive, {  # type: ignore[attr-defined]
            "after": to_db_time(after), "before": to_db_time(before), "after_task": after_task,
            "after_run": after_id, "limit": limit})
        return [(_row_to_task(r), _row_to_run(r, prefix="run_")) for r in rows]

    def get_compat_records(self, namespace: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        check_namespace(namespace)
        found = {}
        for chunk in chunks(list(keys)):
            for row in self._read(QUERIES.get_compat_records, {"namespace": namespace, "keys": json_array(chunk)}):  # type: ignore[attr-defined]
                found[row["key"]] = orjson.loads(row["value"])
        return found

    def list_compat_records(self, namespace: str, *, after: str = "", limit: int = 1000) -> dict[str, dict[str, Any]]:
        check_namespace(namespace)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationError("limit", "a whole number of 0 or more", limit)
        rows = self._read(QUERIES.list_compat_records, {"namespace": namespace, "after": after, "limit": limit})  # type: ignore[attr-defined]
        return {row["key"]: orjson.loads(row["value"]) for row in rows}

    def put_compat_records(self, namespace: str, records: Mapping[str, Mapping[str, Any] | None]) -> int:
        check_namespace(namespace)
        check_records(records)
        with self._write() as conn:  # type: ignore[attr-defined]
            for key, value in records.items():
                if value is None:
                    conn.execute(QUERIES.delete_compat_record, {"namespace": namespace, "key": key})
                else:
                    conn.execute(QUERIES.put_compat_record, {"namespace": namespace, "key": key,
                                                             "value": orjson.dumps(dict(value)).decode()})
        return len(records)

    # -- the swh protocol's listings and visit stats (domain.listing_grabs) -----------------
    def grab_listed_origins(self, grab: ListingGrab, now: datetime, *, dry_run: bool = False) -> list[StoredListedOrigin]:
        from ..origins.rows import row_to_listed_origin

        grab = grab.validated()
        if grab.count == 0:
            return []
        bounds = {name: to_db_time(value) for name, value in cooldown_bounds(grab, now).items()}
        params = {"visit_type": grab.visit_type, "enabled": grab.enabled, "lister_id": grab.lister_id,
                  "position_records": grab.position_records, "sample_percent": grab.sample_percent,
                  "scheduled_before": to_db_time(grab.scheduled_before), "count": grab.count, **bounds}
        query = f"{QUERIES.grab_listings}\n{getattr(QUERIES, 'listing_order_' + grab.order.value)}\nLIMIT :count"
        with self._write(rollback=dry_run) as conn:  # type: ignore[attr-defined]
            rows = conn.execute(query, params).fetchall()
            if rows:
                keys = sorted({(r["url"], r["visit_type"]) for r in rows})
                conn.execute(QUERIES.mark_listings_scheduled, {"keys": json_array(keys), "now": to_db_time(now)})
                if grab.queue_records is not None and grab.order is ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE:
                    conn.execute(QUERIES.raise_queue_position, {"queue_records": check_namespace(grab.queue_records),
                                                                "visit_type": grab.visit_type,
                                                                "position": position_of(rows)})
        return [row_to_listed_origin(self.db, r) for r in rows]

    def merge_visit_stats(self, updates: Sequence[VisitStatsUpdate]) -> int:
        checked = check_visit_stats_updates(updates)
        with self._write() as conn:  # type: ignore[attr-defined]
            conn.executemany(QUERIES.merge_visit_stats, [{
                "url": u.url, "visit_type": u.visit_type, "last_visit": to_db_time(u.last_visit),
                "last_visit_status": u.last_visit_status.value if u.last_visit_status else None,
                "last_successful": to_db_time(u.last_successful), "last_snapshot": u.last_snapshot,
                "last_scheduled": to_db_time(u.last_scheduled)} for u in checked])
        return len(checked)

    def count_listed_origins(self, *, lister_id: int | None = None) -> list[ListingCounts]:
        rows = self._read(QUERIES.count_listings, {"lister_id": lister_id})  # type: ignore[attr-defined]
        return [ListingCounts(r["lister_id"], r["visit_type"], r["origins_known"], r["origins_enabled"],
                              r["origins_never_visited"], r["origins_with_pending_changes"]) for r in rows]
