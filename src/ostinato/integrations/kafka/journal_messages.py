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

Every failure is a :class:`~ostinato.domain.errors.ValidationError` naming the
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

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgpack
import orjson

from ...domain import limits
from ...domain.durations import parse_iso_time
from ...domain.errors import ValidationError
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

_FIELDS: Final = ("origin", "visit", "type", "status", "date", "snapshot", "changes")
_TEXT_FIELDS: Final = ("origin", "type", "status")
_JSON_START: Final = frozenset(b" \t\r\n")
_EXCERPT_BYTES: Final = 80
# swh.journal.serializers.MsgpackExtTypeCodes
_EXT_LONG_INT: Final = 1
_EXT_LONG_NEG_INT: Final = 2
_DATE_FORMS: Final = ("an ISO 8601 time with a zone, a msgpack timestamp, "
                      "or {swhtype: datetime, d: ISO} / {__datetime__: true, s: ISO}")


def decode_visit_status(value: bytes | bytearray | memoryview | None) -> VisitStatus:
    """One journal message (the Kafka message's value) as a VisitStatus.

    Raises ValidationError naming the field at fault; ``record`` when the bytes
    are neither a JSON object nor a msgpack map.
    """
    return parse_visit_status(_normalised(decode_message(value)))


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
        if isinstance(value, msgpack.ExtType):
            raise ValidationError(name, "a value of a known msgpack type", f"extension type {value.code}")
    return message


def _date(value: Any) -> datetime:
    if isinstance(value, msgpack.Timestamp):
        try:
            value = value.to_datetime()
        except (ValueError, OverflowError, OSError):
            raise ValidationError("date", "a msgpack timestamp of a real time", f"{value.seconds}s") from None
    elif isinstance(value, Mapping):
        value = _text_keys(value)
        if value.get("__datetime__") or value.get("swhtype") == "datetime":
            text = value.get("s") if value.get("__datetime__") else value.get("d")
            if not isinstance(text, str):
                raise ValidationError("date", _DATE_FORMS, value)
            value = _iso(text)
        else:
            raise ValidationError("date", _DATE_FORMS, value)
    elif isinstance(value, str):
        value = _iso(value)
    elif not isinstance(value, datetime):
        raise ValidationError("date", _DATE_FORMS, value)
    if value.tzinfo is None:
        raise ValidationError("date", "a time with a zone", value.isoformat())
    try:
        value = value.astimezone(UTC)
    except OverflowError:
        raise ValidationError("date", limits.TIME_RANGE, value.isoformat()) from None
    return limits.check_time_range(value, "date")


def _iso(text: str) -> datetime:
    return parse_iso_time(text, "date")


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
    """A status as this project's JSON journal message."""
    return orjson.dumps({
        "origin": status.origin, "visit": status.visit, "type": status.type, "status": status.status.value,
        "date": status.date.isoformat(), "snapshot": status.snapshot.hex() if status.snapshot is not None else None,
    })


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
    keyed: dict[str, Any] | dict[bytes, Any] = message
    if bytes_keys:
        keyed = {key.encode(): value for key, value in message.items()}
    return msgpack.packb(keyed, use_bin_type=True, datetime=True)
