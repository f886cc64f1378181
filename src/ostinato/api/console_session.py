"""The console's sign-in sessions.

**Sessions.** Posting a token's secret to ``/dashboard/login`` opens a session: a fresh random id
(32 bytes, URL-safe) goes to the browser in the ``ostinato_dashboard`` cookie (HttpOnly,
SameSite=Strict, Secure when the request came over HTTPS), and the store keeps
only its SHA-256, the token it belongs to and when it ends (``TokenStore.open_console_session``).
The secret itself is never kept, in the cookie or anywhere. Every request looks the session up
joined to its token's row: a session unused for 12 hours, 7 days old, signed out or whose token
was revoked is over at once, and its cookie is cleared.
"""

from __future__ import annotations

import secrets
from typing import Any

from ..store.tokens.interface import TokenStore
from .request_handling import ApiContext
from .tokens import hash_secret

#: the cookie holding the session's id
COOKIE = "ostinato_dashboard"
#: a session's longest life, and how long it lasts unused (the store's)
SESSION_LIFETIME = TokenStore.CONSOLE_SESSION_LIFETIME
SESSION_IDLE = TokenStore.CONSOLE_SESSION_IDLE


def new_session_id() -> str:
    """A fresh session id: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def open_session(ctx: ApiContext, token: dict[str, Any]) -> str:
    """A new session of ``token``, opened now; its id, for the cookie (only its hash is stored)."""
    session_id = new_session_id()
    ctx.store.open_console_session(hash_secret(session_id), token["id"], ctx.clock.now(), idle=SESSION_IDLE,
                                   lifetime=SESSION_LIFETIME)
    return session_id


def find_session(ctx: ApiContext, session_id: str) -> dict[str, Any] | None:
    """The live session whose id the cookie holds, with its token; None if it is over or unknown."""
    return ctx.store.find_console_session(hash_secret(session_id), ctx.clock.now(), idle=SESSION_IDLE)


def close_session(ctx: ApiContext, session_id: str) -> None:
    """Sign out: the session is deleted from the store."""
    ctx.store.close_console_session(hash_secret(session_id))


__all__ = ["COOKIE", "SESSION_IDLE", "SESSION_LIFETIME", "close_session", "find_session", "new_session_id",
           "open_session"]
