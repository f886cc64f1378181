"""The API's tokens: no token 401, a read token may only read (403 on writes), an admin token
may do everything, a revoked one nothing; /health and the OpenAPI description are open. And
`ostinato token add|list|revoke`."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from test_api_helpers import Api

from ostinato.api.tokens import hash_secret
from ostinato.cli import cli
from ostinato.remote.verbs import store_verbs
from ostinato.store import open_store


@pytest.fixture
def api(store, clock):
    return Api(store, clock)


def test_health_is_open(api):
    answer = api.ok("GET", "/health", scope=None)
    assert answer["status"] == "ok" and answer["schema_version"] == answer["schema_latest"]


@pytest.mark.parametrize("path", ["/api/v1/task-types", "/api/v1/tasks", "/api/v1/schedules", "/api/v1/listers", "/metrics"])
def test_no_token_no_access(api, path):
    response = api.get(path, scope=None)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["field"] == "authorization"


def test_wrong_or_malformed_tokens_are_refused(api):
    for header in ("Bearer not-a-token", "Basic dXNlcjpwYXNz", "Bearer", api.secrets["read"]):
        response = api.client.get("/api/v1/tasks", headers={"Authorization": header})
        assert response.status_code == 401, header


def test_a_read_token_reads_but_may_not_write(api):
    assert api.get("/api/v1/task-types", scope="read").status_code == 200
    error = api.error("POST", "/api/v1/task-types", {"type": "t", "backend_name": "x:y"}, scope="read", status=403)
    assert error["field"] == "authorization" and error["got"] == "read"
    assert api.store.list_task_types() == []


def test_an_admin_token_reads_and_writes(api):
    api.ok("POST", "/api/v1/task-types", {"type": "t", "backend_name": "x:y"}, scope="admin", status=201)
    assert [t["type"] for t in api.ok("GET", "/api/v1/task-types", scope="admin")["items"]] == ["t"]


def test_a_revoked_token_is_refused(api, clock):
    api.store.revoke_api_token("reader", clock.now(), actor="tests")
    error = api.error("GET", "/api/v1/tasks", status=401)
    assert "revoked" in error["message"]


def test_use_is_recorded(api, clock):
    api.ok("GET", "/api/v1/tasks")
    [reader] = [t for t in api.store.list_api_tokens() if t["name"] == "reader"]
    assert reader["last_used_at"] == clock.now()


def test_openapi_lists_every_endpoint_and_the_docs_are_served(api):
    document = api.ok("GET", "/openapi.json", scope=None)
    paths = document["paths"]
    expected = {
        ("/api/v1/task-types", "get"), ("/api/v1/task-types", "post"), ("/api/v1/task-types/{type_name}", "get"),
        ("/api/v1/task-types/{type_name}", "patch"), ("/api/v1/task-types/{type_name}", "delete"),
        ("/api/v1/tasks", "get"), ("/api/v1/tasks", "post"), ("/api/v1/tasks/{task_id}", "get"),
        ("/api/v1/task-runs", "get"), ("/api/v1/schedules", "get"), ("/api/v1/schedules", "post"),
        ("/api/v1/schedules/{name}", "get"), ("/api/v1/schedules/{name}", "patch"),
        ("/api/v1/schedules/{name}/pause", "post"),
        ("/api/v1/schedules/{name}/resume", "post"), ("/api/v1/schedules/{name}/run-now", "post"),
        ("/api/v1/schedules/{name}/condition", "get"), ("/api/v1/history", "get"),
        ("/api/v1/schedules/{name}/next", "get"), ("/api/v1/schedules/{name}/runs", "get"),
        ("/api/v1/schedule-conditions", "get"), ("/api/v1/listers", "get"), ("/api/v1/listers", "post"),
        ("/api/v1/listers/{lister_id}/origins", "post"), ("/api/v1/visit-statuses", "post"), ("/api/v1/visit-changes", "get"),
        ("/api/v1/origins/grab-next", "post"), ("/api/v1/origin-metrics", "get"),
        ("/api/v1/origin-metrics/update", "post"), ("/health", "get"), ("/metrics", "get"),
        ("/api/v1/visit-types/{visit_type}/politeness", "get"),
        ("/api/v1/visit-types/{visit_type}/politeness", "post"),
        ("/api/v1/visit-types/{visit_type}/politeness/hosts/{host}", "post"),
    }
    # and one POST per store verb the remote store client calls (api/store_rpc.py)
    expected |= {(f"/api/v1/store/{verb}", "post") for verb in store_verbs()}
    assert {(path, method) for path, methods in paths.items() for method in methods} == expected
    assert "HTTPBearer" in document["components"]["securitySchemes"]
    assert paths["/api/v1/tasks"]["get"]["security"] == [{"HTTPBearer": []}]
    docs = api.client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    # offline: every asset the page loads is served here, none from a CDN
    assets = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    assert assets and all(a.startswith("/docs-assets/") for a in assets), assets
    for asset in assets:
        served = api.client.get(asset)
        assert served.status_code == 200 and len(served.content) > 100, asset
    assert "cdn" not in docs.text.lower()


def test_errors_are_json_naming_the_field(api):
    response = api.client.post("/api/v1/tasks", content=b"{not json", headers={**api.headers("admin"),
                                                                                 "Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["error"]["field"] == "body"
    error = api.error("GET", "/api/v1/tasks", params={"limit": "many"})
    assert error["field"] == "limit"
    error = api.error("GET", "/api/v1/nowhere", status=404)
    assert error["message"] == "Not Found"


# -- ostinato token ---------------------------------------------------------------------
def _run(url, *args):
    return CliRunner().invoke(cli, ["--db", url, *args])


def test_token_commands(fresh_url):
    assert _run(fresh_url, "db", "init").exit_code == 0
    added = _run(fresh_url, "token", "add", "grafana", "--scope", "read")
    assert added.exit_code == 0, added.output
    secret = added.stdout.splitlines()[1]
    assert len(secret) >= 43
    as_json = json.loads(_run(fresh_url, "token", "add", "deploy", "--scope", "admin", "--json").stdout)
    assert as_json["scope"] == "admin" and as_json["secret"] and as_json["active"]
    with open_store(fresh_url) as store:
        assert store.find_api_token(hash_secret(secret))["name"] == "grafana"
    listed = json.loads(_run(fresh_url, "token", "list", "--json").stdout)
    assert [(t["name"], t["scope"], t["active"]) for t in listed] == [("deploy", "admin", True), ("grafana", "read", True)]
    assert secret not in _run(fresh_url, "token", "list").stdout
    revoked = _run(fresh_url, "token", "revoke", "grafana")
    assert revoked.exit_code == 0 and "Revoked token grafana" in revoked.stdout
    assert [t["active"] for t in json.loads(_run(fresh_url, "token", "list", "--json").stdout)] == [True, False]


def test_token_command_errors(fresh_url):
    assert _run(fresh_url, "db", "init").exit_code == 0
    bad_scope = _run(fresh_url, "token", "add", "x", "--scope", "write")
    assert bad_scope.exit_code == 2 and "scope: expected read, worker or admin" in bad_scope.output
    assert _run(fresh_url, "token", "add", "x", "--scope", "read").exit_code == 0
    taken = _run(fresh_url, "token", "add", "x", "--scope", "admin")
    assert taken.exit_code == 1 and "already exists" in taken.output
    missing = _run(fresh_url, "token", "revoke", "nobody")
    assert missing.exit_code == 1 and "api token not found: nobody" in missing.output
    empty = _run(fresh_url, "token", "add", " ", "--scope", "read")
    assert empty.exit_code == 2 and "NAME: expected" in empty.output
