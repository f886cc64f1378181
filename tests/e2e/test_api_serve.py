"""`ostinato api serve` as a real process on a free port, over a SQLite file, talked to with httpx;
it stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import UTC

import httpx
from waiting import wait_until

from ostinato.api.tokens import hash_secret, new_secret
from ostinato.store import open_store
from test_servers.postgres import free_port

# `ostinato api` is registered by importing ostinato.cli.api (until ostinato.cli imports it itself)
LAUNCH = "import ostinato.cli.api, ostinato.cli.tokens; from ostinato.cli import main; main()"


def test_serve(tmp_path):
    url = f"sqlite:///{tmp_path}/api.db"
    secrets = {"read": new_secret(), "admin": new_secret()}
    with open_store(url) as store:
        store.init_schema()
        for scope, secret in secrets.items():
            store.create_api_token(scope, scope, hash_secret(secret), store_now(), actor="tests")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    server = subprocess.Popen([sys.executable, "-c", LAUNCH, "--db", url, "api", "serve", "--host", "127.0.0.1",
                               "--port", str(port), "--log-level", "warning"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(server, f"{base}/health")
        with httpx.Client(base_url=base, timeout=10) as client:
            assert client.get("/health").json()["status"] == "ok"
            assert client.get("/api/v1/tasks").status_code == 401
            read = {"Authorization": f"Bearer {secrets['read']}"}
            admin = {"Authorization": f"Bearer {secrets['admin']}"}
            body = {"type": "load-git", "backend_name": "ostinato.examples:load_directory", "default_interval": "1d"}
            assert client.post("/api/v1/task-types", json=body, headers=read).status_code == 403
            assert client.post("/api/v1/task-types", json=body, headers=admin).status_code == 201
            task = client.post("/api/v1/tasks", json={"type": "load-git", "arguments": {"args": ["x"]}}, headers=admin)
            assert task.status_code == 201
            listed = client.get("/api/v1/tasks", headers=read).json()
            assert [t["id"] for t in listed["items"]] == [task.json()["id"]] and listed["next"] is None
            metrics = client.get("/metrics", headers=read).text
            assert 'ostinato_tasks{status="next_run_not_scheduled",task_type="load-git"} 1.0' in metrics
            assert "/api/v1/tasks" in client.get("/openapi.json").json()["paths"]
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0, server.stdout.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    with open_store(url) as store:
        assert [t.type for t in store.list_task_types()] == ["load-git"]


def test_the_console_address_printed_at_start_answers(tmp_path):
    """The start-up line names the console's address: signed in, it answers the page (not a 404)."""
    url = f"sqlite:///{tmp_path}/api.db"
    secret = new_secret()
    with open_store(url) as store:
        store.init_schema()
        store.create_api_token("reader", "read", hash_secret(secret), store_now(), actor="tests")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    server = subprocess.Popen([sys.executable, "-c", LAUNCH, "--db", url, "api", "serve", "--host", "127.0.0.1",
                               "--port", str(port), "--log-level", "warning", "--no-history"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(server, f"http://127.0.0.1:{port}/health")
        line = ""
        for _ in range(50):  # printed once listening, before any request is answered
            line = server.stdout.readline()
            if "ostinato api serve:" in line:
                break
        [printed] = re.findall(r"dashboard at (\S+)", line)
        assert printed.startswith(f"http://127.0.0.1:{port}/"), line
        signed_in = httpx.get(printed, headers={"Authorization": f"Bearer {secret}"}, timeout=10)
        assert signed_in.status_code == 200 and "<html" in signed_in.text.lower(), (printed, signed_in.status_code)
        assert httpx.get(printed, timeout=10).status_code == 401  # the sign-in form, not a missing page
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def store_now():  # the wall clock: the server reads it too
    from datetime import datetime

    return datetime.now(UTC)


def wait_until_up(server: subprocess.Popen, url: str, timeout: float = 30) -> None:
    def answers() -> bool:
        if server.poll() is not None:
            raise AssertionError(f"the server exited with {server.returncode}: {server.stdout.read()}")
        try:
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(answers, timeout=timeout, interval=0.05, what=f"the server to answer {url}")
