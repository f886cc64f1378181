"""Prometheus metrics at ``/metrics``, in a registry of the application's own.

Read from the store at each scrape:

- ``ostinato_schedules{state}``: schedules by condition (OK / WARNING / ERROR), and
  ``ostinato_schedules_by_reason{reason}`` for the WARNING and ERROR ones;
  ``ostinato_schedule_holds``: the free slots lookahead holds for a schedule due soon;
- ``ostinato_tasks{task_type,status}``: tasks by type and status;
- per visit type, summed over listers, from the last ``metrics update``:
  ``ostinato_origins_known``, ``_enabled``, ``_never_visited``, ``_never_successful``, ``_with_pending_changes``,
  ``ostinato_origin_visits_in_flight`` (the queue depth as the store sees it),
  ``ostinato_origin_visits_last_hour`` and ``ostinato_origin_eventful_visits_last_hour``,
  ``ostinato_origin_lag_seconds{quantile}`` (0.5, 0.9, 0.99, estimated from the stored
  lag histogram) and ``ostinato_origin_lag_max_seconds``, and when they were counted.

Measured by the application: ``ostinato_api_requests_total{method,route,status}`` and
``ostinato_api_request_duration_seconds{method,route}`` (the route's template, not the
raw path, so that the series stay few). Latency is measured on the monotonic clock:
it is a duration, not a moment the rules read.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from ..domain.origin_metrics import lag_quantile
from ..domain.schedules import ScheduleTiming, State, assess

QUANTILES = (0.5, 0.9, 0.99)


class StoreCollector:
    """The store's state at scrape time."""

    def __init__(self, store: Callable[[], Any], now: Callable[[], Any], list_schedules: Callable[[], list],
                 timing: Callable[[], ScheduleTiming]):
        self._store, self._now, self._list_schedules, self._timing = store, now, list_schedules, timing

    def collect(self) -> Iterator[GaugeMetricFamily]:
        store, now = self._store(), self._now()
        yield from self._schedules(now)
        tasks = GaugeMetricFamily("ostinato_tasks", "Tasks by type and status.", labels=["task_type", "status"])
        for (task_type, status), count in sorted(store.count_tasks().items()):
            tasks.add_metric([task_type, status], count)
        yield tasks
        yield from self._origins(store.get_origin_metrics())

    def _schedules(self, now) -> Iterator[GaugeMetricFamily]:
        by_state = {state.value: 0 for state in State}
        by_reason: dict[str, int] = defaultdict(int)
        timing = self._timing()
        for schedule in self._list_schedules():
            condition = assess(schedule, now, timing).condition
            by_state[condition.state.value] += 1
            if condition.reason is not None:
                by_reason[condition.reason.value] += 1
        states = GaugeMetricFamily("ostinato_schedules", "Schedules by condition (OK, WARNING, ERROR).", labels=["state"])
        for state, count in by_state.items():
            states.add_metric([state], count)
        yield states
        reasons = GaugeMetricFamily("ostinato_schedules_by_reason", "Schedules in WARNING or ERROR, by reason.",
                                    labels=["reason"])
        for reason, count in sorted(by_reason.items()):
            reasons.add_metric([reason], count)
        yield reasons
        holds = GaugeMetricFamily("ostinato_schedule_holds", "Free slots held by lookahead for a schedule due soon.")
        holds.add_metric([], len(self._store().list_holds(now)))
        yield holds

    def _origins(self, found: list) -> Iterator[GaugeMetricFamily]:
        totals: dict[str, dict[str, Any]] = {}
        for m in found:
            total = totals.setdefault(m.visit_type, {"known": 0, "enabled": 0, "never": 0, "never_successful": 0, "pending": 0,
                                                     "in_flight": 0, "last_hour": 0, "eventful_last_hour": 0,
                                                     "histogram": defaultdict(int), "lag_max": None, "computed": 0.0})
            total["known"] += m.origins_known
            total["enabled"] += m.origins_enabled
            total["never"] += m.origins_never_visited
            total["never_successful"] += m.origins_never_successful
            total["pending"] += m.origins_with_pending_changes
            total["in_flight"] += m.visits_in_flight
            total["last_hour"] += m.visits_last_hour
            total["eventful_last_hour"] += m.eventful_visits_last_hour
            for label, count in m.lag_histogram.items():
                total["histogram"][label] += count
            if m.lag_max is not None:
                total["lag_max"] = max(total["lag_max"] or 0.0, m.lag_max.total_seconds())
            total["computed"] = max(total["computed"], m.computed_at.timestamp())
        families = {
            "known": GaugeMetricFamily("ostinato_origins_known", "Origins listed, per visit type.", labels=["visit_type"]),
            "enabled": GaugeMetricFamily("ostinato_origins_enabled", "Origins enabled, per visit type.", labels=["visit_type"]),
            "never": GaugeMetricFamily("ostinato_origins_never_visited", "Enabled origins never visited (no visit "
                                       "status yet), per visit type.", labels=["visit_type"]),
            "never_successful": GaugeMetricFamily("ostinato_origins_never_successful", "Enabled origins visited, never "
                                                  "successfully (every visit failed or found nothing), per visit type.",
                                                  labels=["visit_type"]),
            "pending": GaugeMetricFamily("ostinato_origins_with_pending_changes",
                                         "Origins whose forge reports changes not yet archived, per visit type.",
                                         labels=["visit_type"]),
            "in_flight": GaugeMetricFamily("ostinato_origin_visits_in_flight", "Visits handed out and not reported yet "
                                           "(the visit type's queue depth, as the store sees it).", labels=["visit_type"]),
            "last_hour": GaugeMetricFamily("ostinato_origin_visits_last_hour", "Visits reported in the hour before the "
                                           "metrics were counted.", labels=["visit_type"]),
            "eventful_last_hour": GaugeMetricFamily("ostinato_origin_eventful_visits_last_hour", "Of those, visits that "
                                                    "found a change.", labels=["visit_type"]),
        }
        lag = GaugeMetricFamily("ostinato_origin_lag_seconds", "Lag of the origins with pending changes (at least "
                                "now - last_update), quantiles estimated from the lag histogram.",
                                labels=["visit_type", "quantile"])
        lag_max = GaugeMetricFamily("ostinato_origin_lag_max_seconds", "Largest lag of an origin with pending changes.",
                                    labels=["visit_type"])
        computed = GaugeMetricFamily("ostinato_origin_metrics_computed_timestamp_seconds",
                                     "When the origin metrics were last counted (ostinato metrics update).",
                                     labels=["visit_type"])
        for visit_type, total in sorted(totals.items()):
            for key, family in families.items():
                family.add_metric([visit_type], total[key])
            for q in QUANTILES:
                value = lag_quantile(total["histogram"], q, total["lag_max"])
                if value is not None:
                    lag.add_metric([visit_type, str(q)], value)
            if total["lag_max"] is not None:
                lag_max.add_metric([visit_type], total["lag_max"])
            computed.add_metric([visit_type], total["computed"])
        yield from families.values()
        yield from (lag, lag_max, computed)


class RequestMetrics:
    """ASGI middleware counting requests and timing them, by method and route template."""

    def __init__(self, app: Any, requests: Counter, latency: Histogram):
        self.app, self.requests, self.latency = app, requests, latency

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def send_status(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope.get("method", "")
            self.requests.labels(method, route, str(status["code"])).inc()
            self.latency.labels(method, route).observe(time.perf_counter() - started)


def make_registry(collector: StoreCollector) -> tuple[CollectorRegistry, Counter, Histogram]:
    """A registry of the application's own, with the store's collector and the request metrics."""
    registry = CollectorRegistry()  # no auto-describe: registering must not read the store
    registry.register(collector)
    requests = Counter("ostinato_api_requests", "HTTP requests answered by the API.", ["method", "route", "status"],
                       registry=registry)
    latency = Histogram("ostinato_api_request_duration_seconds", "Time to answer an HTTP request.", ["method", "route"],
                        registry=registry)
    return registry, requests, latency
