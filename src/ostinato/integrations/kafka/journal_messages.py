"""Decoding the journal's visit-status messages: the bytes of one Kafka message → a VisitStatus.

Two formats, told apart per message (a JSON object starts with ``{``; anything
else is read as msgpack):

- **JSON** (UTF-8), in the shape :func:`ostinato.domain.visits.parse_visit_status`
  reads: ``origin``, ``visit``, ``type``, ``status``, ``date`` (ISO 8601 with a
  zone), ``snapshot`` (hex or null);
- **msgpack**, as the Software Heritage archive writes its
  ``swh.journal.objects.origin_visit_status`` topic (``swh.journal.serializers``):
  keys are text or bytes, ``snapshot`` is 20 raw bytes or nil, integers too
  long for msgpack are the extension types 1 and 2 (positive and negative
  big-endian magnitudes), and ``date`` is any of the encodings the archive
  has used:

  * the msgpack Timestamp extension (type -1), what ``value_to_kafka`` writes
    today (``msgpack.packb(..., datetime=True)``);
  * ``{"swhtype": "datetime", "d": "<ISO 8601>"}``, which ``kafka_to_value``
    still reads for backward compatibility;
  * ``{"__datetime__": True, "s": "<ISO 8601>"}``, the older
    ``swh.core.api.serializers.msgpack_dumps`` form.

  The archive's messages carry the visit type in ``type``; older ones have no
  ``type`` and are bad messages (they cannot say which visit stats they are for).

What a visit saw of its changes (``newest_change_at``, ``change_times``: see
``domain.visit_changes``), where a message has it, is read in any of the forms
``date`` may take. Unlike the other fields, a bad one is **dropped** and the
status kept (the archive's statuses must not be lost to a loader's wrong clock):
:func:`decode_visit_status` tells ``on_drop`` which field it dropped and why.
Old messages, without them, read as before.

Every other failure is a :class:`~ostinato.domain.errors.ValidationError` naming the
field at fault (``record`` when the message cannot be decoded at all): a journal
client counts and skips such a message, it never stops on one. What a store
could never write (a store error would be retried forever) is refused by
``parse_visit_status`` itself, with the rules of ``domain.limits`` that every
other entry point applies too: text with NUL characters, an origin URL longer
than :data:`MAX_ORIGIN_BYTES` (an index row PostgreSQL refuses), a visit type
longer than :data:`MAX_TYPE_BYTES`, a date outside [:data:`MIN_DATE`,
:data:`MAX_DATE`) (next-visit arithmetic would overflow), a visit number
beyond 64 bits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgpack
import orjson

from ...domain import limits
from ...domain.durations import parse_iso_time
from ...domain.errors import ValidationError
from ...domain.visit_changes import CHANGE_FIELDS
from ...domain.visits import VisitStatus, parse_visit_status

__all__ = [
    "DEFAULT_TOPIC", "MAX_DATE", "MAX_ORIGIN_BYTES", "MAX_TYPE_BYTES", "MIN_DATE",
    "decode_message", "decode_visit_status", "encode_json", "encode_msgpack",
]

#: the archive's topic of visit statuses
DEFAULT_TOPIC: Final = "swh.journal.objects.origin_visit_status"
#: the limits of ``domain.limits``, under the names this module has always exported
MAX_ORIGIN_BYTES: Final = limits.MAX_URL_BYTES
MAX_TYPE_BYTES: Final = limits.MAX_TYPE_BYTES
MAX_VISIT: Final = limits.MAX_WHOLE
MIN_DATE: Final = limits.MIN_TIME
MAX_DATE: Final = limits.MAX_TIME

_FIELDS: Final = ("origin", "visit", "type", "status", "date", "snapshot", "changes", *CHANGE_FIELDS)
_TEXT_FIELDS: Final = ("origin", "type", "status")
_JSON_START: Final = frozenset(b" \t\r\n")
_EXCERPT_BYTES: Final = 80
# swh.journal.serializers.MsgpackExtTypeCodes
_EXT_LONG_INT: Final = 1
_EXT_LONG_NEG_INT: Final = 2
_DATE_FORMS: Final = ("an ISO 8601 time with a zone, a msgpack timestamp, "
                      "or {swhtype: datetime, d: ISO} / {__datetime__: true, s: ISO}")


def decode_visit_status(value: bytes | bytearray | memoryview | None,
                        on_drop: Callable[[str, ValidationError], None] | None = None) -> VisitStatus:
    """One journal message (the Kafka message's value) as a VisitStatus.

    Raises ValidationError naming the field at fault; ``record`` when the bytes
    are neither a JSON object nor a msgpack map. A bad ``newest_change_at`` or
    ``change_times`` is dropped instead, the status kept without it:
    ``on_drop(field, error)`` hears of each (``change_times`` is dropped too when
    the count ``changes`` is below the number of its times).
    """
    message = _normalised(decode_message(value))
    seen = {name: message.pop(name) for name in CHANGE_FIELDS if message.get(name) is not None}
    status = parse_visit_status(message)
    while seen:
        try:
            return parse_visit_status({**message, **{name: _change_value(name, v) for name, v in seen.items()}})
        except ValidationError as exc:
            name = "newest_change_at" if exc.field == "newest_change_at" else "change_times"
            del seen[name]
            if on_drop is not None:
                on_drop(name, exc)
    return status


def decode_message(value: bytes | bytearray | memoryview | None) -> dict[str, Any]:
    """The message as a mapping with text keys (JSON or msgpack, detected per message)."""
    if value is None:
        raise ValidationError("record", "a JSON object or a msgpack map", "an empty (tombstone) message")
    data = bytes(value)
    if not data:
        raise ValidationError("record", "a JSON object or a msgpack map", "an empty message")
    if data.lstrip(b" \t\r\n")[:1] == b"{":
        try:
            record = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValidationError("record", f"a JSON object in UTF-8 ({exc})", _excerpt(data)) from None
    else:
        try:
            record = msgpack.unpackb(data, raw=False, unicode_errors="surrogateescape", strict_map_key=False,
                                     timestamp=0, ext_hook=_ext_hook)
        except Exception as exc:  # any msgpack failure means undecodable bytes
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise ValidationError("record", f"a JSON object or a msgpack map ({why})", _excerpt(data)) from None
    if not isinstance(record, dict):
        raise ValidationError("record", "a JSON object or a msgpack map", f"a {_kind(record)}")
    return _text_keys(record)


def _normalised(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields parse_visit_status reads, with the archive's encodings undone."""
    message = {name: record.get(name) for name in _FIELDS}
    for name in _TEXT_FIELDS:
        value = message[name]
        if isinstance(value, (bytes, bytearray)):  # an old "raw" msgpack writer: text as bytes
            raw = bytes(value)
            try:
                message[name] = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValidationError(name, "UTF-8 text", _excerpt(raw)) from None
    if message["date"] is not None:
        message["date"] = _date(message["date"])
    for name, value in message.items():
        if isinstance(value, msgpack.ExtType) and name not in CHANGE_FIELDS:  # those are dropped, not refused
            raise ValidationError(name, "a value of a known msgpack type", f"extension type {value.code}")
    return message


def _change_value(name: str, value: Any) -> Any:
    """A change field with the archive's encodings of times undone (what is not a time is left for
    ``parse_visit_status`` to refuse, and so is a list longer than the bound)."""
    if name == "newest_change_at":
        return _date(value, name)
    if isinstance(value, list) and len(value) <= limits.MAX_CHANGE_TIMES:
        return [_date(item, f"{name}[{index}]") for index, item in enumerate(value)]
    return value


def _date(value: Any, name: str = "date") -> datetime:
    if isinstance(value, msgpack.Timestamp):
        try:
            value = value.to_datetime()
        except (ValueError, OverflowError, OSError):
            raise ValidationError(name, "a msgpack timestamp of a real time", f"{value.seconds}s") from None
    elif isinstance(value, Mapping):
        value = _text_keys(value)
        if value.get("__datetime__") or value.get("swhtype") == "datetime":
            text = value.get("s") if value.get("__datetime__") else value.get("d")
            if not isinstance(text, str):
                raise ValidationError(name, _DATE_FORMS, value)
            value = parse_iso_time(text, name)
        else:
            raise ValidationError(name, _DATE_FORMS, value)
    elif isinstance(value, str):
        value = parse_iso_time(value, name)
    elif not isinstance(value, datetime):
        raise ValidationError(name, _DATE_FORMS, value if not isinstance(value, msgpack.ExtType) else f"extension type {value.code}")
    if value.tzinfo is None:
        raise ValidationError(name, "a time with a zone", value.isoformat())
    try:
        value = value.astimezone(UTC)
    except OverflowError:
        raise ValidationError(name, limits.TIME_RANGE, value.isoformat()) from None
    return limits.check_time_range(value, name)


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _EXT_LONG_INT:
        return int.from_bytes(data, "big")
    if code == _EXT_LONG_NEG_INT:
        return -int.from_bytes(data, "big")
    return msgpack.ExtType(code, data)


def _text_keys(mapping: Mapping[Any, Any]) -> dict[str, Any]:
    """Keys as text: bytes keys decoded from UTF-8; keys that are neither are dropped (none of ours)."""
    result: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(key, (bytes, bytearray)):
            try:
                key = bytes(key).decode("utf-8")
            except UnicodeDecodeError:
                continue
        if isinstance(key, str):
            result.setdefault(key, value)
    return result


def _kind(value: Any) -> str:
    return {list: "list", tuple: "list", str: "string", bytes: "byte string", int: "number", float: "number",
            bool: "boolean", type(None): "null"}.get(type(value), type(value).__name__)


def _excerpt(data: bytes) -> str:
    text = repr(data[:_EXCERPT_BYTES])
    return text + ("…" if len(data) > _EXCERPT_BYTES else "")


# -- encoding: what tests, benchmarks and producers write ------------------------
def encode_json(status: VisitStatus) -> bytes:
    """A status as this project's JSON journal message (the count and the change times only when known)."""
    message: dict[str, Any] = {
        "origin": status.origin, "visit": status.visit, "type": status.type, "status": status.status.value,
        "date": status.date.isoformat(), "snapshot": status.snapshot.hex() if status.snapshot is not None else None,
    }
    if status.changes is not None:
        message["changes"] = status.changes
    if status.newest_change_at is not None:
        message["newest_change_at"] = status.newest_change_at.isoformat()
    if status.change_times is not None:
        message["change_times"] = [t.isoformat() for t in status.change_times]
    return orjson.dumps(message)


def encode_msgpack(status: VisitStatus, *, date_encoding: str = "timestamp", bytes_keys: bool = False) -> bytes:
    """A status as the archive's msgpack journal message.

    ``date_encoding``: ``timestamp`` (the msgpack extension -1, today's form),
    ``swhtype`` or ``__datetime__`` (the older forms).
    """
    date: Any = status.date
    if date_encoding == "swhtype":
        date = {b"swhtype": "datetime", b"d": status.date.isoformat()}
    elif date_encoding == "__datetime__":
        date = {b"__datetime__": True, b"s": status.date.isoformat()}
    elif date_encoding != "timestamp":
        raise ValueError(f"date_encoding: expected timestamp, swhtype or __datetime__, got {date_encoding!r}")
    message = {"origin": status.origin, "visit": status.visit, "type": status.type, "status": status.status.value,
               "date": date, "snapshot": status.snapshot, "metadata": None}
    # what the archive's messages do not have, only when known (times as msgpack timestamps)
    known = {"changes": status.changes, "newest_change_at": status.newest_change_at, "change_times": status.change_times}
    message.update({name: list(value) if isinstance(value, tuple) else value for name, value in known.items()
                    if value is not None})
    keyed: dict[str, Any] | dict[bytes, Any] = message
    if bytes_keys:
        keyed = {key.encode(): value for key, value in message.items()}
    return msgpack.packb(keyed, use_bin_type=True, datetime=True)
