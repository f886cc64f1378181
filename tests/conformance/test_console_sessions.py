"""The console's sign-in sessions, on every store: opened for a live token by the hash of their id,
found with their token, ended when idle, at their lifetime's end, at sign-out or with their token's
revocation; ended rows pruned by the next sign-in."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from helpers import database

from ostinato.domain.errors import ConflictError, NotFoundError, ValidationError

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
IDLE = timedelta(hours=12)
LIFETIME = timedelta(days=7)
#: not the remote store: the console's sessions are the API's own, never served (store/tokens/interface.py)
pytestmark = pytest.mark.parametrize("store", ["sqlite", "postgresql", "read-routing"], indirect=True)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@pytest.fixture
def token(store):
    return store.create_api_token("wall", "read", digest("secret"), T0, actor="tests")


def count_sessions(store) -> int:
    return database(store).read("SELECT count(*) AS n FROM console_session")[0]["n"]


def test_a_session_is_found_with_its_token(store, token):
    opened = store.open_console_session(digest("sid-1"), token["id"], T0)
    assert opened["token"]["name"] == "wall" and opened["token"]["scope"] == "read"
    assert opened["created_at"] == T0 and opened["idle_until"] == T0 + IDLE and opened["expires_at"] == T0 + LIFETIME
    found = store.find_console_session(digest("sid-1"), T0 + timedelta(minutes=5))
    assert found["id"] == opened["id"] and found["token"]["id"] == token["id"]
    assert store.find_console_session(digest("sid-2"), T0) is None


def test_the_session_id_is_never_stored(store, token):
    store.open_console_session(digest("the-session-id"), token["id"], T0)
    rows = database(store).read("SELECT * FROM console_session")
    assert "the-session-id" not in repr([dict(r) for r in rows])


def test_an_idle_session_ends_and_use_keeps_it_alive_up_to_its_lifetime(store, token):
    store.open_console_session(digest("sid"), token["id"], T0)
    assert store.find_console_session(digest("sid"), T0 + IDLE - timedelta(seconds=1)) is not None
    # used just before its idle end: alive for another IDLE from then
    moved = store.find_console_session(digest("sid"), T0 + IDLE - timedelta(seconds=1))
    assert moved["idle_until"] == T0 + 2 * IDLE - timedelta(seconds=1)
    at = T0 + IDLE - timedelta(seconds=1)
    while at + IDLE / 2 < T0 + LIFETIME:  # used every 6 hours: never idle, and yet it ends after 7 days
        at += IDLE / 2
        assert store.find_console_session(digest("sid"), at) is not None, at
    assert store.find_console_session(digest("sid"), at)["idle_until"] == T0 + LIFETIME
    assert store.find_console_session(digest("sid"), T0 + LIFETIME) is None
    store.open_console_session(digest("idle"), token["id"], T0 + LIFETIME)
    assert store.find_console_session(digest("idle"), T0 + LIFETIME + IDLE) is None


def test_the_idle_end_and_the_tokens_last_use_are_written_at_most_once_a_minute(store, token):
    store.open_console_session(digest("sid"), token["id"], T0)
    found = store.find_console_session(digest("sid"), T0 + timedelta(seconds=30))
    assert found["idle_until"] == T0 + IDLE  # not moved: less than a minute later
    assert found["token"]["last_used_at"] == T0 + timedelta(seconds=30)
    again = store.find_console_session(digest("sid"), T0 + timedelta(seconds=50))
    assert again["token"]["last_used_at"] == T0 + timedelta(seconds=30)
    later = store.find_console_session(digest("sid"), T0 + timedelta(minutes=2))
    assert later["idle_until"] == T0 + timedelta(minutes=2) + IDLE
    assert store.list_api_tokens()[0]["last_used_at"] == T0 + timedelta(minutes=2)


def test_sign_out_closes_the_session(store, token):
    store.open_console_session(digest("a"), token["id"], T0)
    store.open_console_session(digest("b"), token["id"], T0)
    assert store.close_console_session(digest("a")) is True
    assert store.close_console_session(digest("a")) is False
    assert store.find_console_session(digest("a"), T0) is None
    assert store.find_console_session(digest("b"), T0) is not None


def test_revoking_the_token_ends_its_sessions_at_once(store, token):
    other = store.create_api_token("other", "admin", digest("other"), T0, actor="tests")
    store.open_console_session(digest("wall-1"), token["id"], T0)
    store.open_console_session(digest("wall-2"), token["id"], T0)
    store.open_console_session(digest("other"), other["id"], T0)
    store.revoke_api_token("wall", T0 + timedelta(minutes=1), actor="tests")
    assert store.find_console_session(digest("wall-1"), T0 + timedelta(minutes=1)) is None
    assert store.find_console_session(digest("wall-2"), T0 + timedelta(minutes=1)) is None
    assert store.find_console_session(digest("other"), T0 + timedelta(minutes=1)) is not None
    assert count_sessions(store) == 1
    with pytest.raises(NotFoundError):  # no session for a revoked token
        store.open_console_session(digest("wall-3"), token["id"], T0 + timedelta(minutes=2))


def test_a_session_of_a_revoked_token_is_refused_even_if_its_row_is_left(store, token):
    store.open_console_session(digest("sid"), token["id"], T0)
    with database(store).write() as conn:  # a revocation written by hand, its sessions left in place
        conn.execute("UPDATE api_token SET revoked_at = created_at")
    assert store.find_console_session(digest("sid"), T0 + timedelta(minutes=1)) is None


def test_a_new_sign_in_prunes_the_ended_sessions(store, token):
    store.open_console_session(digest("old"), token["id"], T0)
    store.open_console_session(digest("recent"), token["id"], T0 + IDLE - timedelta(minutes=1))
    assert count_sessions(store) == 2
    store.open_console_session(digest("new"), token["id"], T0 + IDLE)
    assert count_sessions(store) == 2  # "old" ended at T0 + IDLE
    assert store.find_console_session(digest("recent"), T0 + IDLE) is not None


def test_bad_sessions_name_the_field_and_change_nothing(store, token):
    for session_hash in ("not-a-hash", digest("x").upper(), None):
        with pytest.raises(ValidationError) as caught:
            store.open_console_session(session_hash, token["id"], T0)
        assert caught.value.field == "session_hash"
        with pytest.raises(ValidationError):
            store.find_console_session(session_hash, T0)
    with pytest.raises(ValidationError) as caught:
        store.open_console_session(digest("x"), token["id"], T0, idle=timedelta(0))
    assert caught.value.field == "idle"
    with pytest.raises(NotFoundError):
        store.open_console_session(digest("x"), token["id"] + 100, T0)
    assert count_sessions(store) == 0
    store.open_console_session(digest("x"), token["id"], T0)
    with pytest.raises(ConflictError):
        store.open_console_session(digest("x"), token["id"], T0)
    assert count_sessions(store) == 1
