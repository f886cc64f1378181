"""The body encodings of swh-scheduler's RPC protocol (see docs/reference/swh-compat.md).

Bodies are msgpack (``application/x-msgpack``, what the protocol's client sends
and asks for) or JSON (``application/json``). Values the formats lack travel as
a two-key map ``{"swhtype": NAME, "d": PAYLOAD}`` (in msgpack the two keys are
byte strings):

============================  ==================================================
``uuid``                      the UUID's text
``timedelta``                 ``{"days", "seconds", "microseconds"}``
``datetime``                  ISO 8601 text (JSON; msgpack uses its own timestamp type)
``bytes``                     base 85 text (JSON; msgpack has bytes)
``scheduler_model``           a model object: its fields, and ``__type__`` naming it
``last_visit_status``         the enum's value
``paged_result``              ``{"results", "next_page_token"}``
============================  ==================================================

Integers beyond 64 bits are msgpack extension 1 (positive) or 2 (negative), their
magnitude in big-endian bytes. A map with those two keys and an unknown name is
left as it is. Decoding never builds anything else than these plain values
(:class:`Model` for model objects), so a body cannot make the server run code.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any
from uuid import UUID

import msgpack

from ...domain.durations import parse_iso_time
from ...domain.errors import ValidationError

MSGPACK = "application/x-msgpack"
JSON = "application/json"

_EXT_BIG_POSITIVE = 1
_EXT_BIG_NEGATIVE = 2
_TAG_KEYS = frozenset({"swhtype", "d"})
_ABSENT = object()


@dataclass
class Model:
    """A model object of the protocol: its class name and its fields as decoded."""

    type: str
    fields: dict[str, Any] = field(default_factory=dict)


class VisitStatusValue:
    """A ``LastVisitStatus`` enum value: sent tagged, so the client rebuilds the enum (not a ``str``: msgpack
    would write one as plain text, without asking :func:`_msgpack_default`)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return self.value == (other.value if isinstance(other, VisitStatusValue) else other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"VisitStatusValue({self.value!r})"


@dataclass
class Page:
    """A page of results and the token of the next one (``PagedResult``)."""

    results: list[Any]
    next_page_token: Any = None


class WireError(ValidationError):
    """A body that cannot be read: names ``body`` or the field at fault."""


def _timedelta(payload: Any) -> timedelta:
    if not isinstance(payload, dict) or not set(payload) <= {"days", "seconds", "microseconds"}:
        raise WireError("timedelta", "an object of days, seconds and microseconds", payload)
    try:
        return timedelta(**{k: v for k, v in payload.items()})
    except (TypeError, OverflowError):
        raise WireError("timedelta", "whole days, seconds and microseconds", payload) from None


@lru_cache(maxsize=4096)
def _uuid(payload: Any) -> UUID:
    """(cached: a batch names its few listers once per item)"""
    try:
        return UUID(payload)
    except (TypeError, ValueError, AttributeError):
        raise WireError("uuid", "a UUID's text", payload) from None


def _datetime(payload: Any) -> datetime:
    if not isinstance(payload, str):
        raise WireError("datetime", "an ISO 8601 time with a zone", payload)
    return parse_iso_time(payload, "datetime")


def _bytes(payload: Any) -> bytes:
    try:
        return base64.b85decode(payload)
    except (TypeError, ValueError):
        raise WireError("bytes", "base 85 text", payload) from None


def _model(payload: Any) -> Model:
    # the payload is a map the decoder has just made: its fields are taken as they are
    if not isinstance(payload, dict) or not isinstance(payload.get("__type__"), str):
        raise WireError("scheduler_model", "an object with __type__ naming the model", payload)
    name = payload.pop("__type__")
    return Model(name, payload)


def _visit_status(payload: Any) -> str:
    """The enum's value, as text (the field's reader checks it is one of the statuses)."""
    if not isinstance(payload, str):
        raise WireError("last_visit_status", "successful, failed or not_found", payload)
    return payload


def _page(payload: Any) -> Page:
    if not isinstance(payload, dict):
        raise WireError("paged_result", "an object of results and next_page_token", payload)
    return Page(list(payload.get("results") or []), payload.get("next_page_token"))


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "uuid": _uuid,
    "timedelta": _timedelta,
    "datetime": _datetime,
    "scheduler_model": _model,
    "last_visit_status": _visit_status,
    "paged_result": _page,
}
_JSON_DECODERS: dict[str, Callable[[Any], Any]] = {**_DECODERS, "bytes": _bytes}


# -- msgpack ---------------------------------------------------------------------------
def _ext_hook(code: int, data: bytes) -> Any:
    if code == _EXT_BIG_POSITIVE:
        return int.from_bytes(data, "big")
    if code == _EXT_BIG_NEGATIVE:
        return -int.from_bytes(data, "big")
    raise WireError("body", "msgpack extension 1 or 2 (big integers)", code)


def _msgpack_object(obj: dict[Any, Any]) -> Any:
    # called for every map of a body: the common case (not a tag) decided in a test or two
    if len(obj) != 2:
        return obj
    if b"swhtype" in obj:
        tag, payload = obj[b"swhtype"], obj.get(b"d", _ABSENT)
    elif "swhtype" in obj:
        tag, payload = obj["swhtype"], obj.get("d", _ABSENT)
    else:
        return obj
    decoder = _DECODERS.get(tag) if isinstance(tag, str) and payload is not _ABSENT else None
    return obj if decoder is None else decoder(payload)


def loads_msgpack(raw: bytes) -> Any:
    try:
        return msgpack.unpackb(raw, raw=False, strict_map_key=False, timestamp=3, object_hook=_msgpack_object,
                               ext_hook=_ext_hook)
    except WireError:
        raise
    except (ValueError, TypeError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        raise WireError("body", "a msgpack document", f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _tagged(name: str, payload: Any) -> dict[bytes, Any]:
    return {b"swhtype": name, b"d": payload}


def _msgpack_default(value: Any) -> Any:
    if isinstance(value, int):  # beyond 64 bits: packb could not write it
        code = _EXT_BIG_POSITIVE if value > 0 else _EXT_BIG_NEGATIVE
        magnitude = abs(value)
        return msgpack.ExtType(code, magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "big"))
    return _encode_special(value, _tagged)


def _encode_special(value: Any, tag: Callable[[str, Any], Any]) -> Any:
    if isinstance(value, Model):
        return tag("scheduler_model", {**value.fields, "__type__": value.type})
    if isinstance(value, VisitStatusValue):
        return tag("last_visit_status", value.value)
    if isinstance(value, UUID):
        return tag("uuid", str(value))
    if isinstance(value, timedelta):
        return tag("timedelta", {"days": value.days, "seconds": value.seconds, "microseconds": value.microseconds})
    if isinstance(value, Page):
        return tag("paged_result", {"results": value.results, "next_page_token": value.next_page_token})
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"cannot send a {type(value).__name__} in the swh protocol")


def dumps_msgpack(value: Any) -> bytes:
    """msgpack writes plain values itself and asks :func:`_msgpack_default` for the tagged ones (a time
    without a zone is refused: a ValueError)."""
    return msgpack.packb(value, use_bin_type=True, datetime=True, default=_msgpack_default)


# -- JSON ------------------------------------------------------------------------------
def _json_object(obj: dict[str, Any]) -> Any:
    if len(obj) == 2 and set(obj) == _TAG_KEYS:
        decoder = _JSON_DECODERS.get(obj["swhtype"]) if isinstance(obj["swhtype"], str) else None
        if decoder is not None:
            return decoder(obj["d"])
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"), object_hook=_json_object, parse_constant=_reject_constant)
    except WireError:
        raise
    except (ValueError, RecursionError) as exc:
        raise WireError("body", "a JSON document in UTF-8", str(exc)[:200]) from None


def _json_tag(name: str, payload: Any) -> dict[str, Any]:
    return {"swhtype": name, "d": payload}


def _prepare_json(value: Any) -> Any:
    if isinstance(value, VisitStatusValue):
        return _json_tag("last_visit_status", value.value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise TypeError("a time without a zone cannot be sent")
        return _json_tag("datetime", value.isoformat())
    if isinstance(value, bytes):
        return _json_tag("bytes", base64.b85encode(value).decode("ascii"))
    if isinstance(value, Model):
        return _json_tag("scheduler_model", {k: _prepare_json(v) for k, v in {**value.fields, "__type__": value.type}.items()})
    if isinstance(value, Page):
        return _json_tag("paged_result", {"results": _prepare_json(value.results),
                                          "next_page_token": _prepare_json(value.next_page_token)})
    if isinstance(value, dict):
        return {k: _prepare_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_prepare_json(v) for v in value]
    if isinstance(value, (UUID, timedelta)):
        return _encode_special(value, _json_tag)
    return value


def dumps_json(value: Any) -> bytes:
    return json.dumps(_prepare_json(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def loads(raw: bytes, content_type: str) -> Any:
    """A request body by its content type (an empty body is no arguments)."""
    if not raw:
        return {}
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == MSGPACK:
        return loads_msgpack(raw)
    if kind == JSON:
        return loads_json(raw)
    raise WireError("content-type", f"{MSGPACK} or {JSON}", content_type or None)


def dumps(value: Any, accept: str) -> tuple[bytes, str]:
    """An answer in the format the request asked for (msgpack unless it asked for JSON only)."""
    wanted = [part.split(";", 1)[0].strip().lower() for part in (accept or "").split(",")]
    if JSON in wanted and MSGPACK not in wanted:
        return dumps_json(value), JSON
    return dumps_msgpack(value), MSGPACK


def utc(value: datetime) -> datetime:
    """A zoned time in UTC (msgpack carries times as UTC timestamps)."""
    return value.astimezone(UTC)
