"""``ostinato swh-rpc compare`` and ``copy-tasks`` (docs/how-to/migrate-from-swh-scheduler.md) against
servers of the protocol in this process: Ostinato's face over SQLite stores, mounted at ``/peer`` and
``/ours`` of one real HTTP server (the session's ``api_server``), standing for swh-scheduler's server
and Ostinato's. swh-scheduler's own server is the subject of tests/e2e/test_swh_migration_guide.py.

Bad options: one line naming the option, exit status 2, no request sent and nothing written. A server
that cannot be reached or refuses: one line, exit status 1.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from cli_helpers import run
from starlette.applications import Starlette
from starlette.routing import Mount

from ostinato.api.tokens import hash_secret
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskStatus, TaskType
from ostinato.integrations.swh import client as swh_client
from ostinato.integrations.swh.app import create_app
from ostinato.store import open_store

NOW = datetime.now(UTC).replace(microsecond=0)
LOAD_GIT = TaskType("load-git", "Load git", "swh.loader.git.tasks.UpdateGitRepository", timedelta(days=1),
                    timedelta(hours=12), timedelta(days=64), 2.0, None, 3, timedelta(hours=1))


def new_store(tmp_path, name):
    store = open_store(f"sqlite:///{tmp_path}/{name}.db", create=True)
    store.init_schema()
    store.create_api_token("t", "admin", hash_secret("secret"), NOW, actor="tests")
    return store


def git_task(url, policy=TaskPolicy.RECURRING, priority=None):
    return NewTask("load-git", NOW - timedelta(minutes=5), TaskArguments((), {"url": url}), policy, priority)


class Recorder:
    """An ASGI application that counts the requests it gets and answers none."""

    def __init__(self):
        self.requests = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.requests += 1
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b""})


@pytest.fixture
def servers(api_server, tmp_path):
    """Two stores, each behind the protocol: ``peer`` (standing for swh's) and ``ours``."""
    stores = {side: new_store(tmp_path, side) for side in ("peer", "ours")}
    for store in stores.values():
        store.create_task_type(LOAD_GIT)
    api_server.app.current = Starlette(routes=[Mount(f"/{side}", app=create_app(store)) for side, store in stores.items()])
    yield {side: f"{api_server.url}/{side}/" for side in stores}, stores, f"sqlite:///{tmp_path}/ours.db"
    api_server.app.current = None
    for store in stores.values():
        store.close()


@pytest.fixture
def recorder(api_server, tmp_path):
    recording = Recorder()
    api_server.app.current = recording
    store = new_store(tmp_path, "ostinato")
    store.create_task_type(LOAD_GIT)
    store.create_tasks([git_task("https://a/1"), git_task("https://a/2")])
    store.close()
    yield api_server.url + "/", recording, f"sqlite:///{tmp_path}/ostinato.db"
    api_server.app.current = None


# -- bad options ---------------------------------------------------------------------------------------
def compare_args(url, **changes):
    args = {"--peer": url, "--ours": url, "--token": "secret", "--visit-type": "git"}
    args.update(changes)
    return ["swh-rpc", "compare", *[part for key, value in args.items() if value is not None for part in (key, value)]]


def copy_args(url, **changes):
    args = {"--to": url}
    args.update(changes)
    return ["swh-rpc", "copy-tasks", *[part for key, value in args.items() if value is not None for part in (key, value)]]


BAD = {
    # name: (arguments made from the recording server's URL, the field named, what the message says)
    "compare without --peer": (lambda u: compare_args(u, **{"--peer": None}), "--peer", "the URL of swh-scheduler's RPC server"),
    "compare --peer not http": (lambda u: compare_args(u, **{"--peer": "ftp://swh/"}), "--peer", "http://HOST:PORT/"),
    "compare --peer without host": (lambda u: compare_args(u, **{"--peer": "http://"}), "--peer", "http://HOST:PORT/"),
    "compare --peer bad port": (lambda u: compare_args(u, **{"--peer": "http://swh:port/"}), "--peer", "a port from 1 to"),
    "compare without --ours": (lambda u: compare_args(u, **{"--ours": None}), "--ours", "Ostinato's swh-rpc server"),
    "compare --ours not a URL": (lambda u: compare_args(u, **{"--ours": "localhost:5008"}), "--ours", "http://HOST:PORT/"),
    "compare empty --token": (lambda u: compare_args(u, **{"--token": " "}), "--token", "a token's secret"),
    "compare empty --peer-token": (lambda u: compare_args(u, **{"--peer-token": ""}), "--peer-token", "a token's secret"),
    "compare without --visit-type": (lambda u: compare_args(u, **{"--visit-type": None}), "--visit-type", "a visit type"),
    "compare empty --visit-type": (lambda u: compare_args(u, **{"--visit-type": " "}), "--visit-type", "a visit type"),
    "compare unknown --policy": (lambda u: compare_args(u, **{"--policy": "fastest_first"}), "--policy",
                                 "one of swh-scheduler's policies"),
    "compare --policy needing a lister": (lambda u: compare_args(u, **{"--policy": "first_visits_after_listing"}), "--policy",
                                          "one of swh-scheduler's policies"),
    "compare --count 0": (lambda u: compare_args(u, **{"--count": "0"}), "--count", "a whole number of at least 1"),
    "compare --count not a number": (lambda u: compare_args(u, **{"--count": "many"}), "--count", "a whole number"),
    "copy-tasks without --to": (lambda u: copy_args(u, **{"--to": None}), "--to", "the URL of swh-scheduler's RPC server"),
    "copy-tasks --to not http": (lambda u: copy_args(u, **{"--to": "swh-scheduler.internal:5008"}), "--to", "http://HOST:PORT/"),
    "copy-tasks empty --to-token": (lambda u: copy_args(u, **{"--to-token": ""}), "--to-token", "a token's secret"),
}


@pytest.mark.parametrize("make_args, field, expected", BAD.values(), ids=list(BAD))
def test_a_bad_option_is_one_line_naming_it_exit_2_and_nothing_is_sent(recorder, make_args, field, expected):
    url, recording, db = recorder
    with open_store(db, create=False) as store:
        before = [t.to_dict() for t in store.search_tasks(limit=100)]
    result = run(db, *make_args(url))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {field}: expected "), lines[0]
    assert expected in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert recording.requests == 0  # refused before anything was asked of a server
    with open_store(db, create=False) as store:
        assert [t.to_dict() for t in store.search_tasks(limit=100)] == before


@pytest.mark.parametrize("args", [
    ["swh-rpc", "compare", "--peer", "http://127.0.0.1:1/", "--ours", "http://127.0.0.1:1/", "--visit-type", "git"],
    ["swh-rpc", "copy-tasks", "--to", "http://127.0.0.1:1/"],
], ids=["compare", "copy-tasks"])
def test_a_server_that_cannot_be_reached_is_one_line_exit_1(recorder, args):
    _, _, db = recorder
    result = run(db, *args)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cannot reach http://127.0.0.1:1/" in lines[0], result.output
    assert lines[0].startswith(("error: peer: ", "error: to: ")), lines[0]


def test_a_refused_token_is_one_line_naming_the_server_exit_1(servers, tmp_path):
    urls, _, db = servers
    result = run(db, "swh-rpc", "compare", "--peer", urls["peer"], "--peer-token", "secret", "--ours", urls["ours"],
                 "--token", "wrong", "--visit-type", "git")
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: ours: {urls['ours']}origins/grab_next answered 401 "
                                                   "PermissionError: unknown token"), result.output


def test_a_server_of_another_protocol_is_one_line_exit_1(recorder):
    url, recording, db = recorder
    result = run(db, "swh-rpc", "copy-tasks", "--to", url)
    assert result.exit_code == 1 and recording.requests == 1, result.output
    assert result.output.strip().count("\n") == 0 and "answered 500 HTTPError" in result.output, result.output


# -- compare -------------------------------------------------------------------------------------------
def record_origins(store, urls):
    from ostinato.domain.origins import ListedOrigin

    lister = store.get_or_create_lister("gitlab", "gitlab.example.org", NOW)
    store.record_listed_origins(lister.id, [ListedOrigin(u, "git", last_update=NOW - timedelta(days=i + 1))
                                            for i, u in enumerate(urls)], NOW)


def test_compare_prints_a_table_per_policy_and_a_verdict_and_exits_0(servers):
    urls, stores, db = servers
    shared = [f"https://gitlab.example.org/g/p{i}" for i in range(4)]
    record_origins(stores["peer"], shared + ["https://gitlab.example.org/only/peer"])
    record_origins(stores["ours"], shared)
    args = ["swh-rpc", "compare", "--peer", urls["peer"], "--peer-token", "secret", "--ours", urls["ours"],
            "--token", "secret", "--visit-type", "git", "--count", "10"]
    result = run(db, *args)
    assert result.exit_code == 0, result.output
    for policy in swh_client.RECURRING_POLICIES:
        assert f"│ {policy} " in result.stdout
    assert "only swh-scheduler: https://gitlab.example.org/only/peer" in result.stdout
    assert result.stdout.strip().splitlines()[-1].startswith("Verdict: the listings differ for 1 of 3 policies: "
                                                             "never_visited_oldest_update_first (4 in common")
    document = json.loads(run(db, *args, "--json").stdout)
    never = {p["policy"]: p for p in document["policies"]}["never_visited_oldest_update_first"]
    assert (never["swh"], never["ostinato"], never["common"], never["only_swh"], never["only_ostinato"]) == (
        5, 4, 4, ["https://gitlab.example.org/only/peer"], [])
    assert document["differing"] == ["never_visited_oldest_update_first"] and document["same"] is False
    # a dry run: neither side marked anything scheduled
    for store in stores.values():
        assert all(s.last_scheduled is None for s in store.get_visit_stats([(u, "git") for u in shared]))


def test_compare_of_the_same_answers_says_so(servers):
    urls, stores, db = servers
    for store in stores.values():
        record_origins(store, [f"https://gitlab.example.org/g/p{i}" for i in range(3)])
    result = run(db, "swh-rpc", "compare", "--peer", urls["peer"], "--peer-token", "secret", "--ours", urls["ours"],
                 "--token", "secret", "--visit-type", "git", "--policy", "never_visited_oldest_update_first")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == ("Verdict: the same listings from both servers for every policy "
                                                      "(1 of 1).")


def test_the_default_policies_follow_the_visit_type():
    assert swh_client.default_policies("git") == swh_client.RECURRING_POLICIES
    assert swh_client.default_policies("tarball-directory") == ("stop_after_success",)


# -- copy-tasks ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [1000, 2])
def test_copy_tasks_copies_what_was_created_after_the_last_task_swh_holds(servers, monkeypatch, batch):
    monkeypatch.setattr(swh_client, "BATCH", batch)  # 2: the walk down goes through several windows
    urls, stores, db = servers
    before = [git_task(f"https://forge.example.org/old/{i}") for i in range(5)]
    for store in stores.values():  # the import: the same tasks under the same ids on both sides
        assert [t.id for t in store.create_tasks(before)] == [1, 2, 3, 4, 5]
    ours = stores["ours"]
    new = ours.create_tasks([git_task("https://forge.example.org/saved/urgent", TaskPolicy.ONESHOT, TaskPriority.HIGH),
                             git_task("https://forge.example.org/new/one"), git_task("https://forge.example.org/new/two")])
    ours.grab_ready_tasks("load-git", NOW, 1, priority=True)  # its run is in flight in Ostinato
    stores["peer"].create_tasks([git_task("https://forge.example.org/peer/since")])  # swh's count went on: id 6
    args = ["swh-rpc", "copy-tasks", "--to", urls["peer"], "--to-token", "secret", "--json"]

    document = json.loads(run(db, *args).stdout)
    assert document["after_id"] == 5 and document["found"] == 3 and document["copied"] == 3
    copied = {t["ostinato_id"]: t for t in document["tasks"]}
    assert sorted(copied) == [t.id for t in new] == [6, 7, 8]
    assert [copied[i]["swh_id"] for i in (6, 7, 8)] == [7, 8, 9]  # new ids there
    held = {t.id: t for t in stores["peer"].get_tasks([7, 8, 9])}
    assert held[7].arguments.kwargs == {"url": "https://forge.example.org/saved/urgent"}
    assert (held[7].policy, held[7].priority, held[7].status) == (TaskPolicy.ONESHOT, TaskPriority.HIGH,
                                                                   TaskStatus.NEXT_RUN_NOT_SCHEDULED)  # pending again
    assert held[8].next_run == new[1].next_run and held[8].retries_left == new[1].retries_left

    again = json.loads(run(db, *args).stdout)  # nothing twice: the server answers the equal tasks it holds
    assert {t["swh_id"] for t in again["tasks"]} <= {7, 8, 9, None}
    assert len(stores["peer"].search_tasks(limit=100)) == 9


def test_copy_tasks_with_nothing_new_says_so(servers):
    urls, stores, db = servers
    for store in stores.values():
        store.create_tasks([git_task("https://forge.example.org/old/0")])
    result = run(db, "swh-rpc", "copy-tasks", "--to", urls["peer"], "--to-token", "secret")
    assert result.exit_code == 0, result.output
    assert "No task created in Ostinato since the cut-over" in result.stdout and "none above task 1" in result.stdout
