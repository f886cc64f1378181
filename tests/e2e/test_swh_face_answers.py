"""The swh-rpc face gives swh-scheduler's answers where a deployment relies on them (see
docs/reference/swh-compat.md): task types kept as the peer keeps them, tasks created disabled, a
grab by lister name alone, task runs' metadata and repeated events, the archive's date forms and
text, a status set on no task, URLs of several kilobytes. Each case here was found by sending the
same operations to swh-scheduler's own server and to the face (bench/face/swh_diff.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from starlette.testclient import TestClient

from ostinato.api.tokens import hash_secret
from ostinato.domain.clock import ManualClock
from ostinato.domain.tasks import TaskType
from ostinato.integrations.swh.app import create_app
from ostinato.integrations.swh.wire import Model, dumps_msgpack, loads_msgpack

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
MSGPACK = {"content-type": "application/x-msgpack", "accept": "application/x-msgpack"}


@pytest.fixture(params=["sqlite_store", "pg_store"])
def client(request):
    store = request.getfixturevalue(request.param)
    store.create_api_token("t", "admin", hash_secret("secret"), NOW, actor="tests")
    with TestClient(create_app(store, ManualClock(NOW))) as client:
        client.headers["authorization"] = "Bearer secret"
        client.app_store = store
        yield client


def call(client, route, **arguments):
    response = client.post(f"/{route}", content=dumps_msgpack(arguments), headers=MSGPACK)
    answer = loads_msgpack(response.content)
    assert response.status_code == 200, answer
    return answer


def fields(model):
    return model.fields if isinstance(model, Model) else model


def task_type(name="load-git", **fields):
    base = {"type": name, "description": "d", "backend_name": "swh.loader.git.tasks.UpdateGitRepository",
            "default_interval": DAY, "min_interval": DAY / 2, "max_interval": 64 * DAY}
    return Model("TaskType", {**base, **fields})


def task(url, **fields):
    arguments = Model("TaskArguments", {"args": [], "kwargs": {"url": url}})
    return Model("Task", {"type": "load-git", "arguments": arguments, "next_run": NOW - DAY, **fields})


@pytest.mark.parametrize("given", [
    {"backoff_factor": 1.0},  # what swh's own `task-type add` makes by default
    {"num_retries": 3, "retry_delay": None},
    {"default_interval": 100 * DAY},
    {"default_interval": timedelta(0)},
    {"max_queue_length": 0},
])
def test_task_types_are_kept_as_the_peer_keeps_them(client, given):
    call(client, "task_type/create", task_type=task_type(**given))
    stored = fields(call(client, "task_type/get", task_type_name="load-git"))
    assert {name: stored[name] for name in given} == given


def test_a_task_created_disabled_stays_disabled_and_is_never_grabbed(client):
    call(client, "task_type/create", task_type=task_type())
    [made] = call(client, "task/create", tasks=[task("https://a.example/r", status="disabled")])
    assert fields(made)["status"] == "disabled"
    assert call(client, "task/grab_ready", task_type="load-git", timestamp=NOW, num_tasks=10) == []


def test_a_grab_by_lister_name_alone_takes_every_instance_of_it(client):
    listers = [fields(call(client, "lister/get_or_create", name="gitlab", instance_name=name))
               for name in ("gitlab.com", "framagit")]
    other = fields(call(client, "lister/get_or_create", name="github", instance_name="github.com"))
    origins = [Model("ListedOrigin", {"lister_id": lister["id"], "url": f"https://{i}.example/r", "visit_type": "git"})
               for i, lister in enumerate([*listers, other])]
    call(client, "origins/record", listed_origins=origins)
    grabbed = call(client, "origins/grab_next", visit_type="git", count=10, policy="oldest_scheduled_first",
                   lister_name="gitlab", timestamp=NOW)
    assert sorted(fields(o)["url"] for o in grabbed) == ["https://0.example/r", "https://1.example/r"]
    by_instance = call(client, "origins/grab_next", visit_type="git", count=10, policy="oldest_scheduled_first",
                       lister_instance_name="github.com", timestamp=NOW, dry_run=True)
    assert [fields(o)["url"] for o in by_instance] == ["https://2.example/r"]


def test_task_runs_metadata_and_repeated_events_as_the_peer_applies_them(client):
    call(client, "task_type/create", task_type=task_type(num_retries=0))
    first, second = (fields(t)["id"] for t in call(client, "task/create", tasks=[task("https://a/1"), task("https://a/2")]))
    # one run scheduled alone without metadata has {}; one scheduled in bulk without any has none (null)
    assert fields(call(client, "task_run/schedule_one", task_id=first, backend_id="job-1", metadata=None,
                       timestamp=NOW))["metadata"] == {}
    call(client, "task_run/schedule", task_runs=[Model("TaskRun", {"task": second, "backend_id": "job-2",
                                                                    "scheduled": NOW})])
    [bulk] = call(client, "task_run/get", task_ids=[second])
    assert fields(bulk)["metadata"] is None
    # start, end, a start after the end (an executor's retry of the same job), then a second end
    assert fields(call(client, "task_run/start", backend_id="job-2", timestamp=NOW))["metadata"] == {}
    ended = fields(call(client, "task_run/end", backend_id="job-2", status="failed", metadata={"try": 1},
                        timestamp=NOW + timedelta(minutes=1)))
    assert (ended["status"], ended["metadata"]) == ("failed", {"try": 1})
    again = fields(call(client, "task_run/start", backend_id="job-2", timestamp=NOW + timedelta(minutes=2)))
    assert (again["status"], again["started"]) == ("started", NOW + timedelta(minutes=2))
    last = fields(call(client, "task_run/end", backend_id="job-2", status="eventful", metadata={"try": 2},
                       timestamp=NOW + timedelta(minutes=3)))
    assert (last["status"], last["ended"], last["metadata"]) == ("eventful", NOW + timedelta(minutes=3), {"try": 2})
    [moved] = call(client, "task/get", task_ids=[second])
    assert fields(moved)["next_run"] > NOW + timedelta(minutes=3)  # the second end moved the task again


@pytest.mark.parametrize("after, before", [
    ("2026-11-19", "2026-11-21"),
    ("2026-11-19 00:00:00", "2026-11-21T00:00:00+00:00"),
    ("yesterday", "tomorrow"),
    ("epoch", "now"),
    (NOW - DAY, NOW + DAY),
])
def test_the_archive_takes_the_date_forms_the_peer_takes_and_writes_its_text(client, after, before):
    call(client, "task_type/create", task_type=task_type())
    [made] = call(client, "task/create", tasks=[task("https://a/é", policy="oneshot")], policy="oneshot")
    task_id = fields(made)["id"]
    call(client, "task_run/schedule_one", task_id=task_id, backend_id="job", metadata={}, timestamp=NOW - timedelta(hours=1))
    call(client, "task_run/end", backend_id="job", status="eventful", timestamp=NOW)
    found = call(client, "task/filter_for_archive", after_ts=after, before_ts=before, limit=10)
    [row] = found["tasks"]
    assert row["task_id"] == task_id and row["task_status"] == "completed"
    assert row["arguments"]["kwargs"] == '{"url": "https://a/\\u00e9"}'  # as json.dumps writes jsonb's dict


def test_the_archive_refuses_what_is_no_date_naming_the_field(client):
    response = client.post("/task/filter_for_archive", content=dumps_msgpack({"after_ts": "someday", "before_ts": "now"}),
                           headers=MSGPACK)
    assert response.status_code == 400 and loads_msgpack(response.content)["field"] == "after_ts"


def test_a_status_set_on_no_task_is_nothing_whatever_the_status(client):
    assert call(client, "task/set_status", task_ids=[], status="bogus") is None
    response = client.post("/task/set_status", content=dumps_msgpack({"task_ids": [1], "status": "bogus"}),
                           headers=MSGPACK)
    assert response.status_code == 400 and loads_msgpack(response.content)["field"] == "status"


def test_urls_of_several_kilobytes_are_listed_and_their_stats_kept(client):
    lister = fields(call(client, "lister/get_or_create", name="cgit", instance_name=""))
    url = "https://git.example.org/cgit/" + "deep/path/" * 400  # 4 kB, as some forges make them
    [recorded] = call(client, "origins/record", listed_origins=[Model("ListedOrigin", {
        "lister_id": lister["id"], "url": url, "visit_type": "git"})])
    assert fields(recorded)["url"] == url
    call(client, "visit_stats/upsert", origin_visit_stats=[Model("OriginVisitStats", {
        "url": url, "visit_type": "git", "last_visit": NOW, "last_visit_status": "successful",
        "last_successful": NOW, "last_snapshot": b"\x01" * 20})])
    [stats] = call(client, "visit_stats/get", ids=[[url, "git"]])
    assert fields(stats)["last_snapshot"] == b"\x01" * 20


# -- Ostinato's policies, one setting away ---------------------------------------------------------
def listed(client, count, host=lambda i: f"h{i}.example"):
    lister = fields(call(client, "lister/get_or_create", name="cgit", instance_name="forge"))
    call(client, "origins/record", listed_origins=[Model("ListedOrigin", {
        "lister_id": lister["id"], "url": f"https://{host(i)}/r{i}", "visit_type": "git",
        "last_update": NOW - timedelta(days=i + 1)}) for i in range(count)])
    return lister


def test_change_rate_optimal_is_served_and_its_visit_type_learns_from_the_upserts(client):
    listed(client, 6)
    grabbed = call(client, "origins/grab_next", visit_type="git", count=4, policy="change_rate_optimal",
                   timestamp=NOW)
    assert len(grabbed) == 4 and all(g.type == "ListedOrigin" and fields(g)["visit_type"] == "git" for g in grabbed)
    # the journal client's upserts of two visits, the second finding a new snapshot: Ostinato's feedback learns
    url = fields(grabbed[0])["url"]
    for day, snapshot in ((1, b"\x01" * 20), (3, b"\x02" * 20)):
        call(client, "visit_stats/upsert", origin_visit_stats=[Model("OriginVisitStats", {
            "url": url, "visit_type": "git", "last_visit": NOW + timedelta(days=day), "last_visit_status": "successful",
            "last_successful": NOW + timedelta(days=day), "last_snapshot": snapshot})])
    store = client.app_store
    [stats] = store.get_visit_stats([(url, "git")])
    assert stats.successful_visits == 2 and stats.last_eventful == NOW + timedelta(days=3)
    assert stats.rate_days is not None  # the change rate's belief, which change_rate_optimal walks by
    [theirs] = call(client, "visit_stats/get", ids=[[url, "git"]])
    assert fields(theirs)["last_visit"] == NOW + timedelta(days=3)  # and the protocol's fields as told


def test_a_visit_type_never_grabbed_by_ostinato_policies_does_not_learn(client):
    listed(client, 2)
    url = "https://h0.example/r0"
    call(client, "visit_stats/upsert", origin_visit_stats=[Model("OriginVisitStats", {
        "url": url, "visit_type": "git", "last_visit": NOW, "last_visit_status": "successful",
        "last_successful": NOW, "last_snapshot": b"\x01" * 20})])
    [stats] = client.app_store.get_visit_stats([(url, "git")])
    assert stats.successful_visits == 0 and stats.rate_days is None  # written as told, nothing more


def test_politeness_per_host_applies_to_ostinato_policies_through_the_face(client):
    listed(client, 9, host=lambda i: "one.example" if i < 6 else f"h{i}.example")
    store = client.app_store
    store.create_task_type(TaskType("load-git", "load", "swh.loader.git.tasks.UpdateGitRepository",
                                    default_interval=DAY))
    store.set_visit_type_politeness("git", max_concurrent_per_host=2)
    grabbed = call(client, "origins/grab_next", visit_type="git", count=9, policy="ostinato.never_visited_oldest_update_first",
                   timestamp=NOW)
    hosts = [fields(g)["url"].split("/")[2] for g in grabbed]
    assert hosts.count("one.example") == 2 and len(grabbed) == 5


@pytest.mark.parametrize("arguments, kind, field", [
    ({"policy": "ostinato.fastest_first"}, "UnknownPolicy", None),  # the client raises UnknownPolicy again
    ({"policy": "change_rate_optimal", "enabled": False}, "ValueError", "enabled"),
])
def test_ostinato_policies_refuse_what_they_cannot_serve(client, arguments, kind, field):
    listed(client, 2)
    response = client.post("/origins/grab_next", content=dumps_msgpack({
        "visit_type": "git", "count": 2, "timestamp": NOW, **arguments}), headers=MSGPACK)
    answer = loads_msgpack(response.content)
    assert response.status_code == 400 and answer["type"] == kind and answer.get("field") == field, answer
    assert client.app_store.get_compat_records("swh.learning", ["git"]) == {}  # nothing written


def test_an_archive_cleanup_deletes_the_runs_given_and_a_task_once_its_last_run_went(client):
    call(client, "task_type/create", task_type=task_type())
    [made] = call(client, "task/create", tasks=[task("https://a/archived", policy="oneshot")], policy="oneshot")
    task_id = fields(made)["id"]
    runs = [fields(call(client, "task_run/schedule_one", task_id=task_id, backend_id=f"job-{i}", metadata={},
                        timestamp=NOW)) for i in range(2)]
    call(client, "task/delete_archived", task_ids=[{"task_id": task_id, "task_run_id": runs[0]["id"]}])
    assert [fields(r)["id"] for r in call(client, "task_run/get", task_ids=[task_id])] == [runs[1]["id"]]
    assert len(call(client, "task/get", task_ids=[task_id])) == 1  # a run left: the task stays
    call(client, "task/delete_archived", task_ids=[{"task_id": task_id, "task_run_id": runs[1]["id"]}])
    assert call(client, "task/get", task_ids=[task_id]) == []


def test_types_and_tasks_the_peers_tools_make(client):
    call(client, "task_type/create", task_type=task_type("odd", backoff_factor=0.5, default_interval=timedelta(0),
                                                         min_interval=timedelta(hours=1)))
    assert fields(call(client, "task_type/get", task_type_name="odd"))["backoff_factor"] == 0.5
    odd = Model("Task", {"type": "odd", "arguments": Model("TaskArguments", {"args": [], "kwargs": {}}),
                         "next_run": NOW, "current_interval": DAY})
    [made] = call(client, "task/create", tasks=[odd])
    assert fields(made)["current_interval"] == timedelta(0)  # the type's, as the peer's store gives it, unclamped


def test_an_end_told_with_a_status_that_is_no_end_is_applied_as_told(client):
    call(client, "task_type/create", task_type=task_type())
    [made] = call(client, "task/create", tasks=[task("https://a/told")])
    call(client, "task_run/schedule_one", task_id=fields(made)["id"], backend_id="job", metadata={}, timestamp=NOW)
    ended = fields(call(client, "task_run/end", backend_id="job", status="scheduled", timestamp=NOW + DAY))
    assert (ended["status"], ended["ended"]) == ("scheduled", NOW + DAY)  # as the peer's store stamps it
    [still] = call(client, "task/get", task_ids=[fields(made)["id"]])
    assert fields(still)["next_run"] == fields(made)["next_run"]  # no end: the task does not move


def test_a_listing_recorded_without_touching_last_seen_needs_the_one_read_back(client):
    lister = fields(call(client, "lister/get_or_create", name="cgit", instance_name="x"))
    bare = Model("ListedOrigin", {"lister_id": lister["id"], "url": "https://h.example/r", "visit_type": "git"})
    response = client.post("/origins/record", content=dumps_msgpack({"listed_origins": [bare],
                                                                     "update_last_seen": False}), headers=MSGPACK)
    assert response.status_code == 400 and loads_msgpack(response.content)["field"] == "listed_origins[0].last_seen"
    assert call(client, "origins/get", lister_id=lister["id"]).results == []  # nothing written
