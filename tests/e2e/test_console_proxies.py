"""The console behind a TLS-terminating proxy (the ``trusted_proxies`` setting): from a trusted proxy's
address, ``X-Forwarded-Proto: https`` makes the session cookie ``Secure`` and the forms' own origin
``https://``, and ``X-Forwarded-For`` names the client; from any other address both are ignored."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from test_dashboard_helpers import seed, tokens

from ostinato.api import create_app
from ostinato.api.console.signin_sessions import COOKIE
from ostinato.api.proxies import TrustedProxies
from ostinato.config import Settings

PROXY = ("10.1.2.3", 40000)
STRANGER = ("192.0.2.7", 40000)
HTTPS = {"X-Forwarded-Proto": "https"}
FORM = re.compile(r'<form[^>]*action="(/dashboard/[^"]+)"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)">')


@pytest.fixture
def env(sqlite_store, clock):
    seed(sqlite_store, clock)
    secrets = tokens(sqlite_store, clock)
    settings = Settings().with_values({"trusted_proxies": "10.0.0.0/8"})
    return create_app(sqlite_store, settings, clock), secrets


def sign_in(app, client: tuple[str, int], secret: str, headers: dict[str, str]):
    browser = TestClient(app, client=client)
    answer = browser.post("/dashboard/login", data={"token": secret}, headers=headers, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return browser, answer.headers["set-cookie"]


def test_a_trusted_proxys_https_makes_the_cookie_secure(env):
    app, secrets = env
    _, cookie = sign_in(app, PROXY, secrets["read"], HTTPS)
    assert "; secure" in cookie.lower()
    _, plain = sign_in(app, PROXY, secrets["read"], {"X-Forwarded-Proto": "http"})
    assert "secure" not in plain.lower()
    _, chained = sign_in(app, PROXY, secrets["read"], {"X-Forwarded-Proto": "http, https"})  # the nearest proxy's
    assert "; secure" in chained.lower()


def test_anyone_elses_forwarded_headers_are_ignored(env, sqlite_store, clock):
    app, secrets = env
    _, cookie = sign_in(app, STRANGER, secrets["read"], HTTPS)
    assert "secure" not in cookie.lower()
    default = create_app(sqlite_store, Settings(), clock)  # no proxy trusted by default, not even 127.0.0.1
    for address in (("127.0.0.1", 1), PROXY):
        _, cookie = sign_in(default, address, secrets["read"], HTTPS)
        assert "secure" not in cookie.lower(), address


def test_the_forms_origin_is_the_one_the_proxy_serves(env, sqlite_store):
    """Behind the proxy, the browser's Origin is https://…: its forms are accepted; a stranger claiming
    https is not believed, and its https Origin is foreign."""
    app, secrets = env
    browser, _ = sign_in(app, PROXY, secrets["admin"], HTTPS)
    session = browser.cookies[COOKIE]  # Secure: the test client, talking http to the proxy's side, keeps it back
    browser = TestClient(app, client=PROXY, headers={"Cookie": f"{COOKIE}={session}"})
    page = browser.get("/dashboard/schedules/aaa-daily", headers=HTTPS)
    csrf = dict(FORM.findall(page.text))["/dashboard/schedules/aaa-daily/pause"]
    done = browser.post("/dashboard/schedules/aaa-daily/pause", data={"csrf": csrf},
                        headers={**HTTPS, "Origin": "https://testserver"}, follow_redirects=False)
    assert done.status_code == 303 and sqlite_store.get_schedule("aaa-daily").enabled is False
    stranger, _ = sign_in(app, STRANGER, secrets["admin"], HTTPS)
    page = stranger.get("/dashboard/schedules/zzz-daily", headers=HTTPS)
    csrf = dict(FORM.findall(page.text))["/dashboard/schedules/zzz-daily/pause"]
    refused = stranger.post("/dashboard/schedules/zzz-daily/pause", data={"csrf": csrf},
                            headers={**HTTPS, "Origin": "https://testserver"}, follow_redirects=False)
    assert refused.status_code == 403 and "not from this dashboard (http://testserver)" in refused.text
    assert sqlite_store.get_schedule("zzz-daily").enabled is True


@pytest.mark.parametrize("peer, forwarded, seen", [
    (PROXY, "203.0.113.9", "203.0.113.9"),
    (PROXY, "198.51.100.1, 203.0.113.9, 10.0.0.2", "203.0.113.9"),  # what a client wrote first is not believed
    (PROXY, "10.0.0.2, 10.0.0.3", "10.0.0.2"),
    (PROXY, "unknown", "10.1.2.3"),
    (STRANGER, "203.0.113.9", "192.0.2.7"),
    (("::ffff:10.1.2.3", 1), "2001:db8::1", "2001:db8::1"),
])
def test_x_forwarded_for_names_the_client_past_the_trusted_proxies(peer, forwarded, seen):
    async def echo(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": f"{scope['client'][0]} {scope['scheme']}".encode()})

    client = TestClient(TrustedProxies(echo, ["10.0.0.0/8"]), client=peer)
    assert client.get("/", headers={"X-Forwarded-For": forwarded}).text == f"{seen} http"
