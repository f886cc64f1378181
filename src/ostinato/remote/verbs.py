"""The store verbs that travel over HTTP, and how their errors travel: shared by the API's
store router (``api/store_rpc.py``) and the client (:class:`~ostinato.remote.RemoteStore`).

Which verbs are served is a reviewed list per role of the store (``REMOTE_SCOPES`` in ``store/<role>/interface.py``),
each verb with the token scope it needs (``domain.access``): ``read`` for a verb that only reads,
``worker`` for what the machines write, ``admin`` for an operator's action. Every verb of a role is either in its role's list or in the role's list of
what is deliberately not served (``NOT_REMOTE``), with why (a test requires it): a verb added to a role is not
on the wire until someone decides how, and with which scope. A served verb's parameters and
result are carried by the codec of its type hints, so nothing else here changes for it.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..domain import access, errors
from ..domain.errors import ConflictError, NotFoundError, OstinatoError, SchemaError, ValidationError
from ..store.interface import ROLES
from .codec import UnionCodec, codec_for
from .codec_values import INT_MAX, Codec, IntCodec, fail

#: the token scopes a served verb may need (``domain.access``, see docs/reference/security.md)
READ, WORKER, ADMIN = access.READ, access.WORKER, access.ADMIN

@dataclass(frozen=True)
class RoleVerbs:
    """One role's reviewed lists: the verbs served with their scopes, the verbs not served with why."""

    role: type
    served: Mapping[str, str]
    not_served: Mapping[str, str]


#: every role's lists (``REMOTE_SCOPES`` and ``NOT_REMOTE`` beside the role's verbs, in its
#: ``interface.py``), in the order of ``store.interface.ROLES`` (the order the API lists the verbs)
ROLE_VERBS: tuple[RoleVerbs, ...] = tuple(
    RoleVerbs(role, sys.modules[role.__module__].REMOTE_SCOPES, sys.modules[role.__module__].NOT_REMOTE)
    for role in ROLES
)
#: the verbs the API does not serve, of every role, and why
NOT_EXPOSED: dict[str, str] = {name: why for entry in ROLE_VERBS for name, why in entry.not_served.items()}
#: the most rows one call may ask for (``limit``, ``size``)
MAX_ROWS = 1_000_000
#: bounds of integer parameters, by name (a negative limit is an error on PostgreSQL, not an empty page)
PARAMETER_RANGES: dict[str, tuple[int, int]] = {
    "limit": (0, MAX_ROWS), "size": (0, MAX_ROWS), "after_id": (0, INT_MAX), "before_id": (0, INT_MAX),
}


def scope_of(name: str) -> str:
    """The scope a served verb needs (its role's list says it); KeyError for a verb not served."""
    for entry in ROLE_VERBS:
        if name in entry.served:
            return entry.served[name]
    raise KeyError(f"{name} is not a served store verb (see the lists in ostinato.remote.verbs)")


@dataclass(frozen=True)
class Verb:
    """One store method as carried over HTTP: its role, its parameters' codecs, its result's, its scope."""

    role: type
    name: str
    scope: str
    signature: inspect.Signature
    parameters: Mapping[str, Codec]
    required: frozenset[str]
    result: Codec
    summary: str

    @property
    def path(self) -> str:
        return f"/api/v1/store/{self.name}"

    def encode_arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A call's arguments as the request body (only those given: the server has the same defaults)."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.name}(): {exc}") from None
        return {name: self.parameters[name].encode(value, name) for name, value in bound.arguments.items()}

    def decode_arguments(self, body: Any) -> dict[str, Any]:
        """The keyword arguments of a request body; ValidationError naming the parameter or field at fault."""
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise fail("body", f"a JSON object of the arguments of {self.name}", type(body).__name__)
        unknown = sorted(body.keys() - self.parameters.keys())
        if unknown:
            expected = ", ".join(self.parameters) or "no arguments"
            raise fail(unknown[0], f"one of the arguments of {self.name}: {expected}", body[unknown[0]])
        missing = sorted(self.required - body.keys())
        if missing:
            raise fail(missing[0], f"a value (an argument {self.name} needs)", None)
        return {name: self.parameters[name].decode(value, name) for name, value in body.items()}

    def request_schema(self) -> dict[str, Any]:
        return {"type": "object", "title": f"{self.name} arguments",
                "properties": {name: codec.schema() for name, codec in self.parameters.items()},
                "required": sorted(self.required), "additionalProperties": False}

    def response_schema(self) -> dict[str, Any]:
        return {"type": "object", "title": f"{self.name} result", "properties": {"result": self.result.schema()},
                "required": ["result"]}


def _parameter_codec(name: str, hint: Any) -> Codec:
    codec = codec_for(hint)
    if name in PARAMETER_RANGES:
        bounded = IntCodec(*PARAMETER_RANGES[name])
        if isinstance(codec, IntCodec):
            return bounded
        if isinstance(codec, UnionCodec) and any(isinstance(m, IntCodec) for m in codec.members):
            return UnionCodec([bounded if isinstance(m, IntCodec) else m for m in codec.members])
    return codec


def make_verb(role: type, name: str, scope: str) -> Verb:
    """The verb of ``role.<name>`` needing ``scope``; UnsupportedType when a parameter or the result cannot travel."""
    method = getattr(role, name)
    hints = typing.get_type_hints(method)
    signature = inspect.signature(method)
    parameters = list(signature.parameters.values())[1:]  # without self
    codecs = {p.name: _parameter_codec(p.name, hints[p.name]) for p in parameters}
    required = frozenset(p.name for p in parameters if p.default is inspect.Parameter.empty)
    summary = (inspect.getdoc(method) or name.replace("_", " ")).split("\n\n")[0].replace("\n", " ")
    return Verb(role, name, scope, signature.replace(parameters=parameters), codecs, required,
                codec_for(hints.get("return", Any)), summary)


@cache
def store_verbs() -> dict[str, Verb]:
    """Every verb served, by name, role after role. A listed verb whose types cannot travel is a
    TypeError naming it: the list is wrong, not the caller."""
    verbs = {}
    for entry in ROLE_VERBS:
        for name, scope in sorted(entry.served.items()):
            if scope not in access.SCOPES:
                raise TypeError(f"{entry.role.__name__}.{name}: the scope {scope!r} is none of {access.SCOPES}")
            if not callable(getattr(entry.role, name, None)):
                raise TypeError(f"{name} is listed as served by {entry.role.__name__}, which has no such verb")
            try:
                verbs[name] = make_verb(entry.role, name, scope)
            except TypeError as exc:
                raise TypeError(f"{entry.role.__name__}.{name} is listed as served but cannot travel: {exc}") from exc
    return verbs


# -- errors on the wire ----------------------------------------------------------------
def _plain(value: Any) -> Any:
    """``got`` as JSON can carry it."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "total_seconds"):
        return value.total_seconds()
    return str(value)


def error_status_and_body(exc: OstinatoError) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON body of an error a store raised on purpose (the API's usual
    ``{"error": {field, expected, got, message}}``, plus what rebuilds the exception)."""
    # the error's kind as the domain names it (a codec's CodecError is a ValidationError)
    kind = next(c.__name__ for c in type(exc).__mro__ if getattr(errors, c.__name__, None) is c)
    error: dict[str, Any] = {"type": kind, "field": None, "expected": None, "got": None, "message": str(exc)}
    status = 400
    if isinstance(exc, ValidationError):
        error.update(field=exc.field, expected=exc.expected, got=_plain(exc.got), record=exc.record)
    elif isinstance(exc, NotFoundError):
        error.update(kind=exc.kind, key=_plain(exc.key), expected=f"an existing {exc.kind}", got=_plain(exc.key))
        status = 404
    elif isinstance(exc, ConflictError):
        status = 409
    elif isinstance(exc, SchemaError):
        status = 503
    return status, {"error": error}


def error_from_body(error: Mapping[str, Any]) -> OstinatoError | None:
    """The exception an error body describes, as the store raised it; None if it names none."""
    kind = error.get("type")
    message = str(error.get("message") or "")
    if kind == "ValidationError":
        return ValidationError(str(error.get("field")), str(error.get("expected")), error.get("got"),
                               record=error.get("record"))
    if kind == "NotFoundError":
        return NotFoundError(str(error.get("kind")), error.get("key"))
    found = getattr(errors, kind, None) if isinstance(kind, str) else None
    if isinstance(found, type) and issubclass(found, OstinatoError) and found not in (ValidationError, NotFoundError):
        return found(message)
    return None


__all__ = ["ADMIN", "NOT_EXPOSED", "READ", "WORKER", "ROLE_VERBS", "RoleVerbs", "Verb", "error_from_body",
           "error_status_and_body", "scope_of", "store_verbs"]
