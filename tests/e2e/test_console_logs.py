"""No secret reaches a log line: every record of every logger, at DEBUG, while a person signs in (and fails
to), uses the console and signs out, while programs call the API with bearer tokens (good, unknown and
revoked) and the store's verbs over HTTP, and while ``ostinato token add`` makes a token. The secrets
looked for: the tokens' secrets and wrong guesses, the console's session ids, and the SHA-256 of each
(what the store keeps). The access log of a real ``api serve`` is checked in test_console_served.py."""

from __future__ import annotations

import hashlib
import json
import logging
import re

import pytest
from cli_helpers import ok
from fastapi.testclient import TestClient
from test_dashboard_helpers import seed, tokens

from ostinato.api import create_app
from ostinato.api.console.signin_sessions import COOKIE
from ostinato.config import Settings

FORM = re.compile(r'<form[^>]*action="(/dashboard/[^"]+)"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)">')


def forms_of(text: str) -> dict[str, str]:
    return dict(FORM.findall(text))


def leaked(records: list[logging.LogRecord], secrets: list[str]) -> list[str]:
    """The log lines (message, arguments and traceback) holding a secret or its SHA-256."""
    wanted = [s for secret in secrets for s in (secret, hashlib.sha256(secret.encode()).hexdigest())]
    found = []
    for record in records:
        line = " ".join([record.getMessage(), repr(record.args), record.exc_text or "",
                         logging.Formatter().formatException(record.exc_info) if record.exc_info else ""])
        found += [f"{record.name}: {line}" for secret in wanted if secret in line]
    return found


@pytest.fixture
def everything_logged(caplog):
    caplog.set_level(logging.DEBUG)
    for name in ("", "uvicorn", "uvicorn.access", "uvicorn.error", "httpx", "httpx2", "httpcore", "ostinato"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    return caplog


def test_signing_in_using_the_console_and_signing_out_log_no_secret(sqlite_store, clock, everything_logged):
    seed(sqlite_store, clock)
    secrets = tokens(sqlite_store, clock)
    app = create_app(sqlite_store, Settings(), clock)
    guesses = [f"wrong-guess-{n}-{'x' * 30}" for n in range(11)]
    browser = TestClient(app, client=("198.51.100.1", 1))
    for guess in guesses:  # ten failures, then a refused sign-in (logged, with its address)
        browser.post("/dashboard/login", data={"token": guess})
    admin = TestClient(app)
    assert admin.post("/dashboard/login", data={"token": secrets["admin"]}, follow_redirects=False).status_code == 303
    session_id = admin.cookies[COOKIE]
    page = admin.get("/dashboard/schedules/aaa-daily")
    csrf = forms_of(page.text)["/dashboard/schedules/aaa-daily/pause"]
    paused = admin.post("/dashboard/schedules/aaa-daily/pause", data={"csrf": csrf},
                        headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert paused.status_code == 303
    admin.post("/dashboard/schedules/aaa-daily/resume", data={"csrf": "forged"}, headers={"Origin": "http://testserver"})
    admin.post("/dashboard/logout")
    TestClient(app, cookies={COOKIE: session_id}).get("/")  # the ended session, replayed
    assert any("console sign-in refused for 198.51.100.1" in r.getMessage() for r in everything_logged.records)
    assert any("HTTP Request" in r.getMessage() and "/dashboard/login" in r.getMessage() for r in everything_logged.records)
    assert leaked(everything_logged.records, [*secrets.values(), *guesses, session_id, csrf]) == []


def test_programs_with_bearer_tokens_log_no_secret(sqlite_store, clock, everything_logged):
    seed(sqlite_store, clock)
    secrets = tokens(sqlite_store, clock)
    app = create_app(sqlite_store, Settings(), clock)
    program = TestClient(app)

    def bearer(secret: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {secret}"}

    assert program.get("/api/v1/tasks", headers=bearer(secrets["read"])).status_code == 200
    assert program.get("/", headers=bearer(secrets["read"])).status_code == 200
    assert program.post("/api/v1/task-types", headers=bearer(secrets["read"]), json={}).status_code == 403
    assert program.post("/api/v1/store/list_task_types", headers=bearer(secrets["admin"]), json={}).status_code == 200
    assert program.get("/metrics", headers=bearer(secrets["admin"])).status_code == 200
    unknown = "not-a-token-" + "y" * 30
    assert program.get("/api/v1/tasks", headers=bearer(unknown)).status_code == 401
    sqlite_store.revoke_api_token("dashboard-read", clock.now(), actor="tests")
    assert program.get("/api/v1/tasks", headers=bearer(secrets["read"])).status_code == 401
    assert any("HTTP Request" in r.getMessage() and "/api/v1/tasks" in r.getMessage() for r in everything_logged.records)
    assert leaked(everything_logged.records, [*secrets.values(), unknown]) == []


def test_making_a_token_with_the_cli_logs_no_secret(tmp_path, everything_logged):
    url = f"sqlite:///{tmp_path}/cli.db"
    ok(url, "db", "init")
    made = ok(url, "token", "add", "ci", "--scope", "admin")
    secret = made.stdout.splitlines()[1]
    assert len(secret) == 43 and made.stdout.count(secret) == 1  # shown once, on the standard output
    assert secret not in made.stderr
    as_json = json.loads(ok(url, "token", "add", "ci-json", "--scope", "read", "--json").stdout)
    listed = ok(url, "token", "list", "--json").stdout
    assert secret not in listed and as_json["secret"] not in listed
    ok(url, "token", "revoke", "ci")
    assert leaked(everything_logged.records, [secret, as_json["secret"]]) == []
