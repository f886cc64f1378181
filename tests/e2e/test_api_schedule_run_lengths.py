"""The API and run lengths, on every store: expected_duration and partial_failure_threshold in a
schedule's body, its spread and last items shown; a run's end with its items over the store's verbs;
the partial_failure reason; bad values a 400 naming the field, with nothing written."""

from __future__ import annotations

from datetime import timedelta

import pytest
from test_api_helpers import Api

PERIODIC = {"name": "bills", "kind": "periodic", "task_type": "scrape", "scheduling_period": "1d",
            "cooldown_duration": "1h"}


@pytest.fixture(params=["sqlite", "postgresql"])
def api(request, clock):
    api = Api(request.getfixturevalue({"sqlite": "sqlite_store", "postgresql": "pg_store"}[request.param]), clock)
    api.ok("POST", "/api/v1/task-types", {"type": "scrape", "backend_name": "x:y"}, status=201)
    return api


def test_the_new_fields_are_set_shown_and_changed(api):
    created = api.ok("POST", "/api/v1/schedules", {**PERIODIC, "expected_duration": "20m",
                                                   "partial_failure_threshold": 0.25}, status=201)
    assert (created["expected_duration"], created["partial_failure_threshold"]) == (1200, 0.25)
    assert (created["duration_spread"], created["last_items_done"], created["last_items_failed"]) == (None, None, None)
    patched = api.ok("PATCH", "/api/v1/schedules/bills", {"expected_duration": None, "partial_failure_threshold": 0})
    assert (patched["expected_duration"], patched["partial_failure_threshold"]) == (None, 0)
    assert api.ok("GET", "/api/v1/schedules/bills")["expected_duration"] is None


@pytest.mark.parametrize("change, field", [
    ({"expected_duration": 0}, "expected_duration"),
    ({"expected_duration": -60}, "expected_duration"),
    ({"expected_duration": "soon"}, "expected_duration"),
    ({"partial_failure_threshold": 1.5}, "partial_failure_threshold"),
    ({"partial_failure_threshold": -0.1}, "partial_failure_threshold"),
    ({"partial_failure_threshold": True}, "partial_failure_threshold"),
    ({"partial_failure_threshold": "a tenth"}, "partial_failure_threshold"),
    ({"duration_spread": 5}, "duration_spread"),  # state: the scheduler's
    ({"last_items_done": 5}, "last_items_done"),
])
def test_bad_values_are_400_naming_the_field_and_store_nothing(api, change, field):
    error = api.error("POST", "/api/v1/schedules", {**PERIODIC, **change})
    assert error["field"].startswith(field), error
    assert api.store.list_schedules() == []


@pytest.mark.parametrize("change, field", [({"partial_failure_threshold": 2}, "partial_failure_threshold"),
                                           ({"expected_duration": 0}, "expected_duration")])
def test_a_bad_patch_is_400_naming_the_field_and_changes_nothing(api, change, field):
    before = api.ok("POST", "/api/v1/schedules", {**PERIODIC, "expected_duration": "5m"}, status=201)
    error = api.error("PATCH", "/api/v1/schedules/bills", change)
    assert error["field"].startswith(field), error
    assert api.ok("GET", "/api/v1/schedules/bills")["expected_duration"] == before["expected_duration"] == 300


def test_a_runs_items_over_the_store_verbs_and_the_partial_failure_reason(api, clock):
    api.ok("POST", "/api/v1/schedules", {**PERIODIC, "partial_failure_threshold": 0.2}, status=201)
    now = clock.now()
    assert api.store.pick_schedule(node="n", owner_name="me", tag="t1", now=now) is not None
    end = {"name": "bills", "tag": "t1", "status": "succeeded", "ended": (now + timedelta(minutes=5)).isoformat()}
    for items, field in [({"items_done": -1, "items_failed": 0}, "items_done"),
                         ({"items_done": 1, "items_failed": 0.5}, "items_failed"),
                         ({"items_done": True, "items_failed": 0}, "items_done")]:
        error = api.error("POST", "/api/v1/store/end_schedule_run", {**end, "items": items}, scope="worker")
        assert error["field"] == field, error
        assert api.store.get_schedule("bills").running  # nothing written
    ended = api.ok("POST", "/api/v1/store/end_schedule_run", {**end, "items": {"items_done": 7, "items_failed": 3}},
                   scope="worker")
    assert ended == {"result": True}
    shown = api.ok("GET", "/api/v1/schedules/bills")
    assert (shown["last_items_done"], shown["last_items_failed"], shown["duration_spread"]) == (7, 3, 0)
    assert (shown["condition"], shown["reason"]) == ("WARNING", "partial_failure")
    assert api.ok("GET", "/api/v1/schedules/bills/condition")["reason"] == "partial_failure"
    [run] = api.ok("GET", "/api/v1/schedules/bills/runs")["items"]
    assert run["detail"] == {"items_done": 7, "items_failed": 3}
