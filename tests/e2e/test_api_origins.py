"""The API's origin side, on every store: listers, listed origins and visit statuses in bulk
(every item checked first; a bad one answered with its index and field, nothing written),
grabbing the next visits (dry run or real), origin metrics."""

from __future__ import annotations

from datetime import timedelta

import pytest
from test_api_helpers import Api, add_loader

ORIGINS = [{"url": f"https://example.org/{n}", "visit_type": "git", "last_update": f"2025-12-0{n + 1}T00:00:00Z"}
           for n in range(3)]


@pytest.fixture
def api(store, clock):
    api = Api(store, clock)
    add_loader(api, "git")
    return api


def lister(api, name="gh", status=201):
    return api.ok("POST", "/api/v1/listers", {"name": name}, status=status)


def test_listers(api):
    created = lister(api)
    assert created["created"] and created["instance_name"] == "gh"
    again = lister(api, status=200)
    assert again["id"] == created["id"] and not again["created"]
    for name in ("a", "b", "c"):
        lister(api, name)
    items, pages = api.all_pages("/api/v1/listers", 3)
    assert [i["name"] for i in items] == ["gh", "a", "b", "c"] and pages == 2
    assert api.error("POST", "/api/v1/listers", {"name": ""})["field"] == "name"
    assert api.error("POST", "/api/v1/listers", {"name": "x", "instance": "y"})["field"] == "instance"
    assert len(api.store.list_listers()) == 4


def test_listed_origins_in_bulk(api):
    lister_id = lister(api)["id"]
    answer = api.ok("POST", f"/api/v1/listers/{lister_id}/origins", ORIGINS + [ORIGINS[0]])
    assert answer == {"lister_id": lister_id, "items": 4, "recorded": 3, "merged": 1}
    stored = api.store.get_listed_origins(lister_id=lister_id)
    assert [s.origin.url for s in stored] == [o["url"] for o in ORIGINS]
    api.error("POST", "/api/v1/listers/999/origins", ORIGINS, status=404)


@pytest.mark.parametrize("bad, field", [
    ({"url": "", "visit_type": "git"}, "url"),
    ({"url": "https://x", "visit_type": "svn"}, "visit_type"),
    ({"url": "https://x", "visit_type": "git", "last_update": "last week"}, "last_update"),
    ({"url": "https://x", "visit_type": "git", "stars": 5}, "stars"),
    ("https://x", "record"),
])
def test_a_bad_listed_origin_is_answered_with_its_index_and_nothing_is_written(api, bad, field):
    lister_id = lister(api)["id"]
    error = api.error("POST", f"/api/v1/listers/{lister_id}/origins", ORIGINS[:2] + [bad] + ORIGINS[2:])
    assert error["index"] == 2 and error["field"] == field and error["message"].startswith("item 2: ")
    assert api.store.get_listed_origins() == []


def test_bulk_bodies_must_be_arrays(api):
    lister_id = lister(api)["id"]
    assert api.error("POST", f"/api/v1/listers/{lister_id}/origins", ORIGINS[0])["field"] == "body"
    assert api.error("POST", "/api/v1/visit-statuses", {"origin": "x"})["field"] == "body"


def status(url, date, snapshot="aa", visit=1, state="full"):
    return {"origin": url, "visit": visit, "type": "git", "status": state, "date": date, "snapshot": snapshot}


def test_visit_statuses_in_bulk(api):
    lister_id = lister(api)["id"]
    api.ok("POST", f"/api/v1/listers/{lister_id}/origins", ORIGINS)
    url = ORIGINS[0]["url"]
    answer = api.ok("POST", "/api/v1/visit-statuses", [
        status(url, "2026-01-01T10:00:00Z", visit=2, snapshot="bb"), status(url, "2026-01-01T09:00:00Z"),
        status(url, "2026-01-01T08:00:00Z", state="ongoing", snapshot=None)])
    assert answer == {"statuses": 3, "changed": 2, "ignored": 1}
    [stats] = api.store.get_visit_stats([(url, "git")])
    assert stats.last_snapshot == bytes.fromhex("bb") and stats.successful_visits == 2
    replay = api.ok("POST", "/api/v1/visit-statuses", [status(url, "2026-01-01T10:00:00Z", visit=2, snapshot="bb")])
    assert replay["changed"] == 0


@pytest.mark.parametrize("change, field", [
    ({"status": "done"}, "status"), ({"date": "noon"}, "date"), ({"snapshot": "zz"}, "snapshot"),
    ({"type": "svn"}, "type"), ({"visit": -1}, "visit"), ({"origin": None}, "origin"),
])
def test_a_bad_visit_status_is_answered_with_its_index_and_nothing_is_written(api, change, field):
    lister_id = lister(api)["id"]
    api.ok("POST", f"/api/v1/listers/{lister_id}/origins", ORIGINS)
    good = status(ORIGINS[0]["url"], "2026-01-01T10:00:00Z")
    error = api.error("POST", "/api/v1/visit-statuses", [good, {**good, **change}])
    assert error["index"] == 1 and error["field"] == field
    assert api.store.get_visit_stats([(ORIGINS[0]["url"], "git")])[0].last_status_date is None


def test_what_a_visit_saw_of_its_changes_goes_in_and_comes_out(api):
    url = ORIGINS[0]["url"]
    path = f"/api/v1/visit-changes?url={url}&visit_type=git"
    assert api.error("GET", path, status=404)["message"].startswith("visit changes not found")
    times = ["2026-01-01T09:30:00+01:00", "2025-06-01T00:00:00Z", "2026-01-01T08:00:00.000250Z"]
    api.ok("POST", "/api/v1/visit-statuses", [{**status(url, "2026-01-01T10:00:00Z"), "changes": 3, "change_times": times},
                                              status(ORIGINS[1]["url"], "2026-01-01T10:00:00Z")])
    assert api.ok("GET", path) == {
        "url": url, "visit_type": "git", "status_date": "2026-01-01T10:00:00+00:00",
        "newest_change_at": "2026-01-01T08:30:00+00:00",
        "change_times": ["2025-06-01T00:00:00+00:00", "2026-01-01T08:00:00.000250+00:00", "2026-01-01T08:30:00+00:00"]}
    api.ok("POST", "/api/v1/visit-statuses", [{**status(url, "2026-01-02T10:00:00Z"),
                                               "newest_change_at": "2026-01-02T09:00:00Z"}])
    assert api.ok("GET", path)["change_times"] is None
    assert api.error("GET", f"/api/v1/visit-changes?url={ORIGINS[1]['url']}&visit_type=git", status=404)


@pytest.mark.parametrize("change, field", [
    ({"change_times": ["2026-01-01T09:00:00Z", "yesterday"]}, "change_times[1]"),
    ({"change_times": ["2026-01-01T09:00:00"]}, "change_times[0]"),
    ({"change_times": ["2026-01-01T09:00:00Z", "2026-01-01T11:00:01Z"]}, "change_times[1]"),
    ({"change_times": ["2026-01-01T09:00:00Z"] * 65}, "change_times"),
    ({"change_times": ["2026-01-01T09:00:00Z"] * 2, "changes": 1}, "changes"),
    ({"newest_change_at": "2026-01-01T08:00:00Z", "change_times": ["2026-01-01T09:00:00Z"]}, "newest_change_at"),
    ({"newest_change_at": "2026-01-01T12:00:00Z"}, "newest_change_at"),
])
def test_a_bad_change_time_is_answered_naming_the_field_and_nothing_is_written(api, change, field):
    url = ORIGINS[0]["url"]
    good = {**status(url, "2026-01-01T10:00:00Z"), "change_times": ["2026-01-01T09:00:00Z"]}
    error = api.error("POST", "/api/v1/visit-statuses", [good, {**status(ORIGINS[1]["url"], "2026-01-01T10:00:00Z"), **change}])
    assert error["index"] == 1 and error["field"] == field and error["message"].startswith(f"item 1: {field}: ")
    keys = [(url, "git"), (ORIGINS[1]["url"], "git")]
    assert api.store.get_visit_changes(keys) == [] and api.store.get_visit_stats(keys) == []


def test_grab_next(api, clock):
    lister_id = lister(api)["id"]
    api.ok("POST", f"/api/v1/listers/{lister_id}/origins", ORIGINS)
    body = {"visit_type": "git", "count": 2, "policies": {"never_visited_oldest_update_first": 1}}
    dry = api.ok("POST", "/api/v1/origins/grab-next", {**body, "dry_run": True})
    assert dry["dry_run"] and [v["url"] for v in dry["items"]] == [ORIGINS[0]["url"], ORIGINS[1]["url"]]
    assert dry["items"][0]["lister"] == "gh/gh"
    assert api.post("/api/v1/origins/grab-next", {**body, "dry_run": True}, scope="read").status_code == 403
    real = api.ok("POST", "/api/v1/origins/grab-next", body)
    assert real["items"] == dry["items"] and not real["dry_run"]
    rest = api.ok("POST", "/api/v1/origins/grab-next", {**body, "lister_id": lister_id})
    assert [v["url"] for v in rest["items"]] == [ORIGINS[2]["url"]]
    assert api.ok("POST", "/api/v1/origins/grab-next", {"visit_type": "git"})["count"] == 0


@pytest.mark.parametrize("body, field", [
    ({"visit_type": "svn"}, "visit_type"),
    ({"visit_type": "git", "count": -1}, "count"),
    ({"visit_type": "git", "policies": {"fastest_first": 1}}, "policies.fastest_first"),
    ({"visit_type": "git", "policies": {"oldest_scheduled_first": 0}}, "policies"),
    ({"visit_type": "git", "dry_run": "yes"}, "dry_run"),
    ({"visit_type": "git", "lister_id": "gh"}, "lister_id"),
])
def test_a_bad_grab_names_the_field_and_takes_nothing(api, body, field):
    lister_id = lister(api)["id"]
    api.ok("POST", f"/api/v1/listers/{lister_id}/origins", ORIGINS)
    assert api.error("POST", "/api/v1/origins/grab-next", body)["field"] == field
    assert all(s.last_scheduled is None for s in api.store.get_visit_stats([(o["url"], "git") for o in ORIGINS]))


def test_origin_metrics(api, clock):
    for name in ("a", "b", "c"):
        lister_id = lister(api, name)["id"]
        api.ok("POST", f"/api/v1/listers/{lister_id}/origins", ORIGINS)
    assert api.ok("GET", "/api/v1/origin-metrics") == {"items": [], "next": None}
    assert api.post("/api/v1/origin-metrics/update", scope="read").status_code == 403
    assert api.ok("POST", "/api/v1/origin-metrics/update")["updated"] == 3
    items, pages = api.all_pages("/api/v1/origin-metrics", 2)
    assert pages == 2 and [m["lister"] for m in items] == ["a/a", "b/b", "c/c"]
    assert items[0]["origins_known"] == 3 and items[0]["origins_with_pending_changes"] == 3
    assert sum(items[0]["lag_histogram"].values()) == 3 and items[0]["lag_max"] >= timedelta(days=31).total_seconds()
    only = api.ok("GET", "/api/v1/origin-metrics", params={"lister_id": items[1]["lister_id"]})["items"]
    assert [m["lister"] for m in only] == ["b/b"]
    assert api.error("GET", "/api/v1/origin-metrics", params={"after": "x"})["field"] == "after"
