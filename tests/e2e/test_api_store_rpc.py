"""The store's verbs over HTTP (``POST /api/v1/store/<verb>``), as any program sees them: scopes,
JSON errors naming the field, the store's own errors with their type, and the OpenAPI description."""

from __future__ import annotations

import pytest
from test_api_helpers import Api

from ostinato.domain.access import ADMIN, SCOPES, WORKER, allows
from ostinato.remote import NOT_EXPOSED, store_verbs

TASK_TYPE = {"type": "load-git", "description": "Load git", "backend_name": "x:y", "default_interval": 86400.0}


@pytest.fixture(params=["sqlite", "postgresql"])
def api(request, clock):
    return Api(request.getfixturevalue({"sqlite": "sqlite_store", "postgresql": "pg_store"}[request.param]), clock)


def test_a_verb_takes_its_arguments_by_name_and_answers_its_result(api):
    created = api.ok("POST", "/api/v1/store/create_task_type", {"task_type": TASK_TYPE})["result"]
    assert created["type"] == "load-git" and created["default_interval"] == 86400.0
    tasks = api.ok("POST", "/api/v1/store/create_tasks", {"tasks": [
        {"type": "load-git", "next_run": "2026-01-01T12:00:00Z", "arguments": {"args": ["https://a"]}}]})["result"]
    assert tasks[0]["status"] == "next_run_not_scheduled" and tasks[0]["current_interval"] == 86400.0
    found = api.ok("POST", "/api/v1/store/get_tasks", {"ids": [tasks[0]["id"]]}, scope="read")["result"]
    assert found == tasks
    assert api.ok("POST", "/api/v1/store/count_tasks", scope="read")["result"] == [
        [["load-git", "next_run_not_scheduled"], 1]]
    assert api.ok("POST", "/api/v1/store/get_task_type", {"name": "nope"}, scope="read") == {"result": None}


def test_reads_take_a_read_token_and_writes_an_admin_one(api):
    assert api.post("/api/v1/store/list_task_types", {}, scope="read").status_code == 200
    assert api.post("/api/v1/store/list_task_types", {}, scope=None).status_code == 401
    refused = api.error("POST", "/api/v1/store/create_task_type", {"task_type": TASK_TYPE}, scope="read", status=403)
    assert refused["field"] == "authorization"
    assert api.post("/api/v1/store/get_or_create_lister", {"name": "gh", "instance_name": "gh",
                                                           "now": "2026-01-01T12:00:00Z"}, scope="read").status_code == 403


@pytest.mark.parametrize("body, field", [
    ({"tasks": [{"type": "load-git", "next_run": "2026-01-01T12:00:00"}]}, "next_run"),  # no zone
    ({"tasks": [{"type": "load-git", "next_run": "2026-01-01T12:00:00Z", "colour": "red"}]}, "colour"),
    ({"tasks": "all of them"}, "tasks"),
    ({"tasks": [], "when": 1}, "when"),
    ({}, "tasks"),
    ([], "body"),
])
def test_bad_arguments_are_400_naming_the_field_and_change_nothing(api, body, field):
    error = api.error("POST", "/api/v1/store/create_tasks", body, status=400)
    assert error["field"] == field and error["type"] == "ValidationError" and error["message"]
    assert api.ok("POST", "/api/v1/store/search_tasks", {}, scope="read")["result"] == []


def test_malformed_json_is_400_naming_the_body(api):
    response = api.client.post("/api/v1/store/list_task_types", content=b"{nope", headers=api.headers("read"))
    assert response.status_code == 400 and response.json()["error"]["field"] == "body"
    response = api.client.post("/api/v1/store/list_task_types", content=b'{"a": NaN}', headers=api.headers("read"))
    assert response.status_code == 400 and response.json()["error"]["field"] == "body"


def test_the_stores_own_errors_keep_their_kind(api):
    api.ok("POST", "/api/v1/store/create_task_type", {"task_type": TASK_TYPE})
    conflict = api.error("POST", "/api/v1/store/create_task_type", {"task_type": TASK_TYPE}, status=409)
    assert conflict["type"] == "ConflictError"
    missing = api.error("POST", "/api/v1/store/record_listed_origins",
                        {"lister_id": 4242, "origins": [{"url": "https://a", "visit_type": "git"}],
                         "now": "2026-01-01T12:00:00Z"}, status=404)
    assert (missing["type"], missing["kind"], str(missing["key"])) == ("NotFoundError", "lister", "4242")
    bad = api.error("POST", "/api/v1/store/create_tasks", {"tasks": [{"type": "load-hg",
                                                                      "next_run": "2026-01-01T12:00:00Z"}]})
    assert bad["type"] == "ValidationError" and bad["field"]


def test_every_served_verb_needs_the_scope_its_list_gives_and_every_other_is_refused(api):
    """Each token scope against every verb: a verb above the token's scope is a 403 naming the scope needed,
    one at or below it is answered (its arguments are then checked: a 400 or a result, never a 401 or 403)."""
    for name, verb in store_verbs().items():
        for scope in SCOPES:
            response = api.post(verb.path, {}, scope=scope)
            refused = not allows(scope, verb.scope)
            assert response.status_code != 401 and (response.status_code == 403) == refused, (name, scope, verb.scope)
            if refused:
                assert f"this request needs {verb.scope}" in response.json()["error"]["message"]


def test_the_machines_token_reaches_no_operator_action_and_nothing_writes_the_trail(api):
    operator = {name for name, verb in store_verbs().items() if verb.scope == ADMIN}
    assert {"pause_schedule", "resume_schedule", "update_schedule", "request_schedule_run", "delete_schedule",
            "disable_tasks", "respawn_tasks", "retry_task_run", "delete_task_type", "set_task_status"} <= operator
    assert {"pick_schedules", "end_schedule_run", "grab_ready_tasks", "record_run_events", "record_listed_origins",
            "record_visit_statuses", "grab_next_visits"} <= {n for n, v in store_verbs().items() if v.scope == WORKER}
    for scope in SCOPES:
        assert api.post("/api/v1/store/record_audit", {"event": {}}, scope=scope).status_code == 404
    assert "record_audit" in NOT_EXPOSED


def test_the_description_has_every_verb_with_its_schema_and_nothing_kept_off(api):
    paths = api.client.get("/openapi.json").json()["paths"]
    served = {path.rsplit("/", 1)[1] for path in paths if path.startswith("/api/v1/store/")}
    assert served == set(store_verbs()) and not served & set(NOT_EXPOSED)
    operation = paths["/api/v1/store/grab_ready_tasks"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["limit", "now", "task_type"] and schema["additionalProperties"] is False
    assert schema["properties"]["limit"] == {"type": "integer", "minimum": 0, "maximum": 1_000_000}
    assert "result" in operation["responses"]["200"]["content"]["application/json"]["schema"]["properties"]
