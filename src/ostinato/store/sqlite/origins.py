"""The SQLite store's origin side: listers, listed origins, visit stats and the
feedback loop, the scheduling policies' grab, and per-lister metrics.

Mixed into :class:`~ostinato.store.sqlite.store.SQLiteStore`, whose connection
and write transactions it uses; its SQL is in ``origin_queries.sql``.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

import orjson

from ...domain.change_rates import RateSample, RevisitThreshold
from ...domain.errors import ConflictError, NotFoundError
from ...domain.origin_metrics import ACTIVITY_WINDOW, LAG_BOUNDS, OriginMetrics, fold_metrics, in_bucket_order
from ...domain.origins import ListedOrigin, Lister, StoredListedOrigin
from ...domain.visit_policies import GrabOptions, GrabRequest, NextVisit
from ...domain.visits import (
    FeedbackPolicy, VisitOutcome, VisitStats, VisitStatus, check_visit_statuses, plan_visit_feedback,
)
from ..common import (
    SAMPLE_OVERREAD,
    SMALL_TABLE,
    check_limit,
    check_revisit_threshold,
    latest_listed,
    next_visit,
    run_picks,
    thin_sample,
)
from ..queries import Queries
from .codec import chunks, from_db_interval, from_db_time, json_array, to_db_interval, to_db_time

QUERIES = Queries(Path(__file__).parent / "origin_queries.sql")

_VISIT_TIMES = ("last_visit", "last_successful", "last_eventful", "last_uneventful", "last_scheduled",
                "next_visit_target", "last_status_date", "cooldown_until", "next_optimal_visit")


def _row_to_lister(row: sqlite3.Row) -> Lister:
    return Lister(row["id"], row["name"], row["instance_name"], orjson.loads(row["current_state"]),
                  from_db_time(row["last_listing_finished_at"]), datetime.fromisoformat(row["updated"]))


def _row_to_listed_origin(row: sqlite3.Row) -> StoredListedOrigin:
    origin = ListedOrigin(
        row["url"], row["visit_type"], orjson.loads(row["extra_loader_arguments"]), from_db_time(row["last_update"]),
        bool(row["enabled"]), None if row["is_fork"] is None else bool(row["is_fork"]), row["forked_from_url"],
    )
    return StoredListedOrigin(row["lister_id"], origin, datetime.fromisoformat(row["first_seen"]),
                              datetime.fromisoformat(row["last_seen"]))


def _row_to_visit_stats(row: sqlite3.Row) -> VisitStats:
    times = {name: from_db_time(row[name]) for name in _VISIT_TIMES}
    status = row["last_visit_status"]
    return VisitStats(row["url"], row["visit_type"], last_visit_status=VisitOutcome(status) if status else None,
                      last_snapshot=row["last_snapshot"], failure_count=row["failure_count"],
                      successful_visits=row["successful_visits"], rate_changes=row["rate_changes"],
                      rate_days=row["rate_days"], rate_evidence=_evidence(row["rate_evidence"]), **times)


def _evidence(text: str | None) -> tuple[float, ...] | None:
    return None if text is None else tuple(orjson.loads(text))


def _visit_stats_params(stats: VisitStats) -> dict[str, Any]:
    params = {name: to_db_time(getattr(stats, name)) for name in _VISIT_TIMES}
    params.update(url=stats.url, visit_type=stats.visit_type, failure_count=stats.failure_count,
                  last_snapshot=stats.last_snapshot, successful_visits=stats.successful_visits,
                  rate_changes=stats.rate_changes, rate_days=stats.rate_days,
                  rate_evidence=None if stats.rate_evidence is None else orjson.dumps(stats.rate_evidence).decode(),
                  last_visit_status=stats.last_visit_status.value if stats.last_visit_status else None)
    return params


def _row_to_metrics(row: sqlite3.Row) -> OriginMetrics:
    return OriginMetrics(
        row["lister_id"], row["visit_type"], datetime.fromisoformat(row["computed_at"]), row["origins_known"],
        row["origins_enabled"], row["origins_never_visited"], row["origins_with_pending_changes"],
        in_bucket_order(orjson.loads(row["lag_histogram"])), from_db_interval(row["lag_max"]), row["lister_name"],
        row["lister_instance_name"], row["visits_in_flight"], row["visits_last_hour"], row["eventful_visits_last_hour"],
        row["uneventful_visits_last_hour"], row["origins_never_successful"],
    )



def _activity(m: OriginMetrics) -> dict[str, int]:
    return {"visits_in_flight": m.visits_in_flight, "visits_last_hour": m.visits_last_hour,
            "eventful_visits_last_hour": m.eventful_visits_last_hour,
            "uneventful_visits_last_hour": m.uneventful_visits_last_hour,
            "origins_never_successful": m.origins_never_successful}


class SQLiteOrigins:
    # -- listers and listed origins ------------------------------------------
    def get_or_create_lister(self, name: str, instance_name: str, now: datetime) -> Lister:
        params = {"name": name, "instance_name": instance_name}
        with self._write() as conn:
            row = conn.execute(QUERIES.get_lister, params).fetchone()
            if row is None:
                conn.execute(QUERIES.insert_lister, {**params, "now": to_db_time(now)})
                row = conn.execute(QUERIES.get_lister, params).fetchone()
            return _row_to_lister(row)

    def list_listers(self) -> list[Lister]:
        return [_row_to_lister(r) for r in self._read(QUERIES.list_listers)]

    def update_lister(self, lister: Lister, *, current_state=None, last_listing_finished_at=None, now: datetime) -> Lister:
        params = {
            "id": lister.id,
            "expected_updated": to_db_time(lister.updated),
            "current_state": orjson.dumps(current_state if current_state is not None else lister.current_state).decode(),
            "last_listing_finished_at": to_db_time(last_listing_finished_at or lister.last_listing_finished_at),
            "now": to_db_time(lister.next_token(now)),
        }
        with self._write() as conn:
            row = conn.execute(QUERIES.update_lister, params).fetchone()
        if row is None:
            raise ConflictError(f"lister {lister.name}/{lister.instance_name} was changed by someone else: read it again")
        return _row_to_lister(row)

    def record_listed_origins(self, lister_id: int, origins: Sequence[ListedOrigin], now: datetime, *,
                              touch_last_seen: bool = True) -> int:
        unique = latest_listed(origins)
        with self._write() as conn:
            if conn.execute(QUERIES.lister_exists, {"id": lister_id}).fetchone() is None:
                raise NotFoundError("lister", str(lister_id))
            for chunk in chunks(unique):
                rows = [[o.url, o.visit_type, orjson.dumps(o.extra_loader_arguments).decode(), o.enabled,
                         to_db_time(o.last_update), o.is_fork, o.forked_from_url] for o in chunk]
                conn.execute(QUERIES.upsert_listed_origins, {"lister_id": lister_id, "now": to_db_time(now), "rows": json_array(rows),
                                                         "touch_last_seen": bool(touch_last_seen)})
                conn.execute(QUERIES.sync_visit_stats_with_listings,
                             {"lister_id": lister_id, "keys": json_array([o.url, o.visit_type] for o in chunk)})
        return len(unique)

    def get_listed_origins(self, *, url=None, lister_id=None, after=None, limit=1000) -> list[StoredListedOrigin]:
        after_url, after_type, after_lister = after or ("", "", 0)
        params = {"url": url, "lister_id": lister_id, "after_url": after_url, "after_type": after_type,
                  "after_lister": after_lister, "limit": limit}
        return [_row_to_listed_origin(r) for r in self._read(QUERIES.search_listed_origins, params)]

    # -- visit stats and the feedback loop ----------------------------------
    def record_visit_statuses(self, statuses: Sequence[VisitStatus], policy: FeedbackPolicy, *,
                              now: datetime | None = None) -> int:
        statuses = check_visit_statuses(statuses)
        changed = 0
        with self._write() as conn:
            thresholds = {r["visit_type"]: r["threshold"] for r in conn.execute(QUERIES.revisit_thresholds)}
            for chunk in chunks(list(statuses)):
                keys = sorted({(s.origin, s.type) for s in chunk})
                current = {(r["url"], r["visit_type"]): _row_to_visit_stats(r)
                           for r in conn.execute(QUERIES.visit_stats_in, {"keys": json_array(keys)})}
                plan = plan_visit_feedback(current, chunk, policy, now, thresholds)
                conn.executemany(QUERIES.upsert_visit_stats, [_visit_stats_params(st) for st in plan.stats])
                if plan.disable:
                    conn.execute(QUERIES.disable_listed_origins, {"keys": json_array(plan.disable)})
                    conn.execute(QUERIES.disable_visit_stats, {"keys": json_array(plan.disable)})
                changed += plan.changed
        return changed

    def get_visit_stats(self, keys: Sequence[tuple[str, str]]) -> list[VisitStats]:
        return [_row_to_visit_stats(r) for chunk in chunks(list(keys))
                for r in self._read(QUERIES.visit_stats_in, {"keys": json_array(chunk)})]

    # -- change_rate_optimal's threshold ---------------------------------------
    def get_revisit_thresholds(self) -> dict[str, RevisitThreshold]:
        return {r["visit_type"]: RevisitThreshold(r["visit_type"], r["threshold"], r["visits_per_day"], r["origins"],
                                                  datetime.fromisoformat(r["computed_at"]))
                for r in self._read(QUERIES.revisit_thresholds)}

    def set_revisit_threshold(self, threshold: RevisitThreshold) -> None:
        check_revisit_threshold(threshold)
        with self._write() as conn:
            conn.execute(QUERIES.upsert_revisit_threshold, {
                "visit_type": threshold.visit_type, "threshold": float(threshold.threshold),
                "visits_per_day": float(threshold.visits_per_day), "origins": threshold.origins,
                "computed_at": to_db_time(threshold.computed_at)})

    def sample_change_rates(self, visit_type: str, size: int, *, seed: int = 0) -> RateSample:
        [row] = self._read(QUERIES.max_visit_rowid)
        top = row["top"] or 0
        if top < SMALL_TABLE:
            found = [(r["rate_changes"], r["rate_days"], _evidence(r["rate_evidence"]))
                     for r in self._read(QUERIES.all_change_rates, {"visit_type": visit_type})]
            return RateSample(thin_sample(found, size, seed), len(found))
        probes = sorted(random.Random(seed).sample(range(1, top + 1), min(top, size * SAMPLE_OVERREAD)))
        found = [(r["rate_changes"], r["rate_days"], _evidence(r["rate_evidence"])) for r in self._read(
            QUERIES.change_rates_at, {"rowids": json_array(probes), "visit_type": visit_type})]
        return RateSample(thin_sample(found, size, seed), round(len(found) * top / len(probes)))

    # -- scheduling policies ------------------------------------------------
    def grab_next_visits(self, visit_type: str, requests: Sequence[GrabRequest], now: datetime, *,
                         options: GrabOptions = GrabOptions(), dry_run: bool = False,
                         limit: int | None = None) -> list[NextVisit]:
        requests = [r.validated() for r in requests]
        total = check_limit(limit, requests)
        options = options.validated()
        with self._write(rollback=dry_run) as conn:
            db_now = to_db_time(now)
            conn.execute(QUERIES.release_cooldowns, {"visit_type": visit_type, "now": db_now})
            params = {"visit_type": visit_type, "now": db_now, "lister_id": options.lister_id,
                      "visited_before": to_db_time(now - options.minimum_interval)}
            cooldown = to_db_time(now + options.in_flight_timeout)

            def pick(name: str, limit: int) -> list[tuple]:
                rows = [(r[0], r[1], orjson.loads(r[2]), from_db_time(r[3]))
                        for r in conn.execute(getattr(QUERIES, name), {**params, "limit": limit})]
                if rows:
                    conn.execute(QUERIES.mark_scheduled, {"visit_type": visit_type, "urls": json_array(r[0] for r in rows),
                                                          "now": db_now, "cooldown_until": cooldown})
                return rows

            picked = run_picks(requests, total, pick)
            if not picked:
                return []
            ids = sorted({row[1] for _, row in picked if row[1] is not None})
            listers = {r[0]: (r[1], r[2]) for r in conn.execute(QUERIES.listers_named, {"ids": json_array(ids)})}
        return [next_visit(visit_type, policy, *row, listers) for policy, row in picked]

    def release_visits(self, keys: Sequence[tuple[str, str]]) -> int:
        released = 0
        with self._write() as conn:
            for chunk in chunks(list(keys)):
                released += conn.execute(QUERIES.release_grabbed, {"keys": json_array(chunk)}).rowcount
        return released

    # -- metrics ------------------------------------------------------------
    def update_origin_metrics(self, now: datetime) -> list[OriginMetrics]:
        with self._write() as conn:
            params = {"now": to_db_time(now), "since": to_db_time(now - ACTIVITY_WINDOW), "bounds": json_array(LAG_BOUNDS)}
            rows = [dict(r) for query in (QUERIES.single_listed_metrics, QUERIES.multi_listed_metrics)
                    for r in conn.execute(query, params)]
            metrics = fold_metrics(now, rows)
            conn.executemany(QUERIES.upsert_origin_metrics, [{
                "lister_id": m.lister_id, "visit_type": m.visit_type, "computed_at": to_db_time(m.computed_at),
                "origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
                "origins_never_visited": m.origins_never_visited,
                "origins_with_pending_changes": m.origins_with_pending_changes,
                "lag_histogram": orjson.dumps(m.lag_histogram).decode(), "lag_max": to_db_interval(m.lag_max),
                **_activity(m),
            } for m in metrics])
        return self.get_origin_metrics()

    def get_origin_metrics(self, *, lister_id: int | None = None, visit_type: str | None = None) -> list[OriginMetrics]:
        rows = self._read(QUERIES.search_origin_metrics, {"lister_id": lister_id, "visit_type": visit_type})
        return [_row_to_metrics(r) for r in rows]
