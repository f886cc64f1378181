"""The console's sign-in: its sessions and the limit on failed sign-ins.

**Sessions.** Posting a token's secret to ``/dashboard/login`` opens a session: a fresh random id
(32 bytes, URL-safe) goes to the browser in the ``ostinato_dashboard`` cookie (HttpOnly,
SameSite=Strict, Secure when the request came over HTTPS), and the store keeps
only its SHA-256, the token it belongs to and when it ends (``TokenStore.open_console_session``).
The secret itself is never kept, in the cookie or anywhere. Every request looks the session up
joined to its token's row: a session unused for 12 hours, 7 days old, signed out or whose token
was revoked is over at once, and its cookie is cleared.

**Failed sign-ins** are limited per client address (:class:`SignInLimiter`): after
:data:`MAX_FAILURES` within :data:`FAILURE_WINDOW`, an address's sign-ins are refused (429, with
``Retry-After``) until enough of its failures leave the window, without the secret being looked at;
each refusal is logged in one line naming the address, never the secret. A sign-in that succeeds
does not wipe the address's failures (a holder of one token could otherwise guess at others'). The
count lives in the API process, in memory: each process behind a load balancer counts its own, and
a restart forgets it. Behind a proxy, the address is the client's only if the proxy is trusted
(:mod:`ostinato.api.proxies`); else every client counts as the proxy.
"""

from __future__ import annotations

import logging
import math
import secrets
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fastapi import Request

from ...store.tokens.interface import TokenStore
from ..request_handling import ApiContext
from ..tokens import hash_secret

log = logging.getLogger(__name__)

#: the cookie holding the session's id
COOKIE = "ostinato_dashboard"
#: a session's longest life, and how long it lasts unused (the store's)
SESSION_LIFETIME = TokenStore.CONSOLE_SESSION_LIFETIME
SESSION_IDLE = TokenStore.CONSOLE_SESSION_IDLE
#: failed sign-ins an address may make within FAILURE_WINDOW before its sign-ins are refused
MAX_FAILURES = 10
FAILURE_WINDOW = timedelta(minutes=5)
#: the most addresses whose failures are remembered (the longest quiet forgotten first)
MAX_ADDRESSES = 10_000


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


def client_address(request: Request) -> str:
    """The address a request came from (a trusted proxy's client, see :mod:`ostinato.api.proxies`)."""
    return request.client.host if request.client is not None else "unknown"


@dataclass
class SignInLimiter:
    """Failed sign-ins per client address over a sliding window (see the module's docstring).

    Times come from the caller (the app's clock); thread-safe, as sign-ins are checked in a thread pool."""

    max_failures: int = MAX_FAILURES
    window: timedelta = FAILURE_WINDOW
    max_addresses: int = MAX_ADDRESSES
    _failures: OrderedDict[str, deque[datetime]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def attempt(self, address: str, now: datetime) -> int:
        """A sign-in of ``address`` at ``now``: the seconds until it may try again (nothing counted), or 0 and
        the attempt counted as a failure until :meth:`succeeded` says otherwise (so that attempts made at
        once cannot all slip under the limit)."""
        with self._lock:
            times = self._recent(address, now)
            if times is not None and len(times) >= self.max_failures:
                wait = (times[-self.max_failures] + self.window - now).total_seconds()
                return max(1, math.ceil(wait))
            if times is None:
                times = self._failures[address] = deque()
                while len(self._failures) > self.max_addresses:
                    self._failures.popitem(last=False)
            times.append(now)
            self._failures.move_to_end(address)
            return 0

    def succeeded(self, address: str, at: datetime) -> None:
        """The attempt of ``address`` made at ``at`` was not a failure: it no longer counts."""
        with self._lock:
            times = self._failures.get(address)
            if times is not None and at in times:
                times.remove(at)
                if not times:
                    del self._failures[address]

    def _recent(self, address: str, now: datetime) -> deque[datetime] | None:
        """The address's failures within the window (older ones dropped), or None if it has none."""
        times = self._failures.get(address)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[address]
            return None
        return times


def sign_in_limiter(request: Request) -> SignInLimiter:
    """The application's limiter (one per API process, made by ``create_app``)."""
    return request.app.state.sign_in_limiter


def refusal(request: Request, wait: int) -> str:
    """The refusal's message, for the page; logged in one line that names the address, never a secret."""
    limiter = sign_in_limiter(request)
    log.warning("console sign-in refused for %s: %d failed sign-ins within %s; next try in %d s",
                client_address(request), limiter.max_failures, _span(limiter.window), wait)
    return (f"too many failed sign-ins from this address ({limiter.max_failures} within {_span(limiter.window)}): "
            f"try again in {wait} s")


def _span(span: timedelta) -> str:
    minutes = span.total_seconds() / 60
    return f"{minutes:g} min" if minutes >= 1 else f"{span.total_seconds():g} s"


__all__ = ["COOKIE", "FAILURE_WINDOW", "MAX_FAILURES", "SESSION_IDLE", "SESSION_LIFETIME", "SignInLimiter",
           "client_address", "close_session", "find_session", "new_session_id", "open_session", "refusal",
           "sign_in_limiter"]
