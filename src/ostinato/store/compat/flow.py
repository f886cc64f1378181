"""The compat role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`: what the
swh-scheduler protocol's face needs beyond Ostinato's own verbs (see docs/reference/swh-compat.md).

Runs scheduled and found by their executor's id, task statuses set as told, runs to archive,
compat records (JSON objects by namespace and key), and the swh protocol's grab of listings,
its visit stats written as told and its counts (``domain.listing_grabs``). What each verb
accepts is checked first by ``checks.py`` beside this file.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Sequence

from ...domain.errors import ValidationError
from ...domain.listing_grabs import ListingCounts, ListingGrab, ListingOrder, VisitStatsUpdate, cooldown_bounds
from ...domain.origins import StoredListedOrigin
from ...domain.tasks import NewTaskRun, Task, TaskRun, TaskStatus
from ..origins.rows import row_to_listed_origin
from ..tasks.rows import run_of as row_to_run, task_of as row_to_task
from ..dialect import Dialect, chunks
from ..queries import Queries
from .checks import (
    check_namespace,
    check_new_runs,
    check_page,
    check_range,
    check_records,
    check_visit_stats_updates,
    position_of,
)
from .interface import CompatStore


def _listing_order(queries: Queries, order: ListingOrder) -> str:
    """The fragment (a filter and an ORDER BY) of the grab's policy."""
    return {
        ListingOrder.OLDEST_SCHEDULED_FIRST: queries.listing_order_oldest_scheduled_first,
        ListingOrder.STOP_AFTER_SUCCESS: queries.listing_order_stop_after_success,
        ListingOrder.NEVER_VISITED_OLDEST_UPDATE_FIRST: queries.listing_order_never_visited_oldest_update_first,
        ListingOrder.ALREADY_VISITED_ORDER_BY_LAG: queries.listing_order_already_visited_order_by_lag,
        ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE: queries.listing_order_origins_without_last_update,
        ListingOrder.FIRST_VISITS_AFTER_LISTING: queries.listing_order_first_visits_after_listing,
    }[order]


class CompatFlow(CompatStore):
    db: Dialect

    @property
    def _compat(self) -> Queries:
        return self.db.queries("compat")

    # -- task runs and statuses as the protocol's executors tell them -----------------------
    def schedule_task_runs(self, runs: Sequence[NewTaskRun]) -> list[TaskRun]:
        checked = check_new_runs(runs)
        q = self._compat
        answer = []
        with self.db.write() as conn:
            for index, run in enumerate(checked):
                params = {"task": run.task, "backend_id": run.backend_id, "scheduled": self.db.time(run.scheduled),
                          "metadata": self.db.json(None if run.metadata is None else dict(run.metadata))}
                if conn.execute(q.task_exists, params).fetchone() is None:
                    raise ValidationError(f"runs[{index}].task", "the id of an existing task", run.task)
                row = conn.execute(q.adopt_grabbed_run, params).fetchone()
                if row is None:
                    row = conn.execute(q.insert_run, params).fetchone()
                answer.append(row_to_run(self.db, row))
        return answer

    def get_task_runs_by_backend_id(self, backend_ids: Sequence[str]) -> list[TaskRun]:
        runs = []
        for chunk in chunks(list(backend_ids)):
            rows = self.db.read(self._compat.runs_by_backend_id, {"backend_ids": self.db.array(chunk)})
            runs.extend(row_to_run(self.db, r) for r in rows)
        return sorted(runs, key=lambda r: r.id)

    def overwrite_task_status(self, ids: Sequence[int], status: TaskStatus, *, next_run: datetime | None = None,
                              except_completed_before: datetime | None = None) -> int:
        if not isinstance(status, TaskStatus):
            raise ValidationError("status", "a task status", status)
        params = {"status": status.value, "next_run": self.db.time(next_run),
                  "except_completed_before": self.db.time(except_completed_before)}
        changed = 0
        with self.db.write() as conn:
            for chunk in chunks(list(ids)):
                changed += conn.execute(self._compat.overwrite_task_status,
                                        {**params, "ids": self.db.array(chunk)}).rowcount
        return changed

    def list_runs_to_archive(self, after: datetime, before: datetime, *, after_run: tuple[int, int] = (0, 0),
                             limit: int = 1000) -> list[tuple[Task, TaskRun]]:
        check_range(after, before)
        after_task, after_id = check_page(after_run, limit)
        rows = self.db.read(self._compat.runs_to_archive, {
            "after": self.db.time(after), "before": self.db.time(before), "after_task": after_task,
            "after_run": after_id, "limit": limit})
        return [(row_to_task(self.db, r), row_to_run(self.db, r, prefix="run_")) for r in rows]

    # -- compat records --------------------------------------------------------------------
    def get_compat_records(self, namespace: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        check_namespace(namespace)
        found = {}
        for chunk in chunks(list(keys)):
            rows = self.db.read(self._compat.get_compat_records, {"namespace": namespace, "keys": self.db.array(chunk)})
            found.update((row["key"], self.db.read_json(row["value"])) for row in rows)
        return found

    def list_compat_records(self, namespace: str, *, after: str = "", limit: int = 1000) -> dict[str, dict[str, Any]]:
        check_namespace(namespace)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationError("limit", "a whole number of 0 or more", limit)
        rows = self.db.read(self._compat.list_compat_records, {"namespace": namespace, "after": after, "limit": limit})
        return {row["key"]: self.db.read_json(row["value"]) for row in rows}

    def put_compat_records(self, namespace: str, records: Mapping[str, Mapping[str, Any] | None]) -> int:
        check_namespace(namespace)
        check_records(records)
        q = self._compat
        with self.db.write() as conn:
            for key, value in records.items():
                if value is None:
                    conn.execute(q.delete_compat_record, {"namespace": namespace, "key": key})
                else:
                    conn.execute(q.put_compat_record, {"namespace": namespace, "key": key,
                                                       "value": self.db.json(dict(value))})
        return len(records)

    # -- the swh protocol's listings and visit stats (domain.listing_grabs) -----------------
    def grab_listed_origins(self, grab: ListingGrab, now: datetime, *, dry_run: bool = False) -> list[StoredListedOrigin]:
        grab = grab.validated()
        if grab.count == 0:
            return []
        q = self._compat
        bounds = {name: self.db.time(value) for name, value in cooldown_bounds(grab, now).items()}
        params = {"visit_type": grab.visit_type, "enabled": grab.enabled,
                  "lister_ids": None if grab.lister_ids is None else self.db.array(grab.lister_ids),
                  "position_records": grab.position_records, "sample_percent": grab.sample_percent,
                  "scheduled_before": self.db.time(grab.scheduled_before), "count": grab.count, **bounds}
        query = f"{q.grab_listings}\n{_listing_order(q, grab.order)}\n{q.listing_limit}"
        with self.db.write(rollback=dry_run) as conn:
            rows = conn.execute(query, params).fetchall()
            if rows and not dry_run:
                keys = sorted({(r["url"], r["visit_type"]) for r in rows})
                conn.execute(q.mark_listings_scheduled, {
                    **self.db.columns(urls=[k[0] for k in keys], visit_types=[k[1] for k in keys]),
                    "now": self.db.time(now)})
                if grab.queue_records is not None and grab.order is ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE:
                    conn.execute(q.raise_queue_position, {"queue_records": check_namespace(grab.queue_records),
                                                          "visit_type": grab.visit_type,
                                                          "position": position_of(rows)})
        return [row_to_listed_origin(self.db, r) for r in rows]

    def merge_visit_stats(self, updates: Sequence[VisitStatsUpdate]) -> int:
        checked = check_visit_stats_updates(updates)
        time = self.db.time
        rows = [{"url": u.url, "visit_type": u.visit_type, "last_visit": time(u.last_visit),
                 "last_visit_status": u.last_visit_status.value if u.last_visit_status else None,
                 "last_successful": time(u.last_successful), "last_snapshot": u.last_snapshot,
                 "last_scheduled": time(u.last_scheduled)} for u in checked]
        with self.db.write() as conn:
            # one origin may come twice, its updates applied in order: one statement per update
            self.db.execute_many(conn, self._compat.merge_visit_stats, rows)
        return len(checked)

    def count_listed_origins(self, *, lister_id: int | None = None) -> list[ListingCounts]:
        rows = self.db.read(self._compat.count_listings, {"lister_id": lister_id})
        return [ListingCounts(r["lister_id"], r["visit_type"], r["origins_known"], r["origins_enabled"],
                              r["origins_never_visited"], r["origins_with_pending_changes"]) for r in rows]
