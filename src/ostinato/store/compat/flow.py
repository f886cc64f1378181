"""The compat role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`: what the
swh-scheduler protocol's face needs beyond Ostinato's own verbs (see docs/reference/swh-compat.md).

Runs scheduled and found by their executor's id, task statuses set as told, runs to archive,
compat records (JSON objects by namespace and key), and the swh protocol's grab of listings,
its visit stats written as told and its counts (``domain.listing_grabs``). What each verb
accepts is checked first by ``checks.py`` beside this file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from ...domain.errors import ValidationError
from ...domain.listing_grabs import (
    ListingCounts,
    ListingGrab,
    ListingOrder,
    ProtocolVisitStats,
    WalkedOrigin,
    cooldown_bounds,
    fold_protocol_stats,
    take_walked,
)
from ...domain.origin_metrics import MetricClock
from ...domain.origins import ListedOrigin, StoredListedOrigin
from ...domain.tasks import NewTaskRun, Task, TaskRun, TaskStatus
from ...domain.visits import VisitOutcome
from ..dialect import Dialect, chunks
from ..origins.rows import row_to_listed_origin
from ..queries import Queries, statements
from ..tasks.rows import run_of as row_to_run
from ..tasks.rows import task_of as row_to_task
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


@dataclass(slots=True)
class MergeRow:
    """One origin's row of ``merge_visit_stats`` (a record of ``Dialect.records``)."""

    url: str
    visit_type: str
    last_visit: datetime | None
    last_visit_status: str | None
    last_successful: datetime | None
    last_snapshot: bytes | None
    last_scheduled: datetime | None
    queue_position: int | None
    position_offset: int | None
    successive_visits: int | None
    newest_visit: datetime | None


def merge_rows(checked: Sequence[ProtocolVisitStats]) -> list[MergeRow]:
    """The rows ``merge_visit_stats`` writes of checked stats: one per origin (folded), in key order."""
    rows = [MergeRow(u.url, u.visit_type, u.last_visit, u.last_visit_status.value if u.last_visit_status else None,
                     u.last_successful, u.last_snapshot, u.last_scheduled, u.queue_position, u.position_offset,
                     u.successive_visits, newest) for u, newest in fold_protocol_stats(checked)]
    rows.sort(key=lambda r: (r.url, r.visit_type))
    return rows


@dataclass(slots=True)
class RunRow:
    """A run to adopt (``id``) or to add (``task``), for ``adopt_grabbed_runs`` and ``insert_runs``."""

    id: int | None
    task: int | None
    backend_id: str | None
    scheduled: datetime | None
    #: None: none given
    metadata: dict[str, Any] | None


def _metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if metadata is None else dict(metadata)


def with_cooldowns(queries: Queries, template: str) -> str:
    """``template`` (``protocol_walk`` or ``grab_listings``) with the protocol's cooldowns (``protocol_cooldowns``)
    in place of ``{cooldowns}``."""
    return template.replace("{cooldowns}", queries.protocol_cooldowns.rstrip().rstrip(";"))


@lru_cache(maxsize=32)
def walk_statement(queries: Queries, order: ListingOrder, lock: str) -> str:
    """``protocol_walk`` with the protocol's cooldowns, the fragment of the policy's walk (``order``) in place of
    ``{walk}``, and ``lock`` (``grab_lock`` for a real grab, nothing for a dry run) in place of ``{lock}``."""
    walk = _walk_order(queries, order)
    return with_cooldowns(queries, queries.protocol_walk).replace("{walk}", walk.rstrip().rstrip(";")).replace(
        "{lock}", lock)


def _walk_order(queries: Queries, order: ListingOrder) -> str:
    """The fragment (a filter and an ORDER BY of its index) of the policy's walk."""
    return {
        ListingOrder.OLDEST_SCHEDULED_FIRST: queries.walk_oldest_scheduled_first,
        ListingOrder.STOP_AFTER_SUCCESS: queries.walk_stop_after_success,
        ListingOrder.NEVER_VISITED_OLDEST_UPDATE_FIRST: queries.walk_never_visited_oldest_update_first,
        ListingOrder.ALREADY_VISITED_ORDER_BY_LAG: queries.walk_already_visited_order_by_lag,
        ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE: queries.walk_origins_without_last_update,
        ListingOrder.FIRST_VISITS_AFTER_LISTING: queries.walk_first_visits_after_listing,
    }[order]


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
    def schedule_task_runs(self, runs: Sequence[NewTaskRun], *, answer: bool = True) -> list[TaskRun]:
        checked = check_new_runs(runs)
        if not checked:
            return []
        db, q = self.db, self._compat
        # each slot's run as written (without an answer asked, only which slots a grab's run took)
        written: list[TaskRun | bool | None] = [None] * len(checked)
        read_run = (lambda row: row_to_run(db, row)) if answer else (lambda row: True)
        with db.write() as conn:  # adopt_grabbed_runs hashes its rows: no index-driven batch settings
            tasks = sorted({run.task for run in checked})
            # the first run given for a task takes the run a grab opened for it, if any; the others are added
            open_runs = dict(db.tuples(conn, q.open_grabbed_runs, {"ids": db.array(tasks)}))
            unproven = [task for task in tasks if task not in open_runs]  # a task with an open run exists
            if unproven:
                known = {row[0] for row in db.tuples(conn, q.existing_tasks, {"ids": db.array(unproven)})}
                for index, run in enumerate(checked):
                    if run.task not in open_runs and run.task not in known:
                        raise ValidationError(f"runs[{index}].task", "the id of an existing task", run.task)
            adopting: dict[int, int] = {}  # run id -> slot
            for index, run in enumerate(checked):
                run_id = open_runs.pop(run.task, None)
                if run_id is not None:
                    adopting[run_id] = index
            if adopting:
                rows = [RunRow(run_id, None, checked[slot].backend_id, checked[slot].scheduled,
                               _metadata(checked[slot].metadata)) for run_id, slot in adopting.items()]
                for row in conn.execute(q.adopt_grabbed_runs, {"rows": db.records(rows),
                                                               "ids": db.array(adopting)}):
                    written[adopting[row["id"]]] = read_run(row)
            added = [index for index, found in enumerate(written) if found is None]
            if added:
                rows = [RunRow(None, checked[i].task, checked[i].backend_id, checked[i].scheduled,
                               _metadata(checked[i].metadata)) for i in added]
                for index, row in zip(added, conn.execute(q.insert_runs, {"rows": db.records(rows)}), strict=True):
                    written[index] = read_run(row)
        return written if answer else []  # type: ignore[return-value]  # adopted or added: every slot is set

    def get_task_runs_by_backend_id(self, backend_ids: Sequence[str]) -> list[TaskRun]:
        runs: list[TaskRun] = []
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

    def delete_archived_runs(self, task_ids: Sequence[int], run_ids: Sequence[int]) -> int:
        for name, ids in (("task_ids", task_ids), ("run_ids", run_ids)):
            if any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
                raise ValidationError(name, "whole numbers (ids)", list(ids)[:10])
        q = self._compat
        deleted = 0
        with self.db.write() as conn:
            for chunk in chunks(list(run_ids)):
                conn.execute(q.delete_runs, {"run_ids": self.db.array(chunk)})
            for chunk in chunks(list(task_ids)):
                deleted += conn.execute(q.delete_tasks_without_runs, {"task_ids": self.db.array(chunk)}).rowcount
        return deleted

    # -- compat records --------------------------------------------------------------------
    def get_compat_records(self, namespace: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        check_namespace(namespace)
        found: dict[str, dict[str, Any]] = {}
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
        params = {"visit_type": grab.visit_type, "enabled": grab.enabled,
                  "lister_ids": None if grab.lister_ids is None else self.db.array(grab.lister_ids),
                  "sample_percent": grab.sample_percent, "scheduled_before": self.db.time(grab.scheduled_before),
                  "count": grab.count, "now": self.db.time(now),
                  **{name: self.db.time(value) for name, value in cooldown_bounds(grab, now).items()}}
        # a dry run takes no row lock: it writes nothing (but cooldowns it frees, rolled back) and a concurrent
        # grab is not kept from the origins it reads
        lock = "" if dry_run else q.grab_lock
        with self.db.write(batch=True, rollback=dry_run) as conn:
            if grab.enabled:
                for statement in statements(q.protocol_marks_count_nothing):
                    conn.execute(statement)
                # cooldowns of Ostinato's own grab that are over: back into the indexes walked (as its grab does)
                conn.execute(self.db.queries("origins").release_cooldowns, {"visit_type": grab.visit_type,
                                                                             "now": params["now"]})
                chosen = self._walk(conn, grab, params, lock)
            else:  # disabled listings: no index holds them, a scan as the protocol's own store does
                query = f"{with_cooldowns(q, q.grab_listings)}\n{_listing_order(q, grab.order)}\n{q.listing_limit}\n{lock}"
                chosen = [(r["queue_position"], r["tid"], row_to_listed_origin(self.db, r))
                          for r in conn.execute(query, params)]
            if chosen and not dry_run:
                # by the rows the grab locked (the lock keeps their tuple ids valid), not by key lookups
                marked = {tid for _, tid, _ in chosen}
                conn.execute(q.mark_listings_scheduled, {"tids": self.db.array(marked), "now": params["now"]})
                if grab.queue_records is not None and grab.order is ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE:
                    conn.execute(q.raise_queue_position, {"queue_records": check_namespace(grab.queue_records),
                                                          "visit_type": grab.visit_type,
                                                          "position": position_of(p for p, _, _ in chosen)})
        return [listing for _, _, listing in chosen]

    def _walk(self, conn: Any, grab: ListingGrab, params: dict[str, Any],
              lock: str) -> list[tuple[int | None, Any, StoredListedOrigin]]:
        """The grab's listings in its policy's order, each with its origin's queue position and row (tuple id),
        from a walk of the policy's index (``protocol_walk``), walked further (four times as far each time)
        until the first ``count`` are certain."""
        q, read_time = self._compat, self.db.read_time
        query = walk_statement(q, grab.order, lock)
        # as many as asked, no more: what a walk passes it locks until the grab commits, and a concurrent grab
        # skips it (a slack of origins walked beyond the batch left concurrent grabs short, with origins free)
        walk = grab.count
        while True:
            walked = []
            tids: dict[tuple[str, str], Any] = {}  # each origin walked: its row
            for r in self.db.tuples(conn, query, {**params, "walk": walk}):
                origin = WalkedOrigin(r[0], r[1], read_time(r[2]), read_time(r[3]), read_time(r[4]), read_time(r[5]),
                                      read_time(r[6]), r[7])
                tids[r[0], r[1]] = r[16]
                listing = None if r[8] is None else StoredListedOrigin(r[8], ListedOrigin(
                    r[0], r[1], self.db.read_json(r[9]), read_time(r[13]), bool(r[10]),
                    None if r[14] is None else bool(r[14]), r[15]), read_time(r[11]), read_time(r[12]))
                walked.append((origin, listing))
            taken = take_walked(grab.order, walked, grab.count, exhausted=len(tids) < walk)
            if taken is not None:
                return [(origin.queue_position, tids[origin.url, origin.visit_type], listing) for origin, listing in taken]
            walk *= 4

    def merge_visit_stats(self, updates: Sequence[ProtocolVisitStats], *, now: datetime | None = None) -> int:
        checked = check_visit_stats_updates(updates)
        rows = merge_rows(checked)
        with self.db.write(batch=True, horizon=MetricClock(now).since if now is not None else None) as conn:
            for chunk in chunks(rows):
                self.db.execute_records(conn, self._compat.merge_visit_stats, chunk)
        return len(checked)

    def get_protocol_visit_stats(self, keys: Sequence[tuple[str, str]]) -> list[ProtocolVisitStats]:
        found = []
        read_time = self.db.read_time
        for chunk in chunks(list(keys)):
            columns = self.db.columns(urls=[k[0] for k in chunk], visit_types=[k[1] for k in chunk])
            for r in self.db.read(self._compat.protocol_visit_stats, columns):
                status = r["last_visit_status"]
                found.append(ProtocolVisitStats(
                    r["url"], r["visit_type"], read_time(r["last_visit"]), VisitOutcome(status) if status else None,
                    read_time(r["last_successful"]), r["last_snapshot"], read_time(r["last_scheduled"]),
                    r["queue_position"], r["position_offset"], r["successive_visits"]))
        return found

    def list_listings(self, *, lister_id: int | None = None, urls: Sequence[str] | None = None,
                      enabled: bool | None = True, after: tuple[int, str] = (0, ""),
                      limit: int = 1000) -> list[StoredListedOrigin]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationError("limit", "a whole number of 0 or more", limit)
        params = {"lister_id": lister_id, "urls": None if urls is None else self.db.array(urls), "enabled": enabled,
                  "after_lister": after[0], "after_url": after[1], "limit": limit}
        return [row_to_listed_origin(self.db, r) for r in self.db.read(self._compat.listings_page, params)]

    def lister_visit_types(self, lister_id: int) -> list[str]:
        return [r["visit_type"] for r in self.db.read(self._compat.lister_visit_types, {"lister_id": lister_id})]

    def count_listed_origins(self, *, lister_id: int | None = None) -> list[ListingCounts]:
        rows = self.db.read(self._compat.count_listings, {"lister_id": lister_id})
        return [ListingCounts(r["lister_id"], r["visit_type"], r["origins_known"], r["origins_enabled"],
                              r["origins_never_visited"], r["origins_with_pending_changes"]) for r in rows]
