""":class:`RemoteStore`: the store interface spoken over Ostinato's HTTP API (``--url``).

Each served verb (the reviewed lists of ``remote.verbs``) is one ``POST /api/v1/store/<verb>``
with a bearer token, through one pooled, thread-safe httpx client; a verb not served is
answered here (:data:`ANSWERED_HERE`) or refused with a :class:`RemoteError` naming it. Results come back as the same domain objects,
and the errors a store raises on purpose (ValidationError naming the same field,
NotFoundError, ConflictError, SchemaError) as the same exceptions, so services and
commands cannot tell a remote store from a local one. What only the client can
fail at has its own errors: :class:`RemoteUnavailable` (the API cannot be reached,
naming its URL), :class:`RemoteAuthError` (no valid token, or too small a scope),
:class:`RemoteError` (anything else the API answered).
"""

from __future__ import annotations

import abc
import functools
import json
import re
import socket
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from ..domain.errors import ConflictError, OstinatoError, SchemaError
from ..store import Store
from ..store.interface import SchemaState
from .verbs import NOT_EXPOSED, ROLE_VERBS, Verb, error_from_body, store_verbs

#: seconds to wait for a connection, and for an answer (a full recount of origin metrics can take a while)
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0
_URL = re.compile(r"^https?://[^\s/?#]+(/[^\s?#]*)?$")


class RemoteError(OstinatoError):
    """The API answered something other than a store's result or error."""


class RemoteUnavailable(RemoteError):
    """The API could not be reached (refused, timed out, name unknown…)."""


class RemoteAuthError(RemoteError):
    """The API refused the token: none, unknown, revoked (401), or too small a scope (403)."""


def _loads(content: bytes) -> Any:
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return json.loads(content)  # integers beyond 64 bits, which orjson refuses


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits (in task arguments)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class RemoteStore(Store):
    """A store whose data lives behind an Ostinato API at ``url`` (``http://host:port``)."""

    dialect = "remote"

    def __init__(self, url: str, token: str, *, timeout: float = READ_TIMEOUT, connect_timeout: float = CONNECT_TIMEOUT,
                 max_connections: int = 32, transport: httpx.BaseTransport | None = None):
        from ..domain.errors import ValidationError

        if not isinstance(url, str) or not _URL.match(url.strip()):
            raise ValidationError("url", "the API's base URL, http://HOST:PORT or https://HOST[:PORT][/PREFIX]", url)
        if not isinstance(token, str) or not token.strip():
            raise ValidationError("token", "an API token's secret (`ostinato token add NAME --scope admin` on the "
                                  "server; OSTINATO_TOKEN or --token)", None)
        self.url = url.strip().rstrip("/")
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        if transport is None:
            # headers and body leave in two writes: without TCP_NODELAY, Nagle holds the body back until the
            # server's delayed ACK (some 40 ms a call)
            transport = httpx.HTTPTransport(limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self._client = httpx.Client(
            base_url=self.url, transport=transport,
            headers={"Authorization": f"Bearer {token.strip()}", "Content-Type": "application/json",
                     "Accept": "application/json", "User-Agent": "ostinato-remote-store"},
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
        )

    def __repr__(self) -> str:
        return f"RemoteStore({self.url!r})"

    # -- the wire ---------------------------------------------------------------------
    def call(self, verb: Verb, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run ``verb`` on the server; its result decoded, or the store's error raised."""
        body = _dumps(verb.encode_arguments(args, kwargs))
        where = f"{self.url}{verb.path}"
        try:
            response = self._client.post(verb.path, content=body)
        except httpx.TimeoutException as exc:
            raise RemoteUnavailable(f"the Ostinato API at {self.url} did not answer {verb.name} in time "
                                    f"({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise RemoteUnavailable(f"cannot reach the Ostinato API at {self.url}: {exc or type(exc).__name__}") from exc
        try:
            answer = _loads(response.content)
        except ValueError:
            answer = None
        if response.status_code == 200 and isinstance(answer, dict) and "result" in answer:
            return verb.result.decode(answer["result"], "result")
        error = answer.get("error") if isinstance(answer, dict) else None
        if not isinstance(error, dict):
            raise RemoteError(f"{where} answered {response.status_code} without an Ostinato answer "
                              f"(is {self.url} an Ostinato API?): {response.text[:200]!r}")
        message = error.get("message") or response.reason_phrase
        if response.status_code in (401, 403):
            raise RemoteAuthError(f"the Ostinato API at {self.url} refused the token: {message}")
        rebuilt = error_from_body(error)
        if rebuilt is not None:
            raise rebuilt
        if response.status_code == 404:
            raise RemoteError(f"the Ostinato API at {self.url} has no store verb {verb.name} (an older Ostinato?)")
        raise RemoteError(f"{where} failed ({response.status_code}): {message}")

    def close(self) -> None:
        self._client.close()

    # -- verbs kept off the wire --------------------------------------------------------
    def init_schema(self) -> SchemaState:
        """An existing schema is a ConflictError, as on a local store; creating one is done on the server."""
        state = self.schema_state()
        if state.current is not None:
            raise ConflictError(f"the database behind {self.url} already has an Ostinato schema "
                                f"(version {state.current})")
        raise SchemaError(f"the database behind {self.url} has no schema: {NOT_EXPOSED['init_schema']}")

    def upgrade_schema(self) -> list[int]:
        """Nothing to apply is answered, as on a local store; migrations are applied on the server."""
        state = self.schema_state()
        if state.current is not None and state.current == state.latest:
            return []
        self.check_schema()
        raise SchemaError(f"{NOT_EXPOSED['upgrade_schema']} ({self.url})")  # pragma: no cover - check_schema raised

    # check_schema and pick_schedule: the roles' own, computed from schema_state and pick_schedules;
    # listen_schedule_changes: the role's own, False (schedulers poll)


#: the verbs the API does not serve that the client answers itself (above, or the role's own method
#: over served verbs); every other verb not served raises a RemoteError naming it
ANSWERED_HERE = frozenset({"init_schema", "upgrade_schema", "close", "check_schema", "pick_schedule",
                           "listen_schedule_changes"})


def _not_served(role: type, name: str, why: str) -> Callable[..., Any]:
    @functools.wraps(getattr(role, name))
    def method(self: RemoteStore, *args: Any, **kwargs: Any) -> Any:
        raise RemoteError(f"{name} is not served by the Ostinato API at {self.url}: {why}")

    method.__isabstractmethod__ = False  # type: ignore[attr-defined]  # a function takes any attribute
    return method


def _remote_method(verb: Verb) -> Callable[..., Any]:
    @functools.wraps(getattr(verb.role, verb.name))
    def method(self: RemoteStore, *args: Any, **kwargs: Any) -> Any:
        return self.call(verb, args, kwargs)

    method.__isabstractmethod__ = False  # type: ignore[attr-defined]  # a function takes any attribute
    method.verb = verb  # type: ignore[attr-defined]  # a function takes any attribute
    return method


for _entry in ROLE_VERBS:
    for _name, _why in _entry.not_served.items():
        if _name not in ANSWERED_HERE:
            setattr(RemoteStore, _name, _not_served(_entry.role, _name, _why))
for _name, _verb in store_verbs().items():
    setattr(RemoteStore, _name, _remote_method(_verb))
abc.update_abstractmethods(RemoteStore)  # type: ignore[type-abstract]  # concrete from here on: every verb is set

__all__ = ["ANSWERED_HERE", "RemoteAuthError", "RemoteError", "RemoteStore", "RemoteUnavailable"]
