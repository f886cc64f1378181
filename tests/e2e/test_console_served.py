"""The console as ``ostinato api serve`` serves it (a real process, its log captured): no proxy is believed
unless the ``trusted_proxies`` setting names it, not even one on 127.0.0.1; and its log, uvicorn's access
log included, at the debug level, holds no secret: neither a token's (posted to sign in, or sent as a
bearer header), nor a console session's id, nor the SHA-256 of either."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from test_api_serve import LAUNCH, store_now, wait_until_up

from ostinato.api.console.signin_sessions import COOKIE
from ostinato.api.tokens import hash_secret, new_secret
from ostinato.store import open_store
from test_servers.postgres import free_port


@dataclass
class Served:
    base: str
    secrets: dict[str, str]
    log: Path
    process: subprocess.Popen

    def stop(self) -> str:
        """Stop the server; its whole log."""
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=20) == 0
        return self.log.read_text()


def serve(tmp_path: Path, log_level: str = "info", **environ: str) -> Iterator[Served]:
    tmp_path.mkdir()
    url = f"sqlite:///{tmp_path}/api.db"
    secrets = {"read": new_secret(), "admin": new_secret()}
    with open_store(url) as store:
        store.init_schema()
        for scope, secret in secrets.items():
            store.create_api_token(f"console-{scope}", scope, hash_secret(secret), store_now(), actor="tests")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")} | environ
    log = tmp_path / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-c", LAUNCH, "--db", url, "api", "serve", "--host", "127.0.0.1",
                                    "--port", str(port), "--log-level", log_level, "--no-history"],
                                   cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(process, f"{base}/health")
        yield Served(base, secrets, log, process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def served(tmp_path) -> Iterator[Served]:
    yield from serve(tmp_path / "served")


@pytest.fixture
def served_behind_a_proxy(tmp_path) -> Iterator[Served]:
    yield from serve(tmp_path / "behind-a-proxy", OSTINATO_TRUSTED_PROXIES="127.0.0.1")


@pytest.fixture
def served_verbosely(tmp_path) -> Iterator[Served]:
    yield from serve(tmp_path / "verbose", "debug")


def sign_in(served: Served, secret: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{served.base}/dashboard/login", data={"token": secret}, headers=headers, timeout=10)


def test_a_local_proxys_headers_are_ignored_unless_trusted(served, served_behind_a_proxy):
    untrusted = sign_in(served, served.secrets["read"], **{"X-Forwarded-Proto": "https"})
    assert untrusted.status_code == 303 and "secure" not in untrusted.headers["set-cookie"].lower()
    trusted = sign_in(served_behind_a_proxy, served_behind_a_proxy.secrets["read"], **{"X-Forwarded-Proto": "https"})
    assert trusted.status_code == 303 and "; secure" in trusted.headers["set-cookie"].lower()
    served.stop()
    served_behind_a_proxy.stop()


def test_the_servers_log_holds_no_secret(served_verbosely):
    served = served_verbosely
    guess = "wrong-guess-" + "z" * 31
    assert sign_in(served, guess).status_code == 401
    signed = sign_in(served, served.secrets["admin"])
    assert signed.status_code == 303
    session = signed.cookies[COOKIE]
    with httpx.Client(base_url=served.base, timeout=10) as client:
        assert client.get("/", headers={"Cookie": f"{COOKIE}={session}"}).status_code == 200
        assert client.get("/api/v1/tasks", headers={"Authorization": f"Bearer {served.secrets['read']}"}).status_code == 200
        assert client.get("/api/v1/tasks", headers={"Authorization": f"Bearer {guess}"}).status_code == 401
        assert client.post("/dashboard/logout", headers={"Cookie": f"{COOKIE}={session}"}).status_code == 303
    log = served.stop()
    assert '"POST /dashboard/login HTTP/1.1" 401' in log and '"GET /api/v1/tasks HTTP/1.1" 200' in log  # it logs
    for secret in (*served.secrets.values(), guess, session):
        assert secret not in log and hashlib.sha256(secret.encode()).hexdigest() not in log
