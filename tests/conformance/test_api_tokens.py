"""Tokens of the HTTP API, on every store: created by the hash of their secret, listed, revoked, found."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.errors import ConflictError, NotFoundError, ValidationError

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
#: not the remote store: API tokens are managed on the server only, never through the API (remote/verbs.py)
pytestmark = pytest.mark.parametrize("store", ["sqlite", "postgresql", "read-routing"], indirect=True)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def test_create_list_and_find(store):
    created = store.create_api_token("ci", "read", digest("s1"), T0, actor="tests")
    assert created["name"] == "ci" and created["scope"] == "read" and created["created_at"] == T0
    assert created["revoked_at"] is None and created["last_used_at"] is None
    assert "secret_hash" not in created
    store.create_api_token("admin", "admin", digest("s2"), T0 + timedelta(seconds=1), actor="tests")
    assert [t["name"] for t in store.list_api_tokens()] == ["admin", "ci"]
    found = store.find_api_token(digest("s1"))
    assert found["id"] == created["id"] and found["scope"] == "read"
    assert store.find_api_token(digest("nope")) is None


def test_the_secret_is_never_stored(store):
    store.create_api_token("ci", "read", digest("the-secret"), T0, actor="tests")
    assert "the-secret" not in repr(store.list_api_tokens())


def test_names_are_unique(store):
    store.create_api_token("ci", "read", digest("s1"), T0, actor="tests")
    with pytest.raises(ConflictError, match="ci"):
        store.create_api_token("ci", "admin", digest("s2"), T0, actor="tests")
    with pytest.raises(ConflictError):
        store.create_api_token("other", "admin", digest("s1"), T0, actor="tests")
    assert [t["scope"] for t in store.list_api_tokens()] == ["read"]


@pytest.mark.parametrize("name, scope, secret_hash, field", [
    ("", "read", digest("x"), "name"),
    ("ci", "write", digest("x"), "scope"),
    ("ci", "read", "not-a-hash", "secret_hash"),
    ("ci", "read", digest("x").upper(), "secret_hash"),
])
def test_bad_tokens_name_the_field_and_change_nothing(store, name, scope, secret_hash, field):
    with pytest.raises(ValidationError) as caught:
        store.create_api_token(name, scope, secret_hash, T0, actor="tests")
    assert caught.value.field == field
    assert store.list_api_tokens() == []


def test_revoke_keeps_the_first_time(store):
    store.create_api_token("ci", "read", digest("s1"), T0, actor="tests")
    revoked = store.revoke_api_token("ci", T0 + timedelta(hours=1), actor="tests")
    assert revoked["revoked_at"] == T0 + timedelta(hours=1)
    again = store.revoke_api_token("ci", T0 + timedelta(hours=2), actor="tests")
    assert again["revoked_at"] == T0 + timedelta(hours=1)
    assert store.find_api_token(digest("s1"))["revoked_at"] == T0 + timedelta(hours=1)
    with pytest.raises(NotFoundError):
        store.revoke_api_token("missing", T0, actor="tests")


def test_last_used_is_written_at_most_once_a_minute(store):
    store.create_api_token("ci", "read", digest("s1"), T0, actor="tests")
    assert store.find_api_token(digest("s1"), now=T0 + timedelta(seconds=5))["last_used_at"] == T0 + timedelta(seconds=5)
    assert store.find_api_token(digest("s1"), now=T0 + timedelta(seconds=30))["last_used_at"] == T0 + timedelta(seconds=5)
    assert store.find_api_token(digest("s1"))["last_used_at"] == T0 + timedelta(seconds=5)
    later = T0 + timedelta(minutes=2)
    assert store.find_api_token(digest("s1"), now=later)["last_used_at"] == later
    assert store.list_api_tokens()[0]["last_used_at"] == later


def test_a_revoked_token_is_not_touched(store):
    store.create_api_token("ci", "read", digest("s1"), T0, actor="tests")
    store.revoke_api_token("ci", T0, actor="tests")
    assert store.find_api_token(digest("s1"), now=T0 + timedelta(hours=1))["last_used_at"] is None


def test_adding_and_revoking_write_their_audit_events_and_a_refusal_writes_none(store):
    store.create_api_token("beat-1", "worker", digest("w1"), T0, actor="ana@ops")
    store.revoke_api_token("beat-1", T0 + timedelta(hours=1), actor="bo@ops")
    store.revoke_api_token("beat-1", T0 + timedelta(hours=2), actor="bo@ops")
    with pytest.raises(ConflictError):
        store.create_api_token("beat-1", "read", digest("w2"), T0, actor="ana@ops")
    with pytest.raises(NotFoundError):
        store.revoke_api_token("beat-2", T0, actor="ana@ops")
    with pytest.raises(ValidationError):
        store.create_api_token("beat-3", "root", digest("w3"), T0, actor="ana@ops")
    events = [(e.actor, e.action, e.target, e.outcome) for e in reversed(store.list_audit())]
    assert events == [
        ("ana@ops", "token.add", "token:beat-1", "done: added, scope worker"),
        ("bo@ops", "token.revoke", "token:beat-1", "done: revoked"),
        ("bo@ops", "token.revoke", "token:beat-1", f"done: unchanged, it was revoked at {(T0 + timedelta(hours=1)).isoformat()}"),
    ]
