"""Domain values to and from JSON, driven by type hints: the wire format of the remote store.

:func:`codec_for` turns a type hint (``datetime``, ``TaskStatus | None``,
``Sequence[NewTask]``, ``dict[tuple[str, str], int]``, any frozen dataclass of the
domain…) into a :class:`Codec` that encodes a value to plain JSON, decodes it back
strictly, and describes it as a JSON Schema (for the OpenAPI description).
Dataclasses are read through ``dataclasses.fields`` and ``typing.get_type_hints``,
so a new domain type needs no code here. No pickle: only JSON types travel.

The forms: times are ISO 8601 with a zone; durations are seconds (a number); bytes
are lowercase hexadecimal; enums their value; a time of day ``HH:MM[:SS]``; a
dataclass an object of its fields; a mapping with non-text keys a list of
``[key, value]`` pairs. Bad input raises ``ValidationError`` naming the innermost
field (a dataclass field or a parameter), with ``record`` saying where it sits
(``tasks[3]``). Both directions check the same rules, so a client refuses what
the server would.

The checks and the codecs of single values are in :mod:`.codec_values`; the containers
(unions, lists, tuples, mappings, dataclasses) and the choice of codec by hint are here.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Iterable
from datetime import datetime, time, timedelta
from typing import Any

from ..domain.errors import ValidationError
from .codec_values import (
    EARLIEST,
    LATEST,
    LONGEST,
    AnyCodec,
    BoolCodec,
    BytesCodec,
    Codec,
    CodecError,
    DatetimeCodec,
    EnumCodec,
    FloatCodec,
    IntCodec,
    NoneCodec,
    StrCodec,
    TimeCodec,
    TimedeltaCodec,
    UnsupportedType,
    check_text,
    fail,
    key_path,
)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _within(place: str, error: CodecError) -> CodecError:
    """``error`` of a value inside the one at ``place``."""
    inner = error.path
    return fail(place + inner if not inner or inner.startswith("[") else f"{place}.{inner}", error.expected, error.got)


class UnionCodec(Codec):
    """``A | B | None``: the first member that takes the value."""

    def __init__(self, members: list[Codec]):
        self.members = members
        self.nullable = any(isinstance(m, NoneCodec) for m in members)
        self.others = [m for m in members if not isinstance(m, NoneCodec)]

    def encode(self, value: Any, path: str) -> Any:
        if value is None and self.nullable:
            return None
        fitting = [m for m in self.others if m.accepts(value)] or self.others
        return fitting[0].encode(value, path)

    def decode(self, data: Any, path: str) -> Any:
        if data is None and self.nullable:
            return None
        first: ValidationError | None = None
        for member in self.others:
            try:
                return member.decode(data, path)
            except ValidationError as exc:
                first = first or exc
        assert first is not None
        raise first

    def schema(self) -> dict[str, Any]:
        schemas = [m.schema() for m in self.members]
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}

    def accepts(self, value: Any) -> bool:
        return any(m.accepts(value) for m in self.members)


def _each(convert: Callable[[Any, str], Any], items: Iterable[Any], path: str) -> list[Any]:
    """``convert`` (an item codec's encode or decode) of every item; an error names the item's
    place, ``path[index]`` (paths are built only then, not for every item)."""
    converted: list[Any] = []
    try:
        for item in items:
            converted.append(convert(item, ""))
    except CodecError as error:  # the item that failed is the next one: at len(converted)
        raise _within(f"{path}[{len(converted)}]", error) from None
    return converted


class ListCodec(Codec):
    """``list[X]``, ``Sequence[X]``, ``Iterable[X]`` (a list) and ``tuple[X, ...]`` (a tuple)."""

    def __init__(self, item: Codec, make: type = list):
        self.item, self.make = item, make

    def encode(self, value: Any, path: str) -> Any:
        if isinstance(value, (str, bytes, collections.abc.Mapping)) or not isinstance(value, collections.abc.Iterable):
            raise fail(path, "a list", value)
        return _each(self.item.encode, value, path)

    def decode(self, data: Any, path: str) -> Any:
        if not isinstance(data, list):
            raise fail(path, "a JSON array", type(data).__name__)
        decoded = _each(self.item.decode, data, path)
        return decoded if self.make is list else self.make(decoded)

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.schema()}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (list, tuple))


class TupleCodec(Codec):
    """``tuple[A, B]``: an array of exactly those."""

    def __init__(self, items: list[Codec]):
        self.items = items

    def encode(self, value: Any, path: str) -> Any:
        if not isinstance(value, (tuple, list)) or len(value) != len(self.items):
            raise fail(path, f"{len(self.items)} values", value)
        return [c.encode(v, f"{path}[{i}]") for i, (c, v) in enumerate(zip(self.items, value, strict=True))]

    def decode(self, data: Any, path: str) -> Any:
        if not isinstance(data, list) or len(data) != len(self.items):
            raise fail(path, f"a JSON array of {len(self.items)} values", data if not isinstance(data, list) else len(data))
        return tuple(c.decode(v, f"{path}[{i}]") for i, (c, v) in enumerate(zip(self.items, data, strict=True)))

    def schema(self) -> dict[str, Any]:
        # not "prefixItems": the tools that read the description do not all know it; the codec checks each position
        n, schemas = len(self.items), []
        for schema in (c.schema() for c in self.items):
            if schema not in schemas:
                schemas.append(schema)
        return {"type": "array", "items": schemas[0] if len(schemas) == 1 else {"anyOf": schemas},
                "minItems": n, "maxItems": n}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (tuple, list)) and len(value) == len(self.items)


class MappingCodec(Codec):
    """``dict[str, V]`` as an object; with other keys, as a list of ``[key, value]`` pairs."""

    def __init__(self, key: Codec, value: Codec):
        self.key, self.value = key, value
        self.text_keys = isinstance(key, StrCodec)
        self.pair = TupleCodec([key, value])

    def encode(self, value: Any, path: str) -> Any:
        if not isinstance(value, collections.abc.Mapping):
            raise fail(path, "a mapping", value)
        if self.text_keys:
            return {self.key.encode(k, path): self.value.encode(v, key_path(path, str(k))) for k, v in value.items()}
        return [self.pair.encode(item, f"{path}[{i}]") for i, item in enumerate(value.items())]

    def decode(self, data: Any, path: str) -> Any:
        if self.text_keys:
            if not isinstance(data, dict):
                raise fail(path, "a JSON object", type(data).__name__)
            return {self.key.decode(k, path): self.value.decode(v, key_path(path, str(k))) for k, v in data.items()}
        if not isinstance(data, list):
            raise fail(path, "a JSON array of [key, value] pairs", type(data).__name__)
        return dict(self.pair.decode(item, f"{path}[{i}]") for i, item in enumerate(data))

    def schema(self) -> dict[str, Any]:
        if self.text_keys:
            return {"type": "object", "additionalProperties": self.value.schema()}
        return {"type": "array", "items": self.pair.schema()}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, collections.abc.Mapping)


class DataclassCodec(Codec):
    """A dataclass as an object of its fields (those set at construction); unknown fields are refused."""

    def __init__(self, cls: type):
        self.cls = cls
        self._fields: list[tuple[str, Codec, bool]] | None = None  # built on first use: types may refer to each other
        self._names: frozenset[str] = frozenset()

    @property
    def fields(self) -> list[tuple[str, Codec, bool]]:
        if self._fields is None:
            hints = typing.get_type_hints(self.cls)
            self._fields = [
                (f.name, codec_for(hints[f.name]),
                 f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                for f in dataclasses.fields(self.cls) if f.init
            ]
            self._names = frozenset(name for name, _, _ in self._fields)
        return self._fields

    def encode(self, value: Any, path: str) -> Any:
        if not isinstance(value, self.cls):
            raise fail(path, f"a {self.cls.__name__}", type(value).__name__)
        encoded, name = {}, ""
        try:
            for name, codec, _ in self.fields:
                encoded[name] = codec.encode(getattr(value, name), "")
        except CodecError as error:
            raise _within(_child(path, name), error) from None
        return encoded

    def decode(self, data: Any, path: str) -> Any:
        if not isinstance(data, dict):
            raise fail(path, f"a JSON object ({self.cls.__name__})", type(data).__name__)
        fields = self.fields
        values, name = {}, ""
        try:
            for name, codec, required in fields:
                if name in data:
                    values[name] = codec.decode(data[name], "")
                elif required:
                    raise fail("", f"a value (a {self.cls.__name__} needs it)", None)
        except CodecError as error:
            raise _within(_child(path, name), error) from None
        if len(data) > len(values):
            unknown = sorted(data.keys() - self._names)
            if unknown:
                raise fail(_child(path, unknown[0]), f"one of the fields of a {self.cls.__name__}: "
                           + ", ".join(name for name, _, _ in fields), data[unknown[0]])
        try:
            return self.cls(**values)
        except ValidationError:
            raise
        except (TypeError, ValueError) as exc:
            raise fail(path, f"a valid {self.cls.__name__}", str(exc)) from None

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "title": self.cls.__name__,
                "properties": {name: codec.schema() for name, codec, _ in self.fields},
                "required": [name for name, _, required in self.fields if required],
                "additionalProperties": False}

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.cls)


_SIMPLE: dict[Any, Codec] = {
    Any: AnyCodec(), type(None): NoneCodec(), None: NoneCodec(), bool: BoolCodec(), int: IntCodec(),
    float: FloatCodec(), str: StrCodec(), bytes: BytesCodec(), datetime: DatetimeCodec(), timedelta: TimedeltaCodec(),
    time: TimeCodec(),
}
_LISTS = {list, collections.abc.Sequence, collections.abc.Iterable, collections.abc.Collection,
          collections.abc.MutableSequence}
_MAPPINGS = {dict, collections.abc.Mapping, collections.abc.MutableMapping}
_cache: dict[Any, Codec] = {}


def codec_for(hint: Any) -> Codec:
    """The codec of a (resolved) type hint; UnsupportedType when it cannot travel as JSON."""
    try:
        return _cache[hint]
    except (KeyError, TypeError):
        pass
    codec = _build(hint)
    try:
        _cache[hint] = codec
    except TypeError:  # an unhashable hint: built again next time
        pass
    return codec


def _build(hint: Any) -> Codec:
    if hint in _SIMPLE:
        return _SIMPLE[hint]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return EnumCodec(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return DataclassCodec(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return UnionCodec([codec_for(a) for a in args])
    if origin in _LISTS and len(args) == 1:
        return ListCodec(codec_for(args[0]))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return ListCodec(codec_for(args[0]), tuple)
        if args:
            return TupleCodec([codec_for(a) for a in args])
    if origin in _MAPPINGS and len(args) == 2:
        return MappingCodec(codec_for(args[0]), codec_for(args[1]))
    if hint in _MAPPINGS:
        return MappingCodec(StrCodec(), AnyCodec())
    raise UnsupportedType(f"no JSON form for the type {hint!r}")


__all__ = ["Codec", "UnsupportedType", "codec_for", "check_text", "fail", "IntCodec", "EARLIEST", "LATEST", "LONGEST"]
