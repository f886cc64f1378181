"""Schemathesis against the API's own OpenAPI description, on every store, with an admin token
so that the operations are really exercised (not stopped at 401).

Every operation gets generated requests, valid and invalid by its schema; every answer must be
no server error (5xx), conform to the description (status code, content type, body schema), be
a 4xx for invalid data, and a 4xx must carry the project's error body
``{"error": {"field", "expected", "got", "message"}}``, naming the field at fault when the
request was bad (400). The run is bounded (examples per operation, no deadline flakiness) and
deterministic (derandomized), so that it takes seconds, the same way each time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)
from test_api_helpers import Api, add_loader

from ostinato.remote.verbs import store_verbs

#: generated requests per operation and generation mode (fewer for the remote store's many verbs,
#: whose bodies are all built by one codec)
EXAMPLES = 20
STORE_EXAMPLES = 6
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
#: routes that answer no JSON error body of ours by design: the description's own pages
STORE = "/api/v1/store/"
NOT_OURS = {"/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"}


def seeded_api(store, clock) -> tuple[Api, dict[str, Any]]:
    """An API over a store with something in it, and the names of what is in it: generated requests
    aimed at these go past the lookups, into the store."""
    api = Api(store, clock)
    add_loader(api, "git")
    api.ok("POST", "/api/v1/schedules", {"name": "nightly", "kind": "periodic", "task_type": "load-git",
                                         "scheduling_period": "1h"}, status=201)
    task = api.ok("POST", "/api/v1/tasks", {"type": "load-git", "arguments": {"args": ["https://x/a"]}}, status=201)
    lister = api.ok("POST", "/api/v1/listers", {"name": "gh"}, status=201)
    api.ok("POST", f"/api/v1/listers/{lister['id']}/origins", [{"url": "https://x/a", "visit_type": "git"}])
    known = {"name": "nightly", "type_name": "load-git", "task_id": task["id"], "lister_id": lister["id"]}
    return api, known


#: body fields set to a known value in the aimed cases
KNOWN_BODY = {"task_type": "load-git", "type": "load-git", "visit_type": "git"}


def aimed(case, known: dict[str, Any]):
    """``case`` with its path naming existing objects and its body's names known ones."""
    if case.path_parameters:
        case.path_parameters = {k: known.get(k, v) for k, v in case.path_parameters.items()}
    items = case.body if isinstance(case.body, list) else [case.body]
    for item in items:
        if isinstance(item, dict):
            for key, value in KNOWN_BODY.items():
                if key in item:
                    item[key] = "git" if key == "type" and "origin" in item else value
    return case


def error_body_problem(response: Any) -> str | None:
    """What is wrong with a 4xx answer's body, or None when it is the project's error shape."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return f"not JSON: {response.content[:200]!r}"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not {"field", "expected", "got", "message"} <= set(error):
        return f"not an error body of ours: {body!r}"
    if not isinstance(error["message"], str) or not error["message"]:
        return f"no message: {body!r}"
    if response.status_code == 400 and not (isinstance(error["field"], str) and error["field"]):
        return f"a 400 that names no field: {body!r}"
    return None


def must_be_rejected(case) -> bool:
    """Whether the case's data is invalid in a way the API must refuse: negated in the body, the
    path or the query's declared parameters. Not a negated header (the token is always replaced by a
    valid one) nor an unknown query parameter (ignored, as HTTP APIs do)."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_negative:
        return False
    negated = {location for location, info in meta.components.items() if info.mode.is_negative}
    description = meta.phase.data.description or ""
    return (bool(negated) and ParameterLocation.HEADER not in negated and "additionalProperties" not in description
            and "positive" not in description)


def operations(schema) -> list:
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.long
@pytest.mark.parametrize("store_kind", ["sqlite", "postgresql"])
def test_schemathesis_finds_nothing(request, store_kind, clock):
    store = request.getfixturevalue({"sqlite": "sqlite_store", "postgresql": "pg_store"}[store_kind])
    api, known = seeded_api(store, clock)
    schema = schemathesis.openapi.from_asgi("/openapi.json", api.app)
    headers = api.headers("admin")
    failures: list[str] = []
    seen: dict[str, int] = {}
    statuses: dict[str, list[int]] = {}

    def check(case) -> None:
        # the token always: a generated (or negated) Authorization header would stop every request at 401
        case.headers = {**{k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}, **headers}
        response = case.call()
        try:
            checks = CHECKS + ([negative_data_rejection] if must_be_rejected(case) else [])
            case.validate_response(response, checks=checks, headers=headers)
        except FailureGroup as exc:  # collected, to report every operation at once
            failures.append(f"{case.operation.label}: {exc}\nsent headers: {dict(response.request.headers)}")
            return
        seen[case.operation.label] = seen.get(case.operation.label, 0) + 1
        statuses.setdefault(case.operation.label, []).append(response.status_code)
        if 400 <= response.status_code < 500 and case.path not in NOT_OURS:
            problem = error_body_problem(response)
            if problem:
                failures.append(f"{case.operation.label} {response.status_code}: {problem}\n{case.as_curl_command()}")

    for operation in operations(schema):
        modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
        strategy = st.one_of(*[operation.as_strategy(generation_mode=mode) for mode in modes],
                             operation.as_strategy().map(lambda case: aimed(case, known)))

        @given(strategy)
        @settings(max_examples=STORE_EXAMPLES if operation.path.startswith(STORE) else EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case) -> None:
            check(case)

        run()
    assert not failures, "\n\n".join(failures[:20])
    assert set(seen) >= {f"{op.method.upper()} {op.path}" for op in operations(schema)}
    # every served store verb is in the description, so exercised above
    assert set(seen) >= {f"POST {verb.path}" for verb in store_verbs().values()}
