"""The origins role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`.

Listers and their listings, the visit stats the journal's statuses feed (the
feedback loop), the scheduling policies' grab, change_rate_optimal's threshold and
rate samples, and the per-lister metrics (see docs/design/origins.md). Batches go
in chunks of :data:`~ostinato.store.dialect.CHUNK`, one statement each: keys as
parallel columns (``db.columns``), records as one parameter (``db.records``) or as the
dialect applies a batch of them (``db.execute_records``).
The grab and the feedback are the hot paths: no per-row statement, rows of the
grab read by position.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from ...domain.change_rates import RateSample, RevisitThreshold
from ...domain.errors import ConflictError, NotFoundError, ValidationError
from ...domain.origin_metrics import DAY_BOUNDS, HOUR_BOUNDS, MetricClock, OriginMetrics, fold_metrics
from ...domain.origins import ListedOrigin, Lister, StoredListedOrigin
from ...domain.policy_picks import POLICY_PICKS, moments
from ...domain.politeness import Politeness, check_politeness_setting
from ...domain.visit_changes import VisitChanges
from ...domain.visit_policies import GrabOptions, GrabRequest, NextVisit
from ...domain.visits import FeedbackPolicy, VisitStats, VisitStatus, check_visit_statuses, plan_visit_feedback
from ..dialect import Dialect, chunks
from ..queries import Queries, statements
from .batches import (
    FEEDBACK_PART,
    SAMPLE_OVERREAD,
    SMALL_TABLE,
    PickedOrigin,
    changes_seen,
    check_limit,
    check_revisit_threshold,
    latest_listed,
    next_visit,
    run_picks,
    statuses_by_key,
    thin_sample,
)
from .interface import OriginStore
from .picks import pick_statement
from .polite_grab import PoliteGrab, read_politeness
from .rows import (
    metrics_params,
    newest_changes,
    rate_evidence,
    row_to_listed_origin,
    row_to_lister,
    row_to_metrics,
    row_to_threshold,
    row_to_visit_changes,
    row_to_visit_stats,
    tuple_to_visit_stats,
)

#: one metrics pass at a time
METRICS_LOCK = "origin-metrics"


@lru_cache(maxsize=64)
def grab_statements(template: str, pick: str) -> tuple[str, ...]:
    """The statements of a grab by one pick: ``grab_picked`` with the pick in place of ``{pick}``.
    The first returns the picked rows; any others mark them, given their urls."""
    pick = pick.rstrip().rstrip(";")
    return tuple(statement.replace("{pick}", pick) for statement in statements(template))


class OriginFlow(OriginStore):
    db: Dialect

    @property
    def _origins(self) -> Queries:
        return self.db.queries("origins")

    def _keys(self, keys: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """(url, visit_type) keys as the parameters of a batch."""
        return self.db.columns(urls=[k[0] for k in keys], visit_types=[k[1] for k in keys])

    # -- listers and listed origins ------------------------------------------
    def get_or_create_lister(self, name: str, instance_name: str, now: datetime) -> Lister:
        q = self._origins
        params = {"name": name, "instance_name": instance_name}
        with self.db.write() as conn:
            row = conn.execute(q.get_lister, params).fetchone()
            if row is None:
                conn.execute(q.insert_lister, {**params, "now": self.db.time(now)})
                row = conn.execute(q.get_lister, params).fetchone()
            return row_to_lister(self.db, row)

    def list_listers(self) -> list[Lister]:
        return [row_to_lister(self.db, r) for r in self.db.read(self._origins.list_listers)]

    def update_lister(self, lister: Lister, *, current_state=None, last_listing_finished_at=None, now: datetime) -> Lister:
        params = {
            "id": lister.id,
            "expected_updated": self.db.time(lister.updated),
            "current_state": self.db.json(current_state if current_state is not None else lister.current_state),
            "last_listing_finished_at": self.db.time(last_listing_finished_at or lister.last_listing_finished_at),
            "now": self.db.time(lister.next_token(now)),
        }
        with self.db.write() as conn:
            row = conn.execute(self._origins.update_lister, params).fetchone()
        if row is None:
            raise ConflictError(f"lister {lister.name}/{lister.instance_name} was changed by someone else: read it again")
        return row_to_lister(self.db, row)

    def delete_lister(self, lister_id: int) -> bool:
        q = self._origins
        with self.db.write() as conn:
            if conn.execute(q.lister_lists_origins, {"id": lister_id}).fetchone() is not None:
                raise ConflictError(f"lister {lister_id} lists origins: it is kept with their history")
            conn.execute(q.delete_lister_metrics, {"id": lister_id})
            return conn.execute(q.delete_lister, {"id": lister_id}).rowcount > 0

    def record_listed_origins(self, lister_id: int, origins: Sequence[ListedOrigin], now: datetime, *,
                              touch_last_seen: bool = True) -> int:
        return self._record_listed(lister_id, origins, now, touch_last_seen, None)

    def record_listings(self, lister_id: int, origins: Sequence[ListedOrigin], now: datetime, *,
                        touch_last_seen: bool = True) -> list[StoredListedOrigin]:
        answer: list[StoredListedOrigin] = []
        self._record_listed(lister_id, origins, now, touch_last_seen, answer)
        return answer

    def _record_listed(self, lister_id: int, origins: Sequence[ListedOrigin], now: datetime, touch_last_seen: bool,
                       answer: list[StoredListedOrigin] | None) -> int:
        """The listings written in one transaction, chunk by chunk; ``answer`` gets them as stored (the last
        statement of ``record_listed_origins`` reads them). Where the dialect's statement saw other listers'
        listings of an origin, whose writers may have written at the same time, ``restate_listed_origins``
        then makes its scheduling row what all its listings say (PostgreSQL; SQLite's writers take turns)."""
        q = self._origins
        unique = latest_listed(origins)
        params = {"lister_id": lister_id, "now": self.db.time(now), "touch_last_seen": bool(touch_last_seen),
                  "answer": answer is not None}
        with self.db.write(batch=True, horizon=MetricClock(now).since) as conn:
            if conn.execute(q.lister_exists, {"id": lister_id}).fetchone() is None:
                raise NotFoundError("lister", str(lister_id))
            restate = statements(q.restate_listed_origins)  # where another lister may have written meanwhile
            for chunk in chunks(unique):
                batch = {**params, "rows": self.db.records(chunk)}
                for statement in statements(q.record_listed_origins):
                    cursor = conn.execute(statement, batch)
                rows = cursor.fetchall() if answer is not None or restate else []
                if answer is not None:
                    answer.extend(row_to_listed_origin(self.db, row) for row in rows)
                shared = [row for row in rows if row["shared"]] if restate else []
                for statement in restate if shared else ():
                    conn.execute(statement, {"lister_id": lister_id, **self.db.columns(
                        urls=[row["url"] for row in shared], visit_types=[row["visit_type"] for row in shared])})
        return len(unique)

    def get_listings(self, keys: Sequence[tuple[int, str, str]]) -> list[StoredListedOrigin]:
        found: list[StoredListedOrigin] = []
        for chunk in chunks(list(keys)):
            columns = self.db.columns(lister_ids=[k[0] for k in chunk], urls=[k[1] for k in chunk],
                                      visit_types=[k[2] for k in chunk])
            found.extend(row_to_listed_origin(self.db, r) for r in self.db.read(self._origins.listings_in, columns))
        return found

    def get_listed_origins(self, *, url=None, lister_id=None, after=None, limit=1000) -> list[StoredListedOrigin]:
        after_url, after_type, after_lister = after or ("", "", 0)
        params = {"url": url, "lister_id": lister_id, "after_url": after_url, "after_type": after_type,
                  "after_lister": after_lister, "limit": limit}
        q = self._origins
        query = (q.search_listed_origins if url is None and lister_id is None else q.listed_origins_of_url
                 if lister_id is None else q.listed_origins_of_lister if url is None else q.listed_origins_of_url_and_lister)
        return [row_to_listed_origin(self.db, r) for r in self.db.read(query, params)]

    # -- visit stats and the feedback loop ----------------------------------
    def record_visit_statuses(self, statuses: Sequence[VisitStatus], policy: FeedbackPolicy, *,
                              now: datetime | None = None) -> int:
        q = self._origins
        statuses = check_visit_statuses(statuses)
        changed = 0
        horizon = MetricClock(now).since if now is not None else None
        with self.db.write(batch=True, horizon=horizon) as conn:
            thresholds = {r["visit_type"]: r["threshold"] for r in conn.execute(q.revisit_thresholds)}
            for chunk in chunks(list(statuses)):
                keys = sorted({(s.origin, s.type) for s in chunk})
                by_key = self._keys(keys)
                rows = self.db.tuples(conn, q.visit_stats_for_update, by_key)
                timed = sorted({(s.origin, s.type) for s in chunk if s.change_times is not None})
                with self.db.pipeline(conn):  # the rules of a part while the server writes the one before
                    # where visits saw their changes' times, the newest change the last one saw (bursts are
                    # counted from it), off the stats' rows: for those statuses only, in a statement of its own
                    # once the stats are locked (it sees what another writer of these origins committed
                    # meanwhile), sent before the stats' rows are made and read after
                    seen_rows = self.db.send(conn, q.visit_changes_in, by_key if len(timed) == len(keys)
                                             else self._keys(timed)) if timed else None
                    seen = changes_seen(chunk)  # what the visits saw: written after that read, while the rules run
                    current = {(r[0], r[1]): tuple_to_visit_stats(self.db, r) for r in rows}
                    newest_seen = newest_changes(self.db, seen_rows()) if seen_rows is not None else None
                    if seen:
                        self.db.execute_records(conn, q.upsert_visit_changes, seen)
                    for part in statuses_by_key(chunk, FEEDBACK_PART):
                        plan = plan_visit_feedback(current, part, policy, now, thresholds, newest_seen)
                        if plan.stats:
                            self.db.execute_records(conn, q.upsert_visit_stats, plan.stats)
                        if plan.disable:
                            disable = self._keys(plan.disable)
                            conn.execute(q.disable_listed_origins, disable)
                            conn.execute(q.disable_visit_stats, disable)
                        changed += plan.changed
        return changed

    def get_visit_stats(self, keys: Sequence[tuple[str, str]]) -> list[VisitStats]:
        return [row_to_visit_stats(self.db, r) for chunk in chunks(list(keys))
                for r in self.db.read(self._origins.visit_stats_in, self._keys(chunk))]

    def get_visit_changes(self, keys: Sequence[tuple[str, str]]) -> list[VisitChanges]:
        return [row_to_visit_changes(self.db, r) for chunk in chunks(list(keys))
                for r in self.db.read(self._origins.visit_changes_in, self._keys(chunk))]

    # -- change_rate_optimal's threshold ---------------------------------------
    def get_revisit_thresholds(self) -> dict[str, RevisitThreshold]:
        return {r["visit_type"]: row_to_threshold(self.db, r) for r in self.db.read(self._origins.revisit_thresholds)}

    def set_revisit_threshold(self, threshold: RevisitThreshold) -> None:
        check_revisit_threshold(threshold)
        with self.db.write() as conn:
            conn.execute(self._origins.upsert_revisit_threshold, {
                "visit_type": threshold.visit_type, "threshold": float(threshold.threshold),
                "visits_per_day": float(threshold.visits_per_day), "origins": threshold.origins,
                "computed_at": self.db.time(threshold.computed_at)})

    def sample_change_rates(self, visit_type: str, size: int, *, seed: int = 0) -> RateSample:
        q = self._origins
        [estimate] = self.db.read(q.table_size_estimate)
        rows = estimate["rows"]
        percent = 100.0 if rows < SMALL_TABLE else min(100.0, 100.0 * size * SAMPLE_OVERREAD / rows)
        params = {"visit_type": visit_type, "percent": percent, "seed": seed, "rows": rows}
        found = [(r["rate_changes"], r["rate_days"], rate_evidence(self.db, r["rate_evidence"]))
                 for r in self.db.read(q.sample_change_rates, params)]
        enabled = len(found) if percent >= 100.0 else round(len(found) * 100.0 / percent)
        return RateSample(thin_sample(found, size, seed), enabled)

    # -- scheduling policies ------------------------------------------------
    def grab_next_visits(self, visit_type: str, requests: Sequence[GrabRequest], now: datetime, *,
                         options: GrabOptions = GrabOptions(), dry_run: bool = False,
                         limit: int | None = None) -> list[NextVisit]:
        q = self._origins
        requests = [r.validated() for r in requests]
        total = check_limit(limit, requests)
        options = options.validated()
        time, read_json, read_time = self.db.time, self.db.read_json, self.db.read_time
        with self.db.write(rollback=dry_run, horizon=MetricClock(now).since) as conn, self.db.pipeline(conn):
            # the settings and the release go with the first pick: one round trip instead of three
            for statement in statements(q.index_ordered_picks):
                conn.execute(statement)
            conn.execute(q.release_cooldowns, {"visit_type": visit_type, "now": time(now)})
            # the grab's moments the picks' time conditions compare with (now among them)
            params = {**{name: time(moment) for name, moment in moments(now, options).items()},
                      "visit_type": visit_type, "lister_id": options.lister_id,
                      "cooldown_until": time(now + options.in_flight_timeout)}

            # a dry run whose one pick no later pick could repeat marks nothing: it writes no row version
            template = q.dry_picked if dry_run and len(requests) == 1 and len(POLICY_PICKS[requests[0].policy]) == 1 \
                else q.grab_picked
            politeness = read_politeness(self.db, conn, q, visit_type)
            polite = None if politeness.off else PoliteGrab(self.db, conn, q, politeness, params, now)

            def pick(name: str, limit: int) -> list[PickedOrigin]:
                walk = pick_statement(q, self.db.name, name)
                if polite is not None:
                    return [(r[0], r[1], read_json(r[2]), read_time(r[3])) for r in polite.pick(walk, limit)]
                grab, *marking = grab_statements(template, walk)
                rows = self.db.tuples(conn, grab, {**params, "limit": limit})
                if rows and marking:
                    picked = {**params, "urls": self.db.array(r[0] for r in rows)}
                    for statement in marking:
                        conn.execute(statement, picked)
                return [(r[0], r[1], read_json(r[2]), read_time(r[3])) for r in rows]

            picked = run_picks(requests, total, pick)
            if not picked:
                return []
            ids = sorted({row[1] for _, row in picked if row[1] is not None})
            listers = {r[0]: (r[1], r[2]) for r in self.db.tuples(conn, q.listers_named, {"ids": self.db.array(ids)})}
        return [next_visit(visit_type, policy, *row, listers) for policy, row in picked]

    # -- politeness per host ------------------------------------------------
    def get_politeness(self, visit_type: str) -> Politeness:
        q = self._origins
        with self.db.write(rollback=True) as conn:
            if conn.execute(q.loader_type_exists, {"visit_type": visit_type}).fetchone() is None:
                raise NotFoundError("visit type", visit_type)
            return read_politeness(self.db, conn, q, visit_type)

    def set_visit_type_politeness(self, visit_type: str, *, max_concurrent_per_host: int | None = None,
                                  min_spacing_per_host: timedelta | None = None) -> Politeness:
        check_politeness_setting(visit_type, None, max_concurrent_per_host, min_spacing_per_host)
        return self._set_politeness(self._origins.upsert_visit_type_politeness, {
            "visit_type": visit_type, "max_concurrent": max_concurrent_per_host,
            "min_spacing": None if min_spacing_per_host is None else min_spacing_per_host.total_seconds()})

    def set_host_politeness(self, visit_type: str, host: str, *, max_concurrent: int | None = None,
                            min_spacing: timedelta | None = None) -> Politeness:
        check_politeness_setting(visit_type, host, max_concurrent, min_spacing)
        return self._set_politeness(self._origins.upsert_host_politeness, {
            "visit_type": visit_type, "host": host, "max_concurrent": max_concurrent,
            "min_spacing": None if min_spacing is None else min_spacing.total_seconds()})

    def _set_politeness(self, query: str, params: dict[str, Any]) -> Politeness:
        q = self._origins
        with self.db.write() as conn:
            if conn.execute(q.loader_type_exists, params).fetchone() is None:
                raise ValidationError("visit_type", "a visit type with a loader, a task type load-<visit type>",
                                      params["visit_type"])
            conn.execute(query, params)
            return read_politeness(self.db, conn, q, params["visit_type"])

    def release_visits(self, keys: Sequence[tuple[str, str]]) -> int:
        released = 0
        with self.db.write() as conn:
            for chunk in chunks(list(keys)):
                released += conn.execute(self._origins.release_grabbed, self._keys(chunk)).rowcount
        return released

    # -- metrics ------------------------------------------------------------
    def update_origin_metrics(self, now: datetime, *, recount: bool = False) -> list[OriginMetrics]:
        q, db = self._origins, self.db
        clock = MetricClock(now)
        params = {"now": db.time(now), "since": db.time(clock.since), "until": db.time(clock.until),
                  "horizon": db.time(clock.since), "hour_bounds": db.array(HOUR_BOUNDS),
                  "day_bounds": db.array(DAY_BOUNDS),
                  **{k: db.time(v) if isinstance(v, datetime) else v for k, v in clock.params().items()}}
        with db.write() as conn:
            db.lock(conn, METRICS_LOCK)
            if recount:  # every row read, and the cells made again from them
                conn.execute(q.lock_metric_cells)
                rows = [dict(r) for query in (q.single_listed_metrics, q.multi_listed_metrics)
                        for r in conn.execute(query, params)]
                for statement in statements(q.rebuild_metric_cells):
                    conn.execute(statement, params)
            else:  # the cells the writes kept, and the origins several listers list
                conn.execute(q.prune_metric_cells, params)
                rows = [dict(r) for query in (q.metrics_from_cells, q.multi_listed_metrics)
                        for r in conn.execute(query, params)]
            for m in fold_metrics(now, rows):
                conn.execute(q.upsert_origin_metrics, metrics_params(db, m))
        return self.get_origin_metrics()

    def get_origin_metrics(self, *, lister_id: int | None = None, visit_type: str | None = None) -> list[OriginMetrics]:
        rows = self.db.read(self._origins.search_origin_metrics, {"lister_id": lister_id, "visit_type": visit_type})
        return [row_to_metrics(self.db, r) for r in rows]
