"""How a request is handled, the same in every route: the application's context (store, settings,
clock), bearer-token authentication by scope, errors as JSON naming the field, paging, and the
checks of request bodies (bulk arrays, objects of known fields, times in range).

Errors all have one shape, ``{"error": {"field", "expected", "got", "message"}}``
(plus ``index`` when an item of a bulk request is at fault): 400 for bad input,
401 without a valid token, 403 with a token of too small a scope, 404 for a
missing object, 409 for a conflict.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..config import Settings
from ..domain.clock import Clock
from ..domain.errors import ValidationError
from ..store import Store
from .tokens import allows, hash_secret

T = TypeVar("T")

#: the most items a page may hold, and the default
MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
#: the most items a bulk request (listed origins, visit statuses) may carry
MAX_BULK = 10_000


@dataclass
class ApiContext:
    """The store (opened on first use when given as a factory), the settings and the clock."""

    store_or_factory: Store | Callable[[], Store]
    settings: Settings
    clock: Clock
    #: serve /metrics without a token
    open_metrics: bool = False
    _store: Store | None = None
    _owned: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def store(self) -> Store:
        if self._store is None:
            with self._lock:
                if self._store is None:
                    if isinstance(self.store_or_factory, Store):
                        self._store = self.store_or_factory
                    else:
                        self._store = self.store_or_factory()
                        self._owned = True
        return self._store

    def close(self) -> None:
        """Close the store if this context opened it."""
        if self._store is not None and self._owned:
            self._store.close()
            self._store = None


def context(request: Request) -> ApiContext:
    return request.app.state.ostinato


# -- errors -------------------------------------------------------------------------
class ApiError(Exception):
    """An error answered with ``status`` and the usual JSON body."""

    def __init__(self, status: int, message: str, *, field: str | None = None, expected: str | None = None,
                 got: Any = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.field, self.expected, self.got = status, message, field, expected, got
        self.headers = headers

    def body(self) -> dict[str, Any]:
        return {"error": {"field": self.field, "expected": self.expected, "got": json_safe(self.got), "message": self.message}}


_ITEM = re.compile(r"^item (\d+)$")


def validation_body(exc: ValidationError) -> dict[str, Any]:
    error: dict[str, Any] = {"field": exc.field, "expected": exc.expected, "got": json_safe(exc.got), "message": str(exc)}
    match = _ITEM.match(exc.record or "")
    if match:
        error["index"] = int(match.group(1))
    return {"error": error}


def json_safe(value: Any) -> Any:
    """``got`` as JSON can carry it: durations in seconds, times ISO, anything else as text."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


# -- authentication -----------------------------------------------------------------
bearer = HTTPBearer(auto_error=False, description="An API token: `ostinato token add NAME --scope read|worker|admin`.")


def authorize(request: Request, credentials: HTTPAuthorizationCredentials | None, needed: str) -> dict[str, Any]:
    """The token of the request's bearer header, if it has the ``needed`` scope (ApiError 401 or 403 if not);
    also ``request.state.token``."""
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise ApiError(401, "a bearer token is needed: Authorization: Bearer <secret>", field="authorization",
                       expected="Bearer <secret>", headers=challenge)
    ctx = context(request)
    token = ctx.store.find_api_token(hash_secret(credentials.credentials), now=ctx.clock.now())
    if token is None or token["revoked_at"] is not None:
        why = "unknown token" if token is None else f"token {token['name']!r} was revoked"
        raise ApiError(401, why, field="authorization", expected="a valid, unrevoked token", headers=challenge)
    if not allows(token["scope"], needed):
        raise ApiError(403, f"token {token['name']!r} has the {token['scope']} scope; this request needs {needed}",
                       field="authorization", expected=f"a token of scope {needed}", got=token["scope"])
    request.state.token = token
    return token


def read_access(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> dict[str, Any]:
    """A token of any scope (read, worker or admin)."""
    return authorize(request, credentials, "read")


def worker_access(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> dict[str, Any]:
    """A token of scope worker or admin."""
    return authorize(request, credentials, "worker")


def admin_access(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> dict[str, Any]:
    """A token of scope admin."""
    return authorize(request, credentials, "admin")


READ = [Depends(read_access)]
WORKER = [Depends(worker_access)]
ADMIN = [Depends(admin_access)]
#: the dependencies of each scope
BY_SCOPE = {"read": READ, "worker": WORKER, "admin": ADMIN}


# -- paging -------------------------------------------------------------------------
def page(items: Sequence[T], limit: int, key: Callable[[T], Any], render: Callable[[T], Any]) -> dict[str, Any]:
    """The first ``limit`` of ``items`` (fetched with one more, to know whether more follow) and the
    cursor of the next page: the key of the last item shown, or None at the end."""
    shown = list(items[:limit])
    more = len(items) > limit
    return {"items": [render(item) for item in shown], "next": str(key(shown[-1])) if more and shown else None}


def int_cursor(after: str | None) -> int:
    """A numeric cursor (an id) from a previous page's ``next``; 0 for the first page."""
    if after is None or after == "":
        return 0
    try:
        value = int(after)
    except ValueError:
        raise ValidationError("after", "a cursor from a previous page's next", after) from None
    if value < 0:
        raise ValidationError("after", "a cursor from a previous page's next", after)
    return value


def bulk(body: Any) -> list[Any]:
    """A bulk request's body: a JSON array of at most :data:`MAX_BULK` items."""
    if not isinstance(body, list):
        raise ValidationError("body", "a JSON array", type(body).__name__)
    if len(body) > MAX_BULK:
        raise ValidationError("body", f"at most {MAX_BULK} items per request", len(body))
    return body


def parse_items(body: Any, parse: Callable[[Any], T]) -> list[T]:
    """Every item of a bulk body read by ``parse``; the first bad one raises, located as ``item N``
    (0-based, as in the array), before anything is written."""
    parsed = []
    for index, item in enumerate(bulk(body)):
        try:
            parsed.append(parse(item))
        except ValidationError as exc:
            raise exc.at(f"item {index}") from None
    return parsed


#: the times a request may name: later ones overflow once an interval or a cooldown is added
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, tzinfo=UTC)


_MaybeTime = TypeVar("_MaybeTime", datetime, None)


def in_range(value: _MaybeTime, field: str) -> _MaybeTime:
    """``value`` if between :data:`EARLIEST` and :data:`LATEST` (or None); else a ValidationError."""
    if value is not None and not EARLIEST <= value <= LATEST:
        raise ValidationError(field, f"a time from {EARLIEST.date()} to {LATEST.date()}", value)
    return value


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def seconds(value: timedelta | None) -> float | None:
    return None if value is None else value.total_seconds()


def check_object(body: Any, known: set[str], what: str) -> dict[str, Any]:
    """A JSON object with only ``known`` fields (a typo is an error naming it)."""
    if not isinstance(body, dict):
        raise ValidationError("body", f"a JSON object ({what})", type(body).__name__)
    unknown = sorted(set(body) - known, key=lambda name: (name == "", name))  # a field with a name first
    if unknown:
        if not unknown[0]:
            raise ValidationError("body", f"fields with names, among {', '.join(sorted(known))}", "")
        raise ValidationError(unknown[0], f"one of the fields {', '.join(sorted(known))}", body[unknown[0]])
    return body
