"""The API's politeness per host (docs/reference/origins.md, "Politeness per host"), on every store:
a visit type's limits and a host's own, read and set; bad input answered with its field, nothing
stored; listings carry a lister's host key and the grab keeps the limits."""

from __future__ import annotations

import pytest
from test_api_helpers import Api, add_loader

BASE = "/api/v1/visit-types/git/politeness"


@pytest.fixture
def api(store, clock):
    api = Api(store, clock)
    add_loader(api, "git")
    return api


def test_set_and_get_and_the_grab_keeps_them(api):
    assert api.ok("GET", BASE) == {"visit_type": "git", "max_concurrent_per_host": None, "min_spacing_per_host": None,
                                   "hosts": []}
    assert api.ok("POST", BASE, {"max_concurrent_per_host": 1, "min_spacing_per_host": "0s"})["max_concurrent_per_host"] == 1
    found = api.ok("POST", f"{BASE}/hosts/mirror", {"max_concurrent": 2, "min_spacing": 0})
    assert found["hosts"] == [{"host": "mirror", "max_concurrent": 2, "min_spacing": 0.0}]
    lister_id = api.ok("POST", "/api/v1/listers", {"name": "gh"}, status=201)["id"]
    origins = [{"url": f"https://big.example/{i}", "visit_type": "git"} for i in range(5)]
    origins += [{"url": f"https://cdn.example/{i}", "visit_type": "git", "host": "mirror"} for i in range(5)]
    api.ok("POST", f"/api/v1/listers/{lister_id}/origins", origins)
    grabbed = api.ok("POST", "/api/v1/origins/grab-next", {"visit_type": "git", "count": 10,
                                                            "policies": {"oldest_scheduled_first": 1}})
    assert sorted(i["url"].split("/")[2] for i in grabbed["items"]) == ["big.example", "cdn.example", "cdn.example"]


@pytest.mark.parametrize("path, body, field", [
    (BASE, {"max_concurrent_per_host": 0}, "max_concurrent_per_host"),
    (BASE, {"max_concurrent_per_host": -3}, "max_concurrent_per_host"),
    (BASE, {"min_spacing_per_host": -1}, "min_spacing_per_host"),
    (BASE, {"min_spacing_per_host": "soon"}, "min_spacing_per_host"),
    (BASE, {"max_concurrent": 2}, "max_concurrent"),
    (f"{BASE}/hosts/h", {"max_concurrent": 0}, "max_concurrent"),
    (f"{BASE}/hosts/h", {"min_spacing": "-2s"}, "min_spacing"),
    ("/api/v1/visit-types/svn/politeness", {"max_concurrent_per_host": 2}, "visit_type"),
])
def test_bad_input_names_the_field_and_stores_nothing(api, path, body, field):
    assert api.error("POST", path, body)["field"] == field
    assert api.ok("GET", BASE)["max_concurrent_per_host"] is None and api.ok("GET", BASE)["hosts"] == []


def test_an_unknown_visit_type_has_no_politeness_to_show(api):
    error = api.error("GET", "/api/v1/visit-types/svn/politeness", status=404)
    assert "svn" in error["message"]
