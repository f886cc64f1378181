"""The API's task types, tasks and task runs, on every store: happy paths, bad input that
names the field and changes nothing, paging."""

from __future__ import annotations

from datetime import timedelta

import pytest
from test_api_helpers import Api

from ostinato.domain.tasks import RunEvent, TaskRunStatus

GIT = {"type": "load-git", "backend_name": "mypkg:load_git", "description": "Update a git origin",
       "default_interval": "1d", "min_interval": 43200, "max_interval": "64d", "backoff_factor": 2,
       "max_queue_length": 5000, "num_retries": 3, "retry_delay": "1h"}


@pytest.fixture
def api(store, clock):
    return Api(store, clock)


def test_task_types(api):
    created = api.ok("POST", "/api/v1/task-types", GIT, status=201)
    assert created["min_interval"] == 43200 and created["max_interval"] == 64 * 86400 and created["backoff_factor"] == 2
    assert api.ok("GET", "/api/v1/task-types/load-git") == created
    assert api.ok("GET", "/api/v1/task-types") == {"items": [created], "next": None}
    assert api.error("GET", "/api/v1/task-types/nope", status=404)["got"] == "nope"
    assert "already exists" in api.error("POST", "/api/v1/task-types", GIT, status=409)["message"]


def test_task_type_update_and_delete_with_their_audit_events(api):
    api.ok("POST", "/api/v1/task-types", GIT, status=201)
    changed = api.ok("PATCH", "/api/v1/task-types/load-git", {"max_interval": "32d", "backoff_factor": None})
    assert changed["max_interval"] == 32 * 86400 and changed["backoff_factor"] is None
    assert changed["min_interval"] == 43200 and changed["num_retries"] == 3  # the others kept
    assert api.error("PATCH", "/api/v1/task-types/load-git", {"min_interval": "70d"}, status=400)["field"] == "min_interval"
    assert api.error("PATCH", "/api/v1/task-types/load-gti", {"num_retries": 1}, status=404)["got"] == "load-gti"
    assert api.ok("GET", "/api/v1/task-types/load-git") == changed
    [task] = [api.ok("POST", "/api/v1/tasks", {"type": "load-git", "arguments": {"args": ["https://a"]}}, status=201)]
    in_use = api.error("DELETE", "/api/v1/task-types/load-git", status=409)["message"]
    assert f"in use by tasks {task['id']}" in in_use
    api.store.delete_tasks([task["id"]])
    api.ok("DELETE", "/api/v1/task-types/load-git", status=204)
    assert api.error("GET", "/api/v1/task-types/load-git", status=404)
    actions = [(e.action, e.outcome) for e in reversed(api.store.list_audit(target="task-type:load-git"))]
    assert actions == [("task-type.add", "done: added"), ("task-type.update", "done: changed backoff_factor, max_interval"),
                       ("task-type.delete", "done: deleted")]


@pytest.mark.parametrize("change, field", [
    ({"default_interval": "soon"}, "default_interval"),
    ({"backoff_factor": 0.5}, "backoff_factor"),
    ({"min_interval": "70d"}, "min_interval"),
    ({"num_retries": 2, "retry_delay": None}, "retry_delay"),
    ({"backend_name": None}, "backend_name"),
    ({"colour": "red"}, "colour"),
])
def test_bad_task_types_name_the_field_and_change_nothing(api, change, field):
    error = api.error("POST", "/api/v1/task-types", {**GIT, **change})
    assert error["field"] == field and error["expected"]
    assert api.store.list_task_types() == []


def test_tasks(api, clock):
    api.ok("POST", "/api/v1/task-types", GIT, status=201)
    body = {"type": "load-git", "arguments": {"args": [], "kwargs": {"url": "https://x/a"}}, "policy": "oneshot",
            "priority": "high", "next_run": "+2h"}
    created = api.ok("POST", "/api/v1/tasks", body, status=201)
    assert created["created"] and created["priority"] == "high"
    assert created["next_run"] == (clock.now() + timedelta(hours=2)).isoformat()
    clock.advance(timedelta(minutes=1))
    again = api.ok("POST", "/api/v1/tasks", body, status=200)
    assert again["id"] == created["id"] and not again["created"]
    fetched = api.ok("GET", f"/api/v1/tasks/{created['id']}")
    assert fetched == {k: v for k, v in created.items() if k != "created"}
    assert api.error("GET", "/api/v1/tasks/999", status=404)["got"] == 999
    recurring = api.ok("POST", "/api/v1/tasks", {"type": "load-git", "arguments": {"args": ["https://x/b"]}}, status=201)
    assert recurring["current_interval"] == 86400 and recurring["policy"] == "recurring"
    found = api.ok("GET", "/api/v1/tasks", params={"policy": "oneshot", "priority": ["high"], "type": "load-git"})
    assert [t["id"] for t in found["items"]] == [created["id"]]
    assert [t["id"] for t in api.ok("GET", "/api/v1/tasks", params={"priority": "none"})["items"]] == [recurring["id"]]


@pytest.mark.parametrize("body, field", [
    ({"type": "load-nothing"}, "type"),
    ({"type": "load-git", "policy": "sometimes"}, "policy"),
    ({"type": "load-git", "priority": "urgent"}, "priority"),
    ({"type": "load-git", "next_run": "yesterday-ish"}, "next_run"),
    ({"type": "load-git", "arguments": {"args": "x"}}, "arguments.args"),
    ({"type": "load-git", "current_interval": -5}, "current_interval"),
    ({"kind": "load-git"}, "kind"),
    (["load-git"], "body"),
])
def test_bad_tasks_name_the_field_and_change_nothing(api, body, field):
    api.ok("POST", "/api/v1/task-types", GIT, status=201)
    assert api.error("POST", "/api/v1/tasks", body)["field"] == field
    assert api.store.search_tasks() == []


def test_bad_filters_name_the_field(api):
    assert api.error("GET", "/api/v1/tasks", params={"status": "sleeping"})["field"] == "status"
    assert api.error("GET", "/api/v1/tasks", params={"type": "nope"})["field"] == "type"
    assert api.error("GET", "/api/v1/tasks", params={"after": "x"})["field"] == "after"
    assert api.error("GET", "/api/v1/task-runs", params={"status": "done"})["field"] == "status"
    assert api.error("GET", "/api/v1/tasks", params={"limit": 1001})["field"] == "limit"


def test_paging(api):
    api.ok("POST", "/api/v1/task-types", GIT, status=201)
    for n in range(7):
        api.ok("POST", "/api/v1/tasks", {"type": "load-git", "arguments": {"args": [f"https://x/{n}"]}}, status=201)
    items, pages = api.all_pages("/api/v1/tasks", 3)
    assert pages == 3 and [t["arguments"]["args"][0] for t in items] == [f"https://x/{n}" for n in range(7)]
    first = api.ok("GET", "/api/v1/tasks", params={"limit": 7})
    assert len(first["items"]) == 7 and first["next"] is None
    for n in range(3):
        api.ok("POST", "/api/v1/task-types", {**GIT, "type": f"t{n}"}, status=201)
    names, pages = api.all_pages("/api/v1/task-types", 2)
    assert [t["type"] for t in names] == ["load-git", "t0", "t1", "t2"] and pages == 2


def test_task_runs(api, clock):
    api.ok("POST", "/api/v1/task-types", GIT, status=201)
    for n in range(3):
        api.ok("POST", "/api/v1/tasks", {"type": "load-git", "arguments": {"args": [n]}}, status=201)
    grabbed = api.store.grab_ready_tasks("load-git", clock.now(), 10)
    api.store.record_run_events([RunEvent(grabbed[0].run.id, TaskRunStatus.EVENTFUL, clock.now())])
    runs, pages = api.all_pages("/api/v1/task-runs", 2)
    assert len(runs) == 3 and pages == 2
    eventful = api.ok("GET", "/api/v1/task-runs", params={"status": "eventful"})["items"]
    assert [r["task"] for r in eventful] == [grabbed[0].task.id]
    of_task = api.ok("GET", "/api/v1/task-runs", params={"task": grabbed[1].task.id})["items"]
    assert [r["status"] for r in of_task] == ["scheduled"]
