"""`ostinato --url … --token …`: the command line and a runner pass working through a real
`ostinato api serve` process (the remote store client), and the clear errors of a bad token, too
small a scope, an unreachable URL and what the API does not serve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from waiting import wait_until

from ostinato.api.tokens import hash_secret, new_secret
from ostinato.cli import cli
from ostinato.domain.tasks import TaskRunStatus
from ostinato.store import open_store
from test_servers.postgres import free_port

HERE = Path(__file__).parent


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`ostinato api serve` over a SQLite file, with an admin and a read token made on its database
    (one server for the module: each test uses task types and listers of its own)."""
    tmp_path = tmp_path_factory.mktemp("api")
    db = f"sqlite:///{tmp_path}/server.db"
    secrets = {"admin": new_secret(), "read": new_secret()}
    with open_store(db) as store:
        store.init_schema()
        for scope, secret in secrets.items():
            store.create_api_token(scope, scope, hash_secret(secret), datetime.now(UTC), actor="tests")
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "ostinato", "--db", db, "api", "serve", "--port", str(port),
                                "--log-level", "warning"], cwd=tmp_path, env=clean_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert process.poll() is None, process.stdout.read()
        try:
            return httpx.get(f"{url}/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(answers, timeout=60, interval=0.05, what="the API to start")
    try:
        yield {"url": url, "db": db, "unused": tmp_path / "unused.db", **secrets}
    finally:
        process.terminate()
        process.wait(timeout=30)


def invoke(*args):
    """``ostinato ARGS`` in-process, with no OSTINATO_* setting of the environment leaking in."""
    return CliRunner(env={name: None for name in os.environ if name.startswith("OSTINATO_")}).invoke(cli, list(args))


def remote(server, *args, token="admin"):
    """``ostinato --url URL --token SECRET ARGS``; ``--db`` names a file that must stay unused (``--url`` wins)."""
    secret = server.get(token, token)
    return invoke("--db", f"sqlite:///{server['unused']}", "--url", server["url"], "--token", secret, *args)


def ok(server, *args, token="admin"):
    result = remote(server, *args, token=token)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.output


def test_commands_and_a_runner_pass_work_through_the_api(server, tmp_path):
    out = tmp_path / "out.txt"
    ok(server, "task-type", "add", "rec", "callables:record", "Record a key", "--default-interval", "1h")
    ok(server, "task", "add", "rec", str(out), "hello", "--next-run", "-1m")
    ok(server, "task", "add", "rec", str(out), "once", "--policy", "oneshot", "--next-run", "-1m")
    tasks = json.loads(ok(server, "task", "list", "--json", token="read"))
    assert [t["arguments"]["args"][1] for t in tasks] == ["hello", "once"]
    assert "current: " in ok(server, "db", "version", token="read")

    # a runner pass as its own process, through the API: runs dispatched, executed here, outcomes recorded there
    env = {**clean_env(), "PYTHONPATH": str(HERE), "OSTINATO_URL": server["url"], "OSTINATO_TOKEN": server["admin"]}
    done = subprocess.run([sys.executable, "-m", "ostinato", "--db", f"sqlite:///{server['unused']}", "run", "--once"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 runs dispatched, 2 ended" in done.stdout + done.stderr
    assert sorted(line.split()[0] for line in out.read_text().splitlines()) == ["hello", "once"]

    runs = json.loads(ok(server, "task-run", "list", "--json", token="read"))
    assert sorted(r["status"] for r in runs) == ["eventful", "eventful"]
    with open_store(server["db"]) as store:  # it all happened in the server's database
        assert [r.status for r in store.list_task_runs()] == [TaskRunStatus.EVENTFUL] * 2
    assert not server["unused"].exists()


def test_listers_origins_and_grabs_through_the_api(server, tmp_path):
    ok(server, "task-type", "add", "load-git", "callables:load_hashed", "Load git", "--default-interval", "1d")
    origins = tmp_path / "origins.jsonl"
    origins.write_text("".join(json.dumps({"url": f"https://forge/{i}", "visit_type": "git"}) + "\n" for i in range(3)))
    recorded = json.loads(ok(server, "origin", "record", str(origins), "--lister", "gh/gh", "--json"))
    assert recorded["recorded"] == 3
    shown = json.loads(ok(server, "origin", "show", "https://forge/1", "--json", token="read"))
    assert "https://forge/1" in json.dumps(shown)
    grabbed = json.loads(ok(server, "origin", "grab-next", "git", "--count", "2", "--dry-run", "--json"))
    assert [v["url"] for v in grabbed["visits"]] == ["https://forge/0", "https://forge/1"]
    # politeness per host through the store's verbs: every origin is on host "forge"
    ok(server, "politeness", "set", "git", "--max-concurrent", "1", "--min-spacing", "1s")
    shown = json.loads(ok(server, "politeness", "set", "git", "--host", "forge", "--max-concurrent", "2", "--json"))
    assert shown["hosts"] == [{"host": "forge", "max_concurrent": 2, "min_spacing": None}]
    assert shown["min_spacing_per_host"] == "1s"
    assert json.loads(ok(server, "politeness", "show", "git", "--json", token="read")) == shown
    assert "needs admin" in remote(server, "politeness", "set", "git", "--max-concurrent", "3", token="read").output


def test_a_bad_token_is_refused_clearly(server):
    result = remote(server, "task", "list", token="not-a-token")
    assert result.exit_code == 1
    assert f"the Ostinato API at {server['url']} refused the token: unknown token" in result.output


def test_a_read_token_cannot_write(server):
    result = remote(server, "task-type", "add", "x", "callables:record", "x", "--default-interval", "1d", token="read")
    assert result.exit_code == 1
    assert "refused the token" in result.output and "needs admin" in result.output


def test_an_unreachable_url_is_named(server):
    url = f"http://127.0.0.1:{free_port()}"
    result = invoke("--url", url, "--token", "x", "task", "list")
    assert result.exit_code == 1
    assert f"cannot reach the Ostinato API at {url}" in result.output


def test_what_the_api_does_not_serve_says_where_to_do_it(server):
    result = remote(server, "token", "list")
    assert result.exit_code == 1 and "managed on the server only" in result.output
    result = remote(server, "db", "init")
    assert result.exit_code == 1 and "already has an Ostinato schema" in result.output


def test_a_malformed_url_or_a_missing_token_is_bad_input(server):
    result = invoke("--url", "ftp://nowhere", "--token", "x", "task", "list")
    assert result.exit_code == 2 and "url: expected the API's base URL" in result.output
    result = invoke("--url", server["url"], "task", "list")
    assert result.exit_code == 2 and "token: expected an API token's secret" in result.output
