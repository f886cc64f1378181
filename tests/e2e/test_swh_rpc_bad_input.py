"""Bad input to the swh-rpc face (docs/reference/swh-compat.md): a malformed msgpack or JSON body,
an unknown route, a wrong type in a model object, a missing token are answered in the protocol's
error shape, naming the field, and write nothing."""

from __future__ import annotations

from datetime import UTC, timedelta

import msgpack
import pytest
from starlette.testclient import TestClient

from ostinato.api.tokens import hash_secret
from ostinato.integrations.swh.app import create_app
from ostinato.integrations.swh.wire import Model, dumps_msgpack, loads_json, loads_msgpack

MSGPACK = {"content-type": "application/x-msgpack", "accept": "application/x-msgpack"}


@pytest.fixture
def client(sqlite_store):
    from datetime import datetime

    sqlite_store.create_api_token("t", "admin", hash_secret("secret"), datetime.now(UTC), actor="tests")
    with TestClient(create_app(sqlite_store)) as client:
        client.headers["authorization"] = "Bearer secret"
        yield client


def task_type(**fields):
    base = {"type": "load-git", "description": "d", "backend_name": "b", "default_interval": timedelta(days=1)}
    return Model("TaskType", {**base, **fields})


def post(client, route, body, headers=MSGPACK):
    raw = body if isinstance(body, bytes) else dumps_msgpack(body)
    response = client.post(f"/{route}", content=raw, headers=headers)
    answer = loads_msgpack(response.content) if response.headers["content-type"].startswith("application/x-msgpack") \
        else loads_json(response.content)
    return response.status_code, answer


def test_a_good_call_round_trips_in_msgpack_and_json(client):
    assert post(client, "task_type/create", {"task_type": task_type()}) == (200, None)
    status, answer = post(client, "task_type/get", {"task_type_name": "load-git"})
    assert status == 200 and answer.type == "TaskType" and answer.fields["default_interval"] == timedelta(days=1)
    status, answer = post(client, "task_type/get_all", b"{}", {"content-type": "application/json", "accept": "application/json"})
    assert status == 200 and answer[0].fields["type"] == "load-git"


@pytest.mark.parametrize("raw, headers", [
    (b"\xc1\x00", MSGPACK),
    (b'{"task_type": ', {"content-type": "application/json"}),
    (b"{}", {"content-type": "text/plain"}),
])
def test_a_body_that_cannot_be_read_is_a_400_naming_it(client, raw, headers):
    status, answer = post(client, "task_type/create", raw, headers)
    assert status == 400
    assert answer["type"] == "ValueError" and answer["field"] in ("body", "content-type")
    assert set(answer) >= {"type", "module", "args", "message", "traceback"}


def test_an_unknown_route_is_a_404_in_the_protocol_shape(client):
    status, answer = post(client, "task/fly", {})
    assert status == 404 and answer["type"] == "NotFound" and answer["field"] == "route"


@pytest.mark.parametrize("fields, field", [
    ({"default_interval": "1 day"}, "task_type.default_interval"),
    ({"max_queue_length": "ten"}, "task_type.max_queue_length"),
    ({"colour": "blue"}, "task_type.colour"),
])
def test_a_wrong_type_in_a_model_object_names_the_field_and_writes_nothing(client, sqlite_store, fields, field):
    status, answer = post(client, "task_type/create", {"task_type": task_type(**fields)})
    assert status == 400 and answer["field"] == field, answer
    assert sqlite_store.list_task_types() == []


def test_a_bad_item_of_a_batch_writes_nothing(client, sqlite_store):
    post(client, "task_type/create", {"task_type": task_type()})
    from datetime import datetime

    good = Model("Task", {"type": "load-git", "arguments": Model("TaskArguments", {"args": [], "kwargs": {}}),
                          "next_run": datetime.now(UTC)})
    bad = Model("Task", {**good.fields, "next_run": "tomorrow"})
    status, answer = post(client, "task/create", {"tasks": [good, bad]})
    assert status == 400 and answer["field"] == "tasks[1].next_run"
    assert sqlite_store.search_tasks() == []


@pytest.mark.parametrize("listers", [["unknown"], ["known", "unknown"], ["unknown", "known"]])
def test_listings_of_an_unknown_lister_are_a_400_and_write_nothing(client, sqlite_store, listers):
    from datetime import datetime

    from ostinato.integrations.swh.origins import lister_uuid

    known = sqlite_store.get_or_create_lister("forge", "main", datetime.now(UTC))
    ids = {"known": lister_uuid(known.id), "unknown": lister_uuid(known.id + 1)}
    origins = [Model("ListedOrigin", {"lister_id": ids[name], "url": f"https://forge.example/{name}",
                                      "visit_type": "git"}) for name in listers]
    status, answer = post(client, "origins/record", {"listed_origins": origins})
    assert status == 400 and answer["field"] == "listed_origins.lister_id", answer
    assert str(ids["unknown"]) in answer["message"]
    assert sqlite_store.get_listed_origins() == []


def test_an_unknown_argument_is_named(client):
    status, answer = post(client, "task_type/get", {"task_type_name": "x", "colour": 1})
    assert status == 400 and answer["field"] == "colour"


def test_a_token_is_needed_and_a_read_token_only_reads(client, sqlite_store):
    from datetime import datetime

    status, answer = post(client, "task_type/get_all", {}, {**MSGPACK, "authorization": ""})
    assert status == 401 and answer["field"] == "authorization"
    sqlite_store.create_api_token("r", "read", hash_secret("reader"), datetime.now(UTC), actor="tests")
    reader = {**MSGPACK, "authorization": "Bearer reader"}
    assert post(client, "task_type/get_all", {}, reader)[0] == 200
    assert post(client, "task_type/create", {"task_type": task_type()}, reader)[0] == 403


def test_big_integers_travel_as_the_protocol_extension(client):
    raw = dumps_msgpack([2**70, -(2**70)])
    assert msgpack.unpackb(raw, ext_hook=msgpack.ExtType).__len__() == 2
    assert loads_msgpack(raw) == [2**70, -(2**70)]
