"""The console's sign-in sessions over HTTP, on every store: the cookie holds a random session id, never
the token's secret; the store keeps the id's hash only; a session ends at sign-out (a replayed cookie
opens nothing), when its token is revoked (at the next request), after 12 hours unused and after 7 days
whatever its use; each session's forms carry its own CSRF token."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from html import unescape

import pytest
from fastapi.testclient import TestClient
from test_dashboard_helpers import HOUR, seed, tokens

from ostinato.api import create_app
from ostinato.api.console.signin_sessions import COOKIE
from ostinato.config import Settings

OWN = "http://testserver"
FORM = re.compile(r'<form[^>]*action="(/dashboard/[^"]+)"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)">')


@pytest.fixture
def env(store, clock):
    seed(store, clock)
    return create_app(store, Settings(), clock), tokens(store, clock)


def signed_in(app, secret: str) -> tuple[TestClient, str]:
    """A browser signed in with ``secret``; and its cookie's value."""
    client = TestClient(app)
    answer = client.post("/dashboard/login", data={"token": secret}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return client, client.cookies[COOKIE]


def with_cookie(app, value: str) -> TestClient:
    """A browser presenting ``value`` as its session cookie (copied from another, or made up)."""
    return TestClient(app, cookies={COOKIE: value})


def sessions(store) -> list[dict]:
    return [dict(r) for r in store.db.read("SELECT * FROM console_session ORDER BY id")]


def test_the_cookie_holds_a_session_id_never_the_secret(env, store):
    app, secrets = env
    client, cookie = signed_in(app, secrets["read"])
    header = client.post("/dashboard/login", data={"token": secrets["read"]}, follow_redirects=False).headers["set-cookie"]
    assert secrets["read"] not in header and hashlib.sha256(secrets["read"].encode()).hexdigest() not in header
    assert "HttpOnly" in header and "SameSite=strict" in header and "Max-Age=604800" in header
    assert cookie != secrets["read"] and len(cookie) >= 43
    stored = sessions(store)
    assert len(stored) == 2  # one per sign-in
    assert stored[0]["session_hash"] == hashlib.sha256(cookie.encode()).hexdigest()
    assert cookie not in repr(stored) and secrets["read"] not in repr(stored)
    assert client.get("/").status_code == 200


def test_a_cookie_holding_a_tokens_secret_opens_nothing(env):
    app, secrets = env
    for secret in secrets.values():
        answer = with_cookie(app, secret).get("/")
        assert answer.status_code == 401 and "bills-ca" not in answer.text
        assert "the session is over" in answer.text
        assert answer.headers["set-cookie"].startswith(f'{COOKIE}=""')  # forgotten by the browser


def test_sign_out_ends_the_session_on_the_server(env, store):
    app, secrets = env
    client, cookie = signed_in(app, secrets["read"])
    other, _ = signed_in(app, secrets["read"])
    client.post("/dashboard/logout", follow_redirects=False)
    assert client.get("/").status_code == 401
    replayed = with_cookie(app, cookie).get("/")  # the cookie copied before the sign-out
    assert replayed.status_code == 401 and "bills-ca" not in replayed.text
    assert other.get("/").status_code == 200 and len(sessions(store)) == 1


def test_revoking_the_token_ends_its_sessions_at_the_next_request(env, store, clock):
    app, secrets = env
    reader, _ = signed_in(app, secrets["read"])
    admin, _ = signed_in(app, secrets["admin"])
    assert reader.get("/").status_code == 200
    store.revoke_api_token("dashboard-read", clock.now(), actor="tests")
    for path in ("/", "/dashboard/schedules/aaa-daily", "/dashboard/task-types/load-git", "/dashboard/history"):
        answer = reader.get(path)
        assert answer.status_code == 401 and 'action="/dashboard/login"' in answer.text, path
    assert admin.get("/").status_code == 200


def test_an_unused_session_ends_after_12_hours_and_none_outlives_7_days(env, clock):
    app, secrets = env
    signed_at = clock.now()
    left, _ = signed_in(app, secrets["read"])
    wall, _ = signed_in(app, secrets["read"])
    clock.advance(11 * HOUR)
    assert wall.get("/").status_code == 200
    clock.advance(2 * HOUR)
    assert left.get("/").status_code == 401  # 13 h unused
    while wall.get("/").status_code == 200:  # a wall display, refreshed every 6 hours (every 30 s in truth)
        assert clock.now() - signed_at < timedelta(days=7), "a session outlived 7 days"
        clock.advance(6 * HOUR)
    assert clock.now() - signed_at >= timedelta(days=7)  # ended by its lifetime, not before


def test_each_session_has_its_own_form_token(env, store):
    app, secrets = env
    first, _ = signed_in(app, secrets["admin"])
    second, _ = signed_in(app, secrets["admin"])
    path = "/dashboard/schedules/aaa-daily/pause"
    first_csrf = dict(FORM.findall(first.get("/dashboard/schedules/aaa-daily").text))[path]
    second_csrf = dict(FORM.findall(second.get("/dashboard/schedules/aaa-daily").text))[path]
    assert first_csrf != second_csrf  # the same token, two sessions
    refused = second.post(path, data={"csrf": first_csrf}, headers={"Origin": OWN}, follow_redirects=False)
    assert refused.status_code == 403 and "CSRF token is not this session" in unescape(refused.text)
    first.post("/dashboard/logout")
    again, _ = signed_in(app, secrets["admin"])  # a new session: the old page's form is stale
    stale = again.post(path, data={"csrf": first_csrf}, headers={"Origin": OWN}, follow_redirects=False)
    assert stale.status_code == 403 and store.get_schedule("aaa-daily").enabled
    done = second.post(path, data={"csrf": second_csrf}, headers={"Origin": OWN}, follow_redirects=False)
    assert done.status_code == 303 and not store.get_schedule("aaa-daily").enabled


def test_another_site_cannot_sign_a_browser_in_as_its_own_token(env, store):
    """A form on another site posting its attacker's secret to the sign-in would leave the victim's browser
    signed in as the attacker (what they then do is seen by the attacker's token): refused, nothing opened."""
    app, secrets = env
    client = TestClient(app)
    for header in ({"Origin": "https://evil.example"}, {"Referer": "https://evil.example/page"}):
        refused = client.post("/dashboard/login", data={"token": secrets["admin"]}, headers=header,
                              follow_redirects=False)
        assert refused.status_code == 403 and "evil.example" in unescape(refused.text)
        assert COOKIE not in refused.headers.get("set-cookie", "") and sessions(store) == []
    own = client.post("/dashboard/login", data={"token": secrets["read"]}, headers={"Origin": OWN},
                      follow_redirects=False)
    assert own.status_code == 303 and len(sessions(store)) == 1
