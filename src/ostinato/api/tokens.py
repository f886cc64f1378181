"""API tokens: secrets made with :func:`secrets.token_urlsafe`, shown once, stored as their
SHA-256 only; a token's scope (``read``, ``worker`` or ``admin``) is ``domain.access``'s."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from ..domain.access import SCOPES, allows, parse_scope


def new_secret() -> str:
    """A fresh secret: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    """What the store keeps of a secret, and looks a token up by: its SHA-256, hex."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def token_to_dict(token: dict[str, Any]) -> dict[str, Any]:
    """A token for display (never with its secret or hash), times as ISO 8601."""
    def iso(value: Any) -> str | None:
        return None if value is None else value.isoformat()

    return {"id": token["id"], "name": token["name"], "scope": token["scope"], "created_at": iso(token["created_at"]),
            "revoked_at": iso(token["revoked_at"]), "last_used_at": iso(token["last_used_at"]),
            "active": token["revoked_at"] is None}


__all__ = ["SCOPES", "allows", "hash_secret", "new_secret", "parse_scope", "token_to_dict"]
