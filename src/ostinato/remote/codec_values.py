"""The remote store's wire format, leaves first: the strict checks every value passes
(text, whole numbers in 64 bits, times from the year 1000 to 9000, durations up to a century),
the errors that name the field at fault, the :class:`Codec` base, and the codecs of single
values (none, bool, int, float, str, bytes, datetime, timedelta, time of day, enums, anything
JSON). The containers and :func:`~ostinato.remote.codec.codec_for` live in :mod:`.codec`.
"""

from __future__ import annotations

import collections.abc
import enum
import json
import math
import re
from datetime import UTC, datetime, time, timedelta
from typing import Any

from ..domain.errors import ValidationError

#: the integers a store keeps (64-bit, signed)
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
#: times outside this range are refused: a store adds and subtracts durations of up to a century to them
EARLIEST, LATEST = datetime(1000, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)
#: the longest duration carried, either sign (a century)
LONGEST = timedelta(days=36_525)
_HEX = re.compile(r"^(?:[0-9a-f]{2})*$")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$")
_TIME_OF_DAY = re.compile(r"^\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?$")


class UnsupportedType(TypeError):
    """A type hint this codec cannot carry (a callable, an open type variable…)."""


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def key_path(path: str, key: str) -> str:
    """The path of an object's member: ``path.key`` for a plain name, ``path["key"]`` (JSON text)
    for any other key (empty, dotted, spaced…), so that every part of a path names something."""
    if _NAME.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _last_dot(path: str) -> int:
    """The place of the last ``.`` of ``path`` outside a quoted key, or -1."""
    last, quoted, escaped = -1, False, False
    for i, char in enumerate(path):
        if quoted:
            escaped, quoted = (not escaped and char == "\\"), quoted and (escaped or char != '"')
        elif char == '"':
            quoted = True
        elif char == ".":
            last = i
    return last


def _where(path: str) -> tuple[str, str | None]:
    """The field an error names (the last part of ``path``) and where it sits (the rest)."""
    dot = _last_dot(path)
    if dot >= 0:
        return path[dot + 1:], path[:dot]
    if path.endswith("]"):
        base = path[: path.index("[")]
        return base or "body", path
    return path or "body", None


class CodecError(ValidationError):
    """A codec's ValidationError, knowing the path of the value at fault: a container that finds it
    in an item prefixes the item's place (paths are only built for errors, not for every value)."""

    path = ""


def fail(path: str, expected: str, got: Any) -> CodecError:
    field, record = _where(path)
    error = CodecError(field, expected, got, record=record)
    error.path = path
    return error


def check_text(value: str, path: str) -> str:
    """Text a store can keep: valid Unicode (no unpaired surrogate) and no NUL character."""
    if "\x00" in value:
        raise fail(path, "text without NUL characters", value.replace("\x00", "\\0"))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise fail(path, "valid Unicode text (no unpaired surrogate)",
                   value.encode("utf-8", "backslashreplace").decode()) from None
    return value


class Codec:
    """Encodes values of one type hint to JSON and back, and describes them as a JSON Schema."""

    def encode(self, value: Any, path: str) -> Any:
        raise NotImplementedError

    # positional (as every caller passes them), so that a codec whose decoding is its encoding can say
    # ``decode = encode``
    def decode(self, data: Any, path: str, /) -> Any:
        raise NotImplementedError

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is of this type (to choose among the members of a union)."""
        raise NotImplementedError


class AnyCodec(Codec):
    """Any JSON value (task arguments, metadata, loader arguments), its text checked."""

    def encode(self, value: Any, path: str) -> Any:
        return self._plain(value, path)

    def decode(self, data: Any, path: str) -> Any:
        return self._plain(data, path)

    def _plain(self, value: Any, path: str) -> Any:
        if value is None or isinstance(value, (bool, int)):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise fail(path, "a finite number", value)
            return value
        if isinstance(value, str):
            return check_text(value, path)
        if isinstance(value, collections.abc.Mapping):
            plain = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise fail(path, "an object with text keys", key)
                plain[check_text(key, path)] = self._plain(item, key_path(path, key))
            return plain
        if isinstance(value, (list, tuple)):
            return [self._plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
        raise fail(path, "a value JSON can carry", repr(value))

    def schema(self) -> dict[str, Any]:
        return {}

    def accepts(self, value: Any) -> bool:
        return True


class NoneCodec(Codec):
    def encode(self, value: Any, path: str) -> Any:
        if value is not None:
            raise fail(path, "null", value)
        return None

    decode = encode

    def schema(self) -> dict[str, Any]:
        return {"type": "null"}

    def accepts(self, value: Any) -> bool:
        return value is None


class BoolCodec(Codec):
    def encode(self, value: Any, path: str) -> Any:
        if not isinstance(value, bool):
            raise fail(path, "true or false", value)
        return value

    decode = encode

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)


class IntCodec(Codec):
    def __init__(self, minimum: int = INT_MIN, maximum: int = INT_MAX):
        self.minimum, self.maximum = minimum, maximum

    def encode(self, value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(path, "a whole number", value)
        if not self.minimum <= value <= self.maximum:
            raise fail(path, f"a whole number from {self.minimum} to {self.maximum}", value)
        return value

    decode = encode

    def schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)


class FloatCodec(Codec):
    def encode(self, value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(path, "a number", value)
        if not math.isfinite(value):
            raise fail(path, "a finite number", value)
        return float(value) if isinstance(value, float) else value

    def decode(self, data: Any, path: str) -> Any:
        return float(self.encode(data, path))

    def schema(self) -> dict[str, Any]:
        return {"type": "number"}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)


class StrCodec(Codec):
    def encode(self, value: Any, path: str) -> Any:
        if not isinstance(value, str) or isinstance(value, enum.Enum):
            if isinstance(value, enum.Enum) and isinstance(value.value, str):
                return check_text(value.value, path)
            raise fail(path, "text", value)
        return check_text(value, path)

    def decode(self, data: Any, path: str) -> Any:
        if not isinstance(data, str):
            raise fail(path, "text", data)
        return check_text(data, path)

    def schema(self) -> dict[str, Any]:
        return {"type": "string"}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)


class BytesCodec(Codec):
    def encode(self, value: Any, path: str) -> Any:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise fail(path, "bytes", value)
        return bytes(value).hex()

    def decode(self, data: Any, path: str) -> Any:
        if not isinstance(data, str) or not _HEX.match(data):
            raise fail(path, "bytes as lowercase hexadecimal digits, two per byte", data)
        return bytes.fromhex(data)

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": _HEX.pattern}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (bytes, bytearray, memoryview))


class DatetimeCodec(Codec):
    EXPECTED = "an ISO 8601 time with a zone, between the years 1000 and 9000"

    def _checked(self, value: Any, path: str) -> datetime:
        if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
            raise fail(path, self.EXPECTED, value)
        try:
            inside = EARLIEST <= value < LATEST
        except OverflowError:
            inside = False
        if not inside:
            raise fail(path, self.EXPECTED, value)
        return value

    def encode(self, value: Any, path: str) -> Any:
        return self._checked(value, path).isoformat()

    def decode(self, data: Any, path: str) -> Any:
        if not isinstance(data, str) or not _RFC3339.match(data):
            raise fail(path, self.EXPECTED, data)
        try:
            value = datetime.fromisoformat(data.upper())
        except ValueError:
            raise fail(path, self.EXPECTED, data) from None
        # in UTC, as every other way in reads a time: the same instant, and an offset PostgreSQL can take
        # (it refuses those beyond ±15:59, which ISO 8601 and Python allow)
        return self._checked(value, path).astimezone(UTC)

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "format": "date-time"}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, datetime)


class TimedeltaCodec(Codec):
    EXPECTED = "a duration in seconds, at most a century either way"

    def encode(self, value: Any, path: str) -> Any:
        if not isinstance(value, timedelta) or not -LONGEST <= value <= LONGEST:
            raise fail(path, self.EXPECTED, value)
        return value.total_seconds()

    def decode(self, data: Any, path: str) -> Any:
        if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data):
            raise fail(path, self.EXPECTED, data)
        if abs(data) > LONGEST.total_seconds():
            raise fail(path, self.EXPECTED, data)
        return timedelta(seconds=data)

    def schema(self) -> dict[str, Any]:
        limit = LONGEST.total_seconds()
        return {"type": "number", "minimum": -limit, "maximum": limit}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, timedelta)


class TimeCodec(Codec):
    EXPECTED = "a time of day HH:MM or HH:MM:SS, without a zone"

    def encode(self, value: Any, path: str) -> Any:
        if not isinstance(value, time) or value.tzinfo is not None:
            raise fail(path, self.EXPECTED, value)
        return value.isoformat()

    def decode(self, data: Any, path: str) -> Any:
        if not isinstance(data, str) or not _TIME_OF_DAY.match(data):
            raise fail(path, self.EXPECTED, data)
        try:
            return time.fromisoformat(data)
        except ValueError:
            raise fail(path, self.EXPECTED, data) from None

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": _TIME_OF_DAY.pattern}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, time)


class EnumCodec(Codec):
    def __init__(self, enum_class: type[enum.Enum]):
        self.enum_class = enum_class
        self.by_value = {member.value: member for member in enum_class}
        self.expected = "one of " + ", ".join(str(v) for v in self.by_value)

    def encode(self, value: Any, path: str) -> Any:
        if isinstance(value, self.enum_class):
            return value.value
        return self.decode(value, path).value  # its value, as a plain string, will do

    def decode(self, data: Any, path: str) -> Any:
        try:
            return self.by_value[data]
        except (KeyError, TypeError):
            raise fail(path, self.expected, data) from None

    def schema(self) -> dict[str, Any]:
        return {"enum": list(self.by_value)}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.enum_class) or (isinstance(value, str) and value in self.by_value)
