"""The console's sign-in limit: 10 failed sign-ins from one address within 5 minutes, and its sign-ins are
refused (429, a sentence saying why and when to try again, ``Retry-After``) until the window moves on,
the secret not even looked at; each refusal is one log line naming the address, never a secret. Other
addresses are not affected, a success wipes nothing, and behind a trusted proxy each client counts
for itself. Time is the app's clock."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from html import unescape

import pytest
from fastapi.testclient import TestClient
from test_dashboard_helpers import tokens

from ostinato.api import create_app
from ostinato.api.tokens import hash_secret
from ostinato.config import Settings

MINUTE = timedelta(minutes=1)
ATTACKER = ("198.51.100.66", 5000)
NEIGHBOUR = ("198.51.100.67", 5000)
LOGGER = "ostinato.api.console.signin_sessions"


@pytest.fixture
def env(sqlite_store, clock):
    secrets = tokens(sqlite_store, clock)
    return create_app(sqlite_store, Settings(), clock), secrets


def sign_in(app, peer, secret: str, **headers: str):
    return TestClient(app, client=peer).post("/dashboard/login", data={"token": secret}, headers=headers,
                                             follow_redirects=False)


def test_ten_failures_in_five_minutes_and_the_address_waits(env, clock, sqlite_store):
    app, secrets = env
    first = clock.now()
    for guess in range(10):
        assert sign_in(app, ATTACKER, f"guess-{guess}").status_code == 401
        clock.advance(timedelta(seconds=10))  # the 10th at first + 90 s
    refused = sign_in(app, ATTACKER, secrets["admin"])  # even the right secret: it is not looked at
    assert refused.status_code == 429 and "set-cookie" not in refused.headers
    assert refused.headers["retry-after"] == str(5 * 60 - 100)  # the oldest failure leaves the window then
    message = " ".join(unescape(re.sub(r"<[^>]+>", " ", refused.text)).split())
    assert ("✖ Not signed in: too many failed sign-ins from this address (10 within 5 min): try again in 200 s"
            in message), message
    assert refused.headers["content-security-policy"].startswith("default-src 'none'")
    assert sqlite_store.find_api_token(hash_secret(secrets["admin"]))["last_used_at"] is None  # not even looked up
    assert sign_in(app, NEIGHBOUR, secrets["read"]).status_code == 303  # another address signs in
    clock.advance(timedelta(seconds=199))
    assert sign_in(app, ATTACKER, secrets["read"]).status_code == 429
    clock.advance(timedelta(seconds=1))  # the first failure is 5 min old: one more try
    assert sign_in(app, ATTACKER, "guess-10").status_code == 401
    assert sign_in(app, ATTACKER, secrets["read"]).status_code == 429  # and it was spent on a failure
    clock.advance(10 * MINUTE)
    assert sign_in(app, ATTACKER, secrets["read"]).status_code == 303
    assert clock.now() > first


def test_each_refusal_is_one_log_line_naming_the_address_never_a_secret(env, caplog):
    app, secrets = env
    caplog.set_level(logging.DEBUG)
    for guess in range(10):
        sign_in(app, ATTACKER, f"guess-{guess}")
    assert [r for r in caplog.records if r.name == LOGGER] == []  # failures alone are not logged here
    sign_in(app, ATTACKER, secrets["admin"])
    sign_in(app, ATTACKER, "guess-11")
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 2 and all(r.levelno == logging.WARNING for r in caplog.records if r.name == LOGGER)
    assert lines[0] == ("console sign-in refused for 198.51.100.66: 10 failed sign-ins within 5 min; "
                        "next try in 300 s"), lines[0]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert secrets["admin"] not in logged and "guess-" not in logged


def test_a_success_wipes_no_failure(env):
    app, secrets = env
    for guess in range(9):
        sign_in(app, ATTACKER, f"guess-{guess}")
    assert sign_in(app, ATTACKER, secrets["read"]).status_code == 303  # a token of its own...
    assert sign_in(app, ATTACKER, "guess-9").status_code == 401  # ...does not buy more guesses
    assert sign_in(app, ATTACKER, secrets["read"]).status_code == 429


def test_behind_a_trusted_proxy_each_client_counts_for_itself(sqlite_store, clock):
    secrets = tokens(sqlite_store, clock)
    app = create_app(sqlite_store, Settings().with_values({"trusted_proxies": "10.0.0.0/8"}), clock)
    proxy, stranger = ("10.0.0.2", 1), ("192.0.2.1", 1)
    for guess in range(10):
        sign_in(app, proxy, f"guess-{guess}", **{"X-Forwarded-For": "203.0.113.1"})
        sign_in(app, stranger, f"guess-{guess}", **{"X-Forwarded-For": f"203.0.113.{100 + guess}"})
    assert sign_in(app, proxy, secrets["read"], **{"X-Forwarded-For": "203.0.113.1"}).status_code == 429
    assert sign_in(app, proxy, secrets["read"], **{"X-Forwarded-For": "203.0.113.2"}).status_code == 303
    # a stranger's X-Forwarded-For is not believed: its ten failures were its own, whatever it wrote
    assert sign_in(app, stranger, secrets["read"], **{"X-Forwarded-For": "203.0.113.200"}).status_code == 429


def test_the_limiter_counts_an_attempt_until_it_succeeds_and_forgets_quiet_addresses():
    from ostinato.api.console.signin_sessions import SignInLimiter

    at = datetime(2026, 1, 1, tzinfo=UTC)
    limiter = SignInLimiter(max_failures=2, window=MINUTE, max_addresses=3)
    assert limiter.attempt("a", at) == 0 and limiter.attempt("a", at) == 0  # two at once: both counted
    assert limiter.attempt("a", at) == 60  # a third waits, though neither has failed yet
    limiter.succeeded("a", at)
    assert limiter.attempt("a", at + timedelta(seconds=1)) == 0  # one was a success
    assert limiter.attempt("a", at + timedelta(seconds=2)) == 58  # until the first leaves the window
    for name in "bcd":
        limiter.attempt(name, at + timedelta(seconds=3))
    assert limiter.attempt("a", at + timedelta(seconds=4)) == 0  # forgotten: the quietest of four
