"""The PostgreSQL store's origin side: listers, listed origins, visit stats and
the feedback loop, the scheduling policies' grab, and per-lister metrics.

Mixed into :class:`~ostinato.store.postgresql.store.PostgresStore`, whose
connection pool and transactions it uses; its SQL is in ``origin_queries.sql``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import orjson
from psycopg.rows import tuple_row

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

QUERIES = Queries(Path(__file__).parent / "origin_queries.sql")
CHUNK = 10_000

_VISIT_FIELDS = ("last_visit", "last_successful", "last_snapshot", "last_eventful", "last_uneventful", "failure_count",
                 "last_scheduled", "next_visit_target", "last_status_date", "successful_visits", "cooldown_until",
                 "rate_changes", "rate_days", "next_optimal_visit")


def chunks(values: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


def _hex(value: Any) -> str:
    """orjson's fallback for the one type it does not write: snapshots, as hex."""
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _row_to_lister(row: Mapping[str, Any]) -> Lister:
    return Lister(row["id"], row["name"], row["instance_name"], row["current_state"], row["last_listing_finished_at"],
                  row["updated"])


def _row_to_listed_origin(row: Mapping[str, Any]) -> StoredListedOrigin:
    origin = ListedOrigin(row["url"], row["visit_type"], row["extra_loader_arguments"], row["last_update"],
                          row["enabled"], row["is_fork"], row["forked_from_url"])
    return StoredListedOrigin(row["lister_id"], origin, row["first_seen"], row["last_seen"])


def _row_to_visit_stats(row: Mapping[str, Any]) -> VisitStats:
    status = row["last_visit_status"]
    evidence = row["rate_evidence"]
    return VisitStats(row["url"], row["visit_type"], last_visit_status=VisitOutcome(status) if status else None,
                      rate_evidence=None if evidence is None else tuple(evidence),
                      **{name: row[name] for name in _VISIT_FIELDS})


def _row_to_metrics(row: Mapping[str, Any]) -> OriginMetrics:
    return OriginMetrics(
        row["lister_id"], row["visit_type"], row["computed_at"], row["origins_known"], row["origins_enabled"],
        row["origins_never_visited"], row["origins_with_pending_changes"], in_bucket_order(row["lag_histogram"]),
        row["lag_max"],
        row["lister_name"], row["lister_instance_name"],
        row["visits_in_flight"], row["visits_last_hour"], row["eventful_visits_last_hour"],
        row["uneventful_visits_last_hour"], row["origins_never_successful"],
    )


class PostgresOrigins:
    # -- listers and listed origins ------------------------------------------
    def get_or_create_lister(self, name: str, instance_name: str, now: datetime) -> Lister:
        params = {"name": name, "instance_name": instance_name}
        with self._tx() as conn:
            row = conn.execute(QUERIES.get_lister, params).fetchone()
            if row is None:
                conn.execute(QUERIES.insert_lister, {**params, "now": now})
                row = conn.execute(QUERIES.get_lister, params).fetchone()
            return _row_to_lister(row)

    def list_listers(self) -> list[Lister]:
        return [_row_to_lister(r) for r in self._read(QUERIES.list_listers)]

    def update_lister(self, lister: Lister, *, current_state=None, last_listing_finished_at=None, now: datetime) -> Lister:
        params = {
            "id": lister.id,
            "expected_updated": lister.updated,
            "current_state": orjson.dumps(current_state if current_state is not None else lister.current_state).decode(),
            "last_listing_finished_at": last_listing_finished_at or lister.last_listing_finished_at,
            "now": lister.next_token(now),
        }
        with self._tx() as conn:
            row = conn.execute(QUERIES.update_lister, params).fetchone()
        if row is None:
            raise ConflictError(f"lister {lister.name}/{lister.instance_name} was changed by someone else: read it again")
        return _row_to_lister(row)

    def record_listed_origins(self, lister_id: int, origins: Sequence[ListedOrigin], now: datetime, *,
                              touch_last_seen: bool = True) -> int:
        unique = latest_listed(origins)
        with self._batch_tx() as conn:
            if conn.execute(QUERIES.lister_exists, {"id": lister_id}).fetchone() is None:
                raise NotFoundError("lister", str(lister_id))
            for chunk in chunks(unique):
                conn.execute(QUERIES.record_listed_origins,
                             {"lister_id": lister_id, "now": now, "rows": orjson.dumps(chunk).decode(),
                              "touch_last_seen": bool(touch_last_seen)})
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
        with self._batch_tx() as conn:
            thresholds = {r["visit_type"]: r["threshold"] for r in conn.execute(QUERIES.revisit_thresholds)}
            for chunk in chunks(list(statuses)):
                keys = sorted({(s.origin, s.type) for s in chunk})
                rows = conn.execute(QUERIES.visit_stats_for_update,
                                    {"urls": [k[0] for k in keys], "visit_types": [k[1] for k in keys]})
                current = {(r["url"], r["visit_type"]): _row_to_visit_stats(r) for r in rows}
                plan = plan_visit_feedback(current, chunk, policy, now, thresholds)
                if plan.stats:
                    conn.execute(QUERIES.upsert_visit_stats, {"rows": orjson.dumps(plan.stats, default=_hex).decode()})
                if plan.disable:
                    keys_params = {"urls": [k[0] for k in plan.disable], "visit_types": [k[1] for k in plan.disable]}
                    conn.execute(QUERIES.disable_listed_origins, keys_params)
                    conn.execute(QUERIES.disable_visit_stats, keys_params)
                changed += plan.changed
        return changed

    def get_visit_stats(self, keys: Sequence[tuple[str, str]]) -> list[VisitStats]:
        return [_row_to_visit_stats(r) for chunk in chunks(list(keys)) for r in self._read(
            QUERIES.visit_stats_in, {"urls": [k[0] for k in chunk], "visit_types": [k[1] for k in chunk]})]

    # -- change_rate_optimal's threshold ---------------------------------------
    def get_revisit_thresholds(self) -> dict[str, RevisitThreshold]:
        return {r["visit_type"]: RevisitThreshold(r["visit_type"], r["threshold"], r["visits_per_day"], r["origins"],
                                                  r["computed_at"]) for r in self._read(QUERIES.revisit_thresholds)}

    def set_revisit_threshold(self, threshold: RevisitThreshold) -> None:
        check_revisit_threshold(threshold)
        with self._tx() as conn:
            conn.execute(QUERIES.upsert_revisit_threshold, {
                "visit_type": threshold.visit_type, "threshold": threshold.threshold,
                "visits_per_day": threshold.visits_per_day, "origins": threshold.origins,
                "computed_at": threshold.computed_at})

    def sample_change_rates(self, visit_type: str, size: int, *, seed: int = 0) -> RateSample:
        [estimate] = self._read(QUERIES.table_size_estimate)
        rows = estimate["rows"] if estimate["relpages"] > 0 else 0
        percent = 100.0 if rows < SMALL_TABLE else min(100.0, 100.0 * size * SAMPLE_OVERREAD / rows)
        found = [(r["rate_changes"], r["rate_days"], None if r["rate_evidence"] is None else tuple(r["rate_evidence"]))
                 for r in self._read(QUERIES.sample_change_rates, {"visit_type": visit_type, "percent": percent, "seed": seed})]
        if percent >= 100.0:
            enabled = len(found)
        else:
            enabled = round(len(found) * 100.0 / percent)
        return RateSample(thin_sample(found, size, seed), enabled)

    # -- scheduling policies ------------------------------------------------
    def grab_next_visits(self, visit_type: str, requests: Sequence[GrabRequest], now: datetime, *,
                         options: GrabOptions = GrabOptions(), dry_run: bool = False,
                         limit: int | None = None) -> list[NextVisit]:
        requests = [r.validated() for r in requests]
        total = check_limit(limit, requests)
        options = options.validated()
        with self._pool.connection() as conn, conn.transaction(force_rollback=dry_run):
            conn.execute(QUERIES.index_ordered_picks)
            conn.execute(QUERIES.release_cooldowns, {"visit_type": visit_type, "now": now})
            cursor = conn.cursor(row_factory=tuple_row)
            params = {"visit_type": visit_type, "now": now, "lister_id": options.lister_id,
                      "visited_before": now - options.minimum_interval,
                      "cooldown_until": now + options.in_flight_timeout}
            picked = run_picks(requests, total, lambda name, limit: cursor.execute(
                QUERIES.grab_picked.replace("{pick}", getattr(QUERIES, name).rstrip().rstrip(";")),
                {**params, "limit": limit}).fetchall())
            if not picked:
                return []
            ids = sorted({row[1] for _, row in picked if row[1] is not None})
            listers = {r[0]: (r[1], r[2]) for r in cursor.execute(QUERIES.listers_named, {"ids": ids})}
        return [next_visit(visit_type, policy, *row, listers) for policy, row in picked]

    def release_visits(self, keys: Sequence[tuple[str, str]]) -> int:
        released = 0
        with self._tx() as conn:
            for chunk in chunks(list(keys)):
                released += conn.execute(QUERIES.release_grabbed, {
                    "urls": [k[0] for k in chunk], "visit_types": [k[1] for k in chunk]}).rowcount
        return released

    # -- metrics ------------------------------------------------------------
    def update_origin_metrics(self, now: datetime) -> list[OriginMetrics]:
        with self._tx() as conn:
            params = {"now": now, "since": now - ACTIVITY_WINDOW, "bounds": list(LAG_BOUNDS)}
            rows = (conn.execute(QUERIES.single_listed_metrics, params).fetchall()
                    + conn.execute(QUERIES.multi_listed_metrics, params).fetchall())
            metrics = fold_metrics(now, rows)
            for m in metrics:
                conn.execute(QUERIES.upsert_origin_metrics, {
                    "lister_id": m.lister_id, "visit_type": m.visit_type, "computed_at": m.computed_at,
                    "origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
                    "origins_never_visited": m.origins_never_visited,
                    "origins_with_pending_changes": m.origins_with_pending_changes,
                    "lag_histogram": orjson.dumps(m.lag_histogram).decode(), "lag_max": m.lag_max,
                    "visits_in_flight": m.visits_in_flight, "visits_last_hour": m.visits_last_hour,
                    "eventful_visits_last_hour": m.eventful_visits_last_hour,
                    "uneventful_visits_last_hour": m.uneventful_visits_last_hour,
                    "origins_never_successful": m.origins_never_successful,
                })
        return self.get_origin_metrics()

    def get_origin_metrics(self, *, lister_id: int | None = None, visit_type: str | None = None) -> list[OriginMetrics]:
        rows = self._read(QUERIES.search_origin_metrics, {"lister_id": lister_id, "visit_type": visit_type})
        return [_row_to_metrics(r) for r in rows]

