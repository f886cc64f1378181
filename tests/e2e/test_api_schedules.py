"""The API's schedules, on every store: create, get, list (paged), conditions worst first,
pause and resume, next start and fire times, runs; bad input names the field and changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from test_api_helpers import Api

from ostinato.domain.schedules import RunStatus

PERIODIC = {"name": "bills", "kind": "periodic", "task_type": "scrape", "arguments": {"args": [], "kwargs": {"state": "ca"}},
            "scheduling_period": "1h", "cooldown_duration": "10m", "tz": "America/Los_Angeles",
            "blackout_periods": [{"start": "23:00", "end": "01:00"}]}
CALENDAR = {"name": "nightly", "kind": "calendar", "task_type": "scrape", "cron_schedule": "Mon..Fri *-*-* 02:00",
            "cron_max_schedule_duration": "4h", "tz": "Europe/Paris", "mode": "submit"}


@pytest.fixture
def api(store, clock):
    api = Api(store, clock)
    api.ok("POST", "/api/v1/task-types", {"type": "scrape", "backend_name": "x:y"}, status=201)
    return api


def test_create_and_get(api, clock):
    created = api.ok("POST", "/api/v1/schedules", PERIODIC, status=201)
    assert created["scheduling_period"] == 3600 and created["created_at"] == clock.now().isoformat()
    assert created["condition"] == "OK" and created["should_start_by"] and not created["running"]
    assert api.ok("GET", "/api/v1/schedules/bills") == {**created, "firings": []}  # with its ledger of fire times
    calendar = api.ok("POST", "/api/v1/schedules", CALENDAR, status=201)
    assert calendar["mode"] == "submit" and calendar["cron_schedule"] == "Mon..Fri *-*-* 02:00"
    assert "already" in api.error("POST", "/api/v1/schedules", PERIODIC, status=409)["message"]
    assert api.error("GET", "/api/v1/schedules/none", status=404)["got"] == "none"


@pytest.mark.parametrize("change, field", [
    ({"cron_schedule": "every tuesday-ish", "kind": "calendar", "scheduling_period": None,
      "cron_max_schedule_duration": "1h"}, "cron_schedule"),
    ({"tz": "Mars/Olympus"}, "tz"),
    ({"scheduling_period": -60}, "scheduling_period"),
    ({"task_type": "unknown"}, "task_type"),
    ({"kind": "sometimes"}, "kind"),
    ({"owner_tag": "mine"}, "owner_tag"),
    ({"name": "has spaces"}, "name"),
    ({"blackout_periods": [{"start": "25:00", "end": "01:00"}]}, "blackout_periods"),
])
def test_bad_schedules_name_the_field_and_change_nothing(api, change, field):
    error = api.error("POST", "/api/v1/schedules", {**PERIODIC, **change})
    assert error["field"].startswith(field), error
    assert api.store.list_schedules() == []


def test_list_is_paged_by_name(api):
    for n in range(5):
        api.ok("POST", "/api/v1/schedules", {**PERIODIC, "name": f"s{n}"}, status=201)
    items, pages = api.all_pages("/api/v1/schedules", 2)
    assert [s["name"] for s in items] == [f"s{n}" for n in range(5)] and pages == 3


def test_conditions_worst_first(api, clock):
    api.ok("POST", "/api/v1/schedules", {**PERIODIC, "name": "fine"}, status=201)
    api.ok("POST", "/api/v1/schedules", {**PERIODIC, "name": "paused", "enabled": False}, status=201)
    clock.advance(timedelta(minutes=30))
    api.ok("POST", "/api/v1/schedules", {**PERIODIC, "name": "young"}, status=201)
    clock.advance(timedelta(minutes=45))  # "fine" never ran within its hour: stale
    rows, pages = api.all_pages("/api/v1/schedule-conditions", 2)
    assert pages == 2
    assert [(r["name"], r["condition"], r["reason"]) for r in rows] == [
        ("fine", "ERROR", "stale"), ("paused", "WARNING", "paused"), ("young", "OK", None)]
    earlier = api.ok("GET", "/api/v1/schedule-conditions", params={"at": "-1h"})["items"]
    assert [r["condition"] for r in earlier] == ["WARNING", "OK", "OK"]
    one = api.ok("GET", "/api/v1/schedules/fine/condition")
    assert one["condition"] == "ERROR" and one["reason"] == "stale"
    assert api.error("GET", "/api/v1/schedules/fine/condition", params={"at": "teatime"})["field"] == "at"


def test_pause_and_resume(api):
    api.ok("POST", "/api/v1/schedules", PERIODIC, status=201)
    paused = api.ok("POST", "/api/v1/schedules/bills/pause")
    assert not paused["enabled"] and paused["reason"] == "paused" and paused["should_start_by"] is None
    assert not api.store.get_schedule("bills").enabled
    assert api.get("/api/v1/schedules/bills/resume", scope="admin").status_code == 405
    assert api.post("/api/v1/schedules/bills/resume", scope="read").status_code == 403
    resumed = api.ok("POST", "/api/v1/schedules/bills/resume")
    assert resumed["enabled"] and resumed["condition"] == "OK"
    api.error("POST", "/api/v1/schedules/none/pause", status=404)


def test_next_times(api):
    api.ok("POST", "/api/v1/schedules", PERIODIC, status=201)
    api.ok("POST", "/api/v1/schedules", CALENDAR, status=201)
    periodic = api.ok("GET", "/api/v1/schedules/bills/next")
    assert periodic["can_start_by"] and periodic["firings"] == []
    calendar = api.ok("GET", "/api/v1/schedules/nightly/next", params={"count": 3})
    # 2026-01-01 is a Thursday: Fri 2nd, Mon 5th, Tue 6th at 02:00 in Paris, in the rule's zone
    assert [f["at"] for f in calendar["firings"]] == ["2026-01-02T02:00:00+01:00", "2026-01-05T02:00:00+01:00",
                                                     "2026-01-06T02:00:00+01:00"]
    assert api.error("GET", "/api/v1/schedules/nightly/next", params={"count": 0})["field"] == "count"


def test_runs_newest_first_paged(api, clock):
    api.ok("POST", "/api/v1/schedules", {**PERIODIC, "blackout_periods": []}, status=201)
    for _ in range(3):
        schedule, run = api.store.pick_schedule(node="n", owner_name="a", tag=f"tag-{clock.now().timestamp()}", now=clock.now())
        clock.advance(timedelta(minutes=1))
        api.store.end_schedule_run("bills", run.owner_tag, status=RunStatus.SUCCEEDED, ended=clock.now())
        clock.advance(timedelta(hours=1))
    runs, pages = api.all_pages("/api/v1/schedules/bills/runs", 2)
    assert pages == 2 and [r["status"] for r in runs] == ["succeeded"] * 3
    assert [r["id"] for r in runs] == sorted((r["id"] for r in runs), reverse=True)
    api.error("GET", "/api/v1/schedules/none/runs", status=404)


def test_patch_changes_only_the_fields_given_checked_as_at_creation(api):
    created = api.ok("POST", "/api/v1/schedules", PERIODIC, status=201)

    def patch(body, scope="admin"):
        return api.client.patch("/api/v1/schedules/bills", json=body, headers=api.headers(scope))

    changed = patch({"scheduling_period": "30m", "cooldown_duration": None})
    assert changed.status_code == 200, changed.text
    after = changed.json()
    assert (after["scheduling_period"], after["cooldown_duration"]) == (1800, None)
    assert after["blackout_periods"] == created["blackout_periods"] and after["created_at"] == created["created_at"]
    assert after["arguments"] == created["arguments"] and after["tz"] == created["tz"]
    before = api.ok("GET", "/api/v1/schedules/bills")
    for body, field in [({"cooldown_duration": "2h"}, "cooldown_duration"), ({"tz": "Mars/Olympus"}, "tz"),
                        ({"scheduling_period": -60}, "scheduling_period"), ({"task_type": "unknown"}, "task_type"),
                        ({"name": "other"}, "name"), ({"owner_tag": "mine"}, "owner_tag")]:
        refused = patch(body)
        assert refused.status_code == 400 and refused.json()["error"]["field"] == field, (body, refused.text)
    assert patch({"tz": "UTC"}, scope="read").status_code == 403
    assert api.ok("GET", "/api/v1/schedules/bills") == before  # nothing changed by the refused ones
    assert api.client.patch("/api/v1/schedules/none", json={"tz": "UTC"}, headers=api.headers("admin")).status_code == 404


def test_run_now_is_an_admin_action_that_keeps_one_running_copy(api, store, clock):
    api.ok("POST", "/api/v1/schedules", PERIODIC, status=201)
    assert api.client.post("/api/v1/schedules/bills/run-now", headers=api.headers("read")).status_code == 403
    picked = store.pick_schedule(node="n", owner_name="a", tag="t1", now=clock.now())
    assert picked is not None  # new: it runs
    clock.advance(timedelta(seconds=1))
    asked = api.ok("POST", "/api/v1/schedules/bills/run-now")
    assert asked["run_requested_at"] == clock.now().isoformat() and asked["owner_tag"] == "t1"
    assert store.pick_schedule(node="n", owner_name="a", tag="t2", now=clock.now()) is None  # never two at once
    store.end_schedule_run("bills", "t1", status=RunStatus.SUCCEEDED, ended=clock.now())
    assert store.pick_schedule(node="n", owner_name="a", tag="t3", now=clock.now())[0].name == "bills"
    api.ok("POST", "/api/v1/schedules/bills/pause")
    refused = api.client.post("/api/v1/schedules/bills/run-now", headers=api.headers("admin"))
    assert refused.status_code == 409 and "paused" in refused.text
    assert api.client.post("/api/v1/schedules/ghost/run-now", headers=api.headers("admin")).status_code == 404
