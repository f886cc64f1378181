"""The tokens role: the HTTP API's tokens, kept by the hash of their secret (see docs/reference/api.md),
and the console's sign-in sessions, each of one token (see docs/reference/security.md).

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc
from datetime import datetime, timedelta
from typing import Any

#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
#: None served: the API checks tokens itself, and they are managed on the server only.
REMOTE_SCOPES: dict[str, str] = {}
NOT_REMOTE: dict[str, str] = {
    "create_api_token": "API tokens are managed on the server only: `ostinato token add` with --db",
    "list_api_tokens": "API tokens are managed on the server only: `ostinato token list` with --db",
    "revoke_api_token": "API tokens are managed on the server only: `ostinato token revoke` with --db",
    "find_api_token": "API tokens are managed on the server only; the API checks them itself",
    "open_console_session": "the console's sessions are the API's own: it opens one at sign-in; served, a token "
                            "could open sessions of any token by its id",
    "find_console_session": "the console's sessions are the API's own: it checks the cookie's session itself; "
                            "served, a read token could try session hashes and learn their tokens",
    "close_console_session": "the console's sessions are the API's own: its sign-out closes the cookie's session",
}


class TokenStore(abc.ABC):
    """the HTTP API's tokens, kept by the hash of their secret (see docs/reference/api.md), and the
    console's sessions (see docs/reference/security.md)."""

    # -- tokens of the HTTP API (see docs/reference/api.md)---------------------------------
    # A token is returned as a dict: id, name, scope (``domain.access.SCOPES``), created_at,
    # revoked_at and last_used_at (None when never); its secret's hash is never read back.

    @abc.abstractmethod
    def create_api_token(self, name: str, scope: str, secret_hash: str, now: datetime, *, actor: str) -> dict[str, Any]:
        """Store a token by the SHA-256 (hex) of its secret, with the audit event ``token.add`` of ``actor``
        in the same transaction; ConflictError if the name is taken (revoked tokens keep theirs),
        ValidationError naming the field for a bad name, scope or hash."""

    @abc.abstractmethod
    def list_api_tokens(self) -> list[dict[str, Any]]:
        """Every token, revoked ones included, by name."""

    @abc.abstractmethod
    def revoke_api_token(self, name: str, now: datetime, *, actor: str) -> dict[str, Any]:
        """Revoke a token (a second revocation keeps the first time), with the audit event ``token.revoke`` of
        ``actor`` and the closing of its console sessions in the same transaction; NotFoundError if there is
        none."""

    @abc.abstractmethod
    def find_api_token(self, secret_hash: str, *, now: datetime | None = None) -> dict[str, Any] | None:
        """The token with this secret hash, revoked or not (an index lookup); None if there is none.
        With ``now``, a live token's ``last_used_at`` is set to it, at most once a minute."""

    #: how stale ``last_used_at`` may get before :meth:`find_api_token` writes it again
    API_TOKEN_TOUCH_EVERY = timedelta(minutes=1)

    # -- the console's sign-in sessions (see docs/reference/security.md) -----------------------
    # A session is returned as a dict: id, token (the token's dict, as find_api_token returns it),
    # created_at, idle_until (when it ends unless used before) and expires_at (when it ends at the
    # latest). It is kept by the SHA-256 (hex) of its id; the id itself is never stored.

    #: the longest a session lives, however often it is used
    CONSOLE_SESSION_LIFETIME = timedelta(days=7)
    #: a session unused for this long ends (the console's pages refresh themselves every 30 s)
    CONSOLE_SESSION_IDLE = timedelta(hours=12)

    @abc.abstractmethod
    def open_console_session(self, session_hash: str, token_id: int, now: datetime, *,
                             idle: timedelta = CONSOLE_SESSION_IDLE,
                             lifetime: timedelta = CONSOLE_SESSION_LIFETIME) -> dict[str, Any]:
        """Open a session of the token ``token_id`` by the SHA-256 (hex) of its id: it ends after ``idle``
        unused, after ``lifetime`` at the latest. Ended sessions are deleted in the same transaction.
        NotFoundError if the token is unknown or revoked; ValidationError naming the field for a bad hash
        or duration; ConflictError if a session has this hash."""

    @abc.abstractmethod
    def find_console_session(self, session_hash: str, now: datetime, *,
                             idle: timedelta = CONSOLE_SESSION_IDLE) -> dict[str, Any] | None:
        """The live session with this hash and its token (an index lookup, joined to the token's row), or
        None: no such session, it ended (unused since ``idle_until``, or past ``expires_at``), or its token
        was revoked. Its ``idle_until`` moves to ``now + idle`` (not past ``expires_at``), and its token's
        ``last_used_at`` to ``now``, each written at most once a minute."""

    @abc.abstractmethod
    def close_console_session(self, session_hash: str) -> bool:
        """Delete the session with this hash (signing out); False if there was none."""

    @staticmethod
    def _checked_session(session_hash: Any, idle: Any = None, lifetime: Any = None) -> None:
        """ValidationError naming the field of a session that cannot be stored or looked up."""
        from ...domain.errors import ValidationError

        if (not isinstance(session_hash, str) or len(session_hash) != 64
                or any(c not in "0123456789abcdef" for c in session_hash)):
            raise ValidationError("session_hash", "the SHA-256 of the session id, 64 lowercase hexadecimal digits",
                                  None)
        for field, span in (("idle", idle), ("lifetime", lifetime)):
            if span is not None and (not isinstance(span, timedelta) or span <= timedelta(0)):
                raise ValidationError(field, "a positive duration", span)

    @staticmethod
    def _checked_api_token(name: Any, scope: Any, secret_hash: Any) -> None:
        """ValidationError naming the field of a token that cannot be stored."""
        from ...domain.access import parse_scope
        from ...domain.errors import ValidationError, check_text

        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise ValidationError("name", "a non-empty token name of at most 200 characters", name)
        check_text(name, "name")
        parse_scope(scope)
        if (not isinstance(secret_hash, str) or len(secret_hash) != 64
                or any(c not in "0123456789abcdef" for c in secret_hash)):
            raise ValidationError("secret_hash", "the SHA-256 of the secret, 64 lowercase hexadecimal digits", None)
