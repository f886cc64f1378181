"""/metrics on every store: schedule conditions by state, tasks by type and status, origin
metrics and lag quantiles per visit type, the API's own requests; a read token needed unless
the app serves metrics open."""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_api_helpers import Api, add_loader


def scrape(api, scope="read") -> dict[tuple[str, tuple], float]:
    response = api.get("/metrics", scope=scope)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


@pytest.fixture
def api(store, clock):
    return Api(store, clock)


def test_metrics_of_a_seeded_store(api, clock):
    add_loader(api, "git")
    add_loader(api, "hg")
    period = {"kind": "periodic", "task_type": "load-git", "scheduling_period": "1h"}
    api.ok("POST", "/api/v1/schedules", {**period, "name": "late"}, status=201)
    api.ok("POST", "/api/v1/schedules", {**period, "name": "paused", "enabled": False}, status=201)
    clock.advance(timedelta(minutes=30))
    api.ok("POST", "/api/v1/schedules", {**period, "name": "fresh"}, status=201)
    api.ok("POST", "/api/v1/schedules", {**period, "name": "fresh2"}, status=201)
    for n in range(3):
        api.ok("POST", "/api/v1/tasks", {"type": "load-git", "arguments": {"args": [n]}}, status=201)
    api.ok("POST", "/api/v1/tasks", {"type": "load-hg", "arguments": {"args": [0]}}, status=201)
    api.store.grab_ready_tasks("load-git", clock.now(), 1)
    lister_id = api.ok("POST", "/api/v1/listers", {"name": "gh"}, status=201)["id"]
    now = clock.now()
    lags = [timedelta(minutes=30), timedelta(hours=2), timedelta(hours=3), timedelta(days=2)]
    origins = [{"url": f"https://x/{n}", "visit_type": "git", "last_update": (now - lag).isoformat()}
               for n, lag in enumerate(lags)] + [{"url": "https://x/new", "visit_type": "hg"}]
    api.ok("POST", f"/api/v1/listers/{lister_id}/origins", origins)
    api.ok("POST", "/api/v1/origin-metrics/update")
    clock.advance(timedelta(minutes=45))

    samples = scrape(api)
    assert samples[("ostinato_schedules", (("state", "ERROR"),))] == 1
    assert samples[("ostinato_schedules", (("state", "WARNING"),))] == 1
    assert samples[("ostinato_schedules", (("state", "OK"),))] == 2
    assert samples[("ostinato_schedules_by_reason", (("reason", "stale"),))] == 1
    assert samples[("ostinato_tasks", (("status", "next_run_not_scheduled"), ("task_type", "load-git")))] == 2
    assert samples[("ostinato_tasks", (("status", "next_run_scheduled"), ("task_type", "load-git")))] == 1
    assert samples[("ostinato_tasks", (("status", "next_run_not_scheduled"), ("task_type", "load-hg")))] == 1
    assert samples[("ostinato_origins_known", (("visit_type", "git"),))] == 4
    assert samples[("ostinato_origins_never_visited", (("visit_type", "git"),))] == 4
    assert samples[("ostinato_origins_never_successful", (("visit_type", "git"),))] == 0
    assert samples[("ostinato_origins_with_pending_changes", (("visit_type", "git"),))] == 4
    assert samples[("ostinato_origins_known", (("visit_type", "hg"),))] == 1
    median = samples[("ostinato_origin_lag_seconds", (("quantile", "0.5"), ("visit_type", "git")))]
    assert 3600 <= median <= 6 * 3600  # two of four lags in the <6h bucket
    high = samples[("ostinato_origin_lag_seconds", (("quantile", "0.99"), ("visit_type", "git")))]
    assert median < high <= 2 * 86400
    assert samples[("ostinato_origin_lag_max_seconds", (("visit_type", "git"),))] == pytest.approx(2 * 86400)
    assert samples[("ostinato_origin_metrics_computed_timestamp_seconds", (("visit_type", "git"),))] == \
        (now).timestamp()
    # the API's own requests, by route template
    route = (("method", "POST"), ("route", "/api/v1/listers/{lister_id}/origins"), ("status", "200"))
    assert samples[("ostinato_api_requests_total", route)] == 1
    assert samples[("ostinato_api_request_duration_seconds_count",
                    (("method", "POST"), ("route", "/api/v1/listers/{lister_id}/origins")))] == 1


def test_metrics_need_a_read_token(api):
    assert api.get("/metrics", scope=None).status_code == 401
    scrape(api, scope="admin")
    samples = scrape(api)
    assert samples[("ostinato_api_requests_total", (("method", "GET"), ("route", "/metrics"), ("status", "401")))] == 1
    assert samples[("ostinato_schedules", (("state", "OK"),))] == 0


def test_metrics_may_be_open(store, clock):
    api = Api(store, clock, open_metrics=True)
    scrape(api, scope=None)
    assert api.get("/api/v1/tasks", scope=None).status_code == 401


def test_each_app_has_its_own_registry(store, clock):
    first, second = Api(store, clock, tokens="first-"), Api(store, clock, tokens="second-")
    first.ok("GET", "/api/v1/tasks")
    key = ("ostinato_api_requests_total", (("method", "GET"), ("route", "/api/v1/tasks"), ("status", "200")))
    assert key in scrape(first) and key not in scrape(second)


def test_visit_activity_per_visit_type(api, clock):
    """The queue depth as the store sees it (visits handed out, not reported yet) and the last hour's visits."""
    add_loader(api, "git")
    lister_id = api.ok("POST", "/api/v1/listers", {"name": "gh"}, status=201)["id"]
    urls = [f"https://x/{n}" for n in range(3)]
    api.ok("POST", f"/api/v1/listers/{lister_id}/origins", [{"url": url, "visit_type": "git", "last_update": "2025-12-01T00:00:00Z"} for url in urls])
    grabbed = api.ok("POST", "/api/v1/origins/grab-next", {"visit_type": "git", "count": 2,
                                                           "policies": {"never_visited_oldest_update_first": 1}})
    first = grabbed["items"][0]["url"]
    clock.advance(timedelta(minutes=10))
    api.ok("POST", "/api/v1/visit-statuses", [{"origin": first, "visit": 1, "type": "git", "status": "full",
                                               "date": clock.now().isoformat(), "snapshot": "aa"}])
    api.ok("POST", "/api/v1/origin-metrics/update")

    samples = scrape(api)
    git = (("visit_type", "git"),)
    assert samples[("ostinato_origin_visits_in_flight", git)] == 1
    assert samples[("ostinato_origin_visits_last_hour", git)] == 1
    assert samples[("ostinato_origin_eventful_visits_last_hour", git)] == 1


def test_a_failed_origin_is_not_counted_as_never_visited(api, clock):
    from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus

    add_loader(api, "git")
    lister_id = api.ok("POST", "/api/v1/listers", {"name": "gh"}, status=201)["id"]
    api.ok("POST", f"/api/v1/listers/{lister_id}/origins", [{"url": f"https://x/{n}", "visit_type": "git"} for n in range(2)])
    api.store.record_visit_statuses([VisitStatus("https://x/0", 1, "git", JournalStatus.FAILED, clock.now(), None)],
                                    FeedbackPolicy(), now=clock.now())
    api.ok("POST", "/api/v1/origin-metrics/update")
    samples = scrape(api)
    assert samples[("ostinato_origins_never_visited", (("visit_type", "git"),))] == 1
    assert samples[("ostinato_origins_never_successful", (("visit_type", "git"),))] == 1
