"""The store verbs that travel over HTTP, and how their errors travel: shared by the API's
store router (``api/store_rpc.py``) and the client (:class:`~ostinato.remote.RemoteStore`).

Every public method of :class:`~ostinato.store.Store` is a verb, found by
introspection: its parameters and result are carried by the codec of their type
hints, so a verb added to the interface travels with no code here. A few are kept
off the wire on purpose (:data:`NOT_EXPOSED`, with the reason). A verb needs a
read token when its name says it only reads (:func:`scope_of`), an admin token
otherwise: a new verb is admin-only until it is named like a read.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any, Mapping

from ..domain import errors
from ..domain.errors import ConflictError, NotFoundError, OstinatoError, SchemaError, ValidationError
from ..store import Store
from .codec import UnionCodec, codec_for
from .codec_values import INT_MAX, Codec, IntCodec, fail

#: verbs of the interface that the API does not serve, and why
NOT_EXPOSED: dict[str, str] = {
    "init_schema": "the schema is created where the database is: `ostinato db init` with --db, on the server",
    "upgrade_schema": "migrations are applied where the database is: `ostinato db upgrade` with --db, on the server",
    "close": "closing concerns each client's own connections",
    "create_api_token": "API tokens are managed on the server only: `ostinato token add` with --db",
    "list_api_tokens": "API tokens are managed on the server only: `ostinato token list` with --db",
    "revoke_api_token": "API tokens are managed on the server only: `ostinato token revoke` with --db",
    "find_api_token": "API tokens are managed on the server only; the API checks them itself",
    "listen_schedule_changes": "no push over HTTP: the client answers False and schedulers poll",
    "check_schema": "computed on the client from schema_state",
    "pick_schedule": "computed on the client from pick_schedules",
    **{name: "an import writes where the database is: `ostinato import swh-scheduler` with --db, on the server"
       for name in ("import_task_types", "import_tasks", "import_task_runs", "import_listers",
                    "import_listed_origins", "import_visit_stats", "import_origin_metrics")},
}

#: names of verbs that only read, beyond those named get_, list_, search_, peek_, count_ or sample_
READ_VERBS = frozenset({"schema_state", "next_can_start_by", "in_flight_backend_ids", "archivable_tasks",
                        "task_activity"})
READ_PREFIXES = ("get_", "list_", "search_", "peek_", "count_", "sample_")
#: named like a read, but writes
WRITE_VERBS = frozenset({"get_or_create_lister"})
#: the most rows one call may ask for (``limit``, ``size``)
MAX_ROWS = 1_000_000
#: bounds of integer parameters, by name (a negative limit is an error on PostgreSQL, not an empty page)
PARAMETER_RANGES: dict[str, tuple[int, int]] = {
    "limit": (0, MAX_ROWS), "size": (0, MAX_ROWS), "after_id": (0, INT_MAX), "before_id": (0, INT_MAX),
}


def scope_of(name: str) -> str:
    """``read`` for a verb that only reads, ``admin`` for the others."""
    if name in WRITE_VERBS:
        return "admin"
    return "read" if name in READ_VERBS or name.startswith(READ_PREFIXES) else "admin"


@dataclass(frozen=True)
class Verb:
    """One store method as carried over HTTP: its parameters' codecs, its result's, its scope."""

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


def make_verb(name: str) -> Verb:
    """The verb of ``Store.<name>``; UnsupportedType when a parameter or the result cannot travel."""
    method = getattr(Store, name)
    hints = typing.get_type_hints(method)
    signature = inspect.signature(method)
    parameters = list(signature.parameters.values())[1:]  # without self
    codecs = {p.name: _parameter_codec(p.name, hints[p.name]) for p in parameters}
    required = frozenset(p.name for p in parameters if p.default is inspect.Parameter.empty)
    summary = (inspect.getdoc(method) or name.replace("_", " ")).split("\n\n")[0].replace("\n", " ")
    return Verb(name, scope_of(name), signature.replace(parameters=parameters), codecs, required,
                codec_for(hints.get("return", Any)), summary)


def _candidate_names() -> list[str]:
    """The public methods of the interface not kept off the wire."""
    return sorted(name for name, value in inspect.getmembers(Store, inspect.isfunction)
                  if not name.startswith("_") and name not in NOT_EXPOSED)


@cache
def store_verbs() -> dict[str, Verb]:
    """Every verb served, by name. A verb whose types cannot travel is left out here and listed by
    :func:`unsupported_verbs` (a test requires that list to be empty)."""
    verbs = {}
    for name in _candidate_names():
        try:
            verbs[name] = make_verb(name)
        except TypeError:
            continue
    return verbs


def unsupported_verbs() -> dict[str, str]:
    """Verbs neither served nor deliberately kept off the wire, with why."""
    missing = {}
    for name in sorted(set(_candidate_names()) - store_verbs().keys()):
        try:
            make_verb(name)
        except TypeError as exc:
            missing[name] = str(exc)
    return missing


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


__all__ = ["NOT_EXPOSED", "Verb", "error_from_body", "error_status_and_body", "scope_of", "store_verbs",
           "unsupported_verbs"]
