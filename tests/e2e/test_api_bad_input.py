"""Bad input found by the schemathesis run (tests/e2e/test_api_schemathesis.py), as plain examples
on every store: each is answered 400 naming the field, in the project's error shape, and
changes nothing; the description documents the answers the API gives."""

from __future__ import annotations

import pytest
from test_api_helpers import Api, add_loader

FAR = "9999-12-31T23:59:59+00:00"
EARLY = "0001-01-01T00:00:00+00:00"


@pytest.fixture
def api(store, clock):
    api = Api(store, clock)
    add_loader(api, "git")
    return api


def lister_id(api) -> int:
    return api.ok("POST", "/api/v1/listers", {"name": "gh"}, status=201)["id"]


def nothing_written(api) -> None:
    assert api.store.search_tasks() == []
    assert api.store.list_schedules() == []
    assert api.store.get_listed_origins(limit=10) == []


@pytest.mark.parametrize("body, field", [
    ({"type": "load-git", "arguments": {"args": ["a\x00b"]}}, "arguments.args"),
    ({"type": "load-git", "arguments": {"kwargs": {"url\x00": 1}}}, "arguments.kwargs"),
    ({"type": "load\x00git"}, "type"),
    ({"type": "load-git", "next_run": FAR}, "next_run"),
    ({"type": "load-git", "next_run": EARLY}, "next_run"),
    ({"type": "load-git", "current_interval": 1e300}, "current_interval"),
    ({"type": "load-git", "priority": True}, "priority"),
    ({"type": "load-git", "arguments": {"args": ["x" * 70_000]}}, "arguments.args"),
])
def test_bad_tasks(api, body, field):
    error = api.error("POST", "/api/v1/tasks", body)
    assert error["field"] == field and error["expected"], error
    nothing_written(api)


@pytest.mark.parametrize("item, field", [
    ({"url": "https://x/\x00", "visit_type": "git"}, "url"),
    ({"url": "https://x/" + "é" * 33_000, "visit_type": "git"}, "url"),
    ({"url": "https://x/a", "visit_type": "git", "last_update": FAR}, "last_update"),
    ({"url": "https://x/a", "visit_type": "git", "extra_loader_arguments": {"k": "\x00"}}, "extra_loader_arguments"),
    ({"url": "https://x/a", "visit_type": "git", "enabled": "yes"}, "enabled"),
])
def test_bad_listed_origins(api, item, field):
    error = api.error("POST", f"/api/v1/listers/{lister_id(api)}/origins", [{"url": "https://x/ok", "visit_type": "git"},
                                                                            item])
    assert error["field"] == field and error["index"] == 1 and error["message"].startswith("item 1: "), error
    nothing_written(api)


@pytest.mark.parametrize("change, field", [
    ({"date": FAR}, "date"),
    ({"date": EARLY}, "date"),
    ({"visit": 2**64}, "visit"),
    ({"origin": "https://x/\x00"}, "origin"),
    ({"snapshot": "zz"}, "snapshot"),
])
def test_bad_visit_statuses(api, change, field):
    status = {"origin": "https://x/a", "visit": 1, "type": "git", "status": "full", "date": "2026-01-01T00:00:00+00:00",
              "snapshot": "9b92", **change}
    error = api.error("POST", "/api/v1/visit-statuses", [status])
    assert error["field"] == field and error["index"] == 0, error
    assert api.store.get_visit_stats([("https://x/a", "git")]) == []


@pytest.mark.parametrize("change, field", [
    ({"name": "a\x00"}, "name"),
    ({"tz": "Europe/\x00Paris"}, "tz"),
    ({"scheduling_period": 10**20}, "scheduling_period"),
    ({"dont_run_on_nodes": ["n\x00"]}, "dont_run_on_nodes.0"),
    ({"blackout_periods": [{"start": "23:00"}]}, "blackout_periods.0.end"),
])
def test_bad_schedules(api, change, field):
    body = {"name": "nightly", "kind": "periodic", "task_type": "load-git", "scheduling_period": "1h", **change}
    error = api.error("POST", "/api/v1/schedules", body)
    assert error["field"] == field, error
    nothing_written(api)


@pytest.mark.parametrize("path, params, field", [
    ("/api/v1/tasks/9223372036854775808", {}, "task_id"),
    ("/api/v1/task-runs", {"task": 2**63}, "task"),
    ("/api/v1/origin-metrics", {"lister_id": 2**63}, "lister_id"),
    ("/api/v1/schedule-conditions", {"at": FAR}, "at"),
    ("/api/v1/tasks", {"before": EARLY}, "before"),
])
def test_bad_queries(api, path, params, field):
    assert api.error("GET", path, params=params)["field"] == field


def test_bad_path_id_in_bulk(api):
    error = api.error("POST", "/api/v1/listers/9223372036854775808/origins", [])
    assert error["field"] == "lister_id"


def test_a_body_that_is_not_utf8_names_the_body(api):
    response = api.client.post("/api/v1/tasks", content=b"\xff\xfe{", headers={**api.headers("admin"),
                                                                             "Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "body"
    nothing_written(api)


def test_the_description_documents_our_errors_and_the_metrics_text(api):
    description = api.client.get("/openapi.json").json()
    create = description["paths"]["/api/v1/tasks"]["post"]
    assert "422" not in create["responses"]
    assert create["responses"]["400"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert {"401", "403", "404", "409"} <= set(create["responses"])
    assert create["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/TaskBody")
    assert "text/plain" in description["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
