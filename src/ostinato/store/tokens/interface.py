"""The tokens role: the HTTP API's tokens, kept by the hash of their secret (see docs/reference/api.md).

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
}


class TokenStore(abc.ABC):
    """the HTTP API's tokens, kept by the hash of their secret (see docs/reference/api.md)."""

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
        ``actor`` in the same transaction; NotFoundError if there is none."""

    @abc.abstractmethod
    def find_api_token(self, secret_hash: str, *, now: datetime | None = None) -> dict[str, Any] | None:
        """The token with this secret hash, revoked or not (an index lookup); None if there is none.
        With ``now``, a live token's ``last_used_at`` is set to it, at most once a minute."""

    #: how stale ``last_used_at`` may get before :meth:`find_api_token` writes it again
    API_TOKEN_TOUCH_EVERY = timedelta(minutes=1)

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
