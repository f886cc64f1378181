"""The model objects of swh-scheduler's protocol: each class's fields and their types, read
strictly from a request and written back for its client (see docs/reference/swh-compat.md).

A model object arrives as :class:`~.wire.Model` (its class name and fields). :func:`read`
checks it is of the class an operation takes, that every field is known and of its type,
and fills the defaults; the first fault is a :class:`~ostinato.domain.errors.ValidationError`
naming the field (``task_runs[3].scheduled``). :func:`make` builds the object an answer
carries, every field present, as the protocol's client rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from ...domain.errors import ValidationError
from .wire import Model, VisitStatusValue

_REQUIRED = object()

TASK_STATUSES = ("next_run_not_scheduled", "next_run_scheduled", "completed", "disabled")
TASK_POLICIES = ("recurring", "oneshot")
TASK_PRIORITIES = ("high", "normal", "low")
TASK_RUN_STATUSES = ("scheduled", "started", "eventful", "uneventful", "failed", "permfailed", "lost")
VISIT_STATUSES = ("successful", "failed", "not_found")


@dataclass(frozen=True)
class Kind:
    """A field's type: what it accepts, said in words for the error."""

    expected: str
    check: Callable[[Any], bool]
    nullable: bool = False

    def __call__(self, value: Any, where: str) -> Any:
        if value is None:
            if self.nullable:
                return None
            raise ValidationError(where, self.expected, None)
        if not self.check(value):
            raise ValidationError(where, self.expected + (" or null" if self.nullable else ""), _shown(value))
        return value


def _shown(value: Any) -> Any:
    if isinstance(value, Model):
        return f"a {value.type} object"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _zoned(value: Any) -> bool:
    return isinstance(value, datetime) and value.tzinfo is not None


def _json_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) for k in value)


def _one_of(*values: str) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and value in values


TEXT = Kind("text", lambda v: isinstance(v, str))
WHOLE = Kind("a whole number", _whole)
TIME = Kind("a time with a zone", _zoned)
DURATION = Kind("a duration (timedelta)", lambda v: isinstance(v, timedelta))
NUMBER = Kind("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
BOOL = Kind("true or false", lambda v: isinstance(v, bool))
MAP = Kind("an object with text keys", _json_map)
LIST = Kind("a list", lambda v: isinstance(v, list))
UUID_KIND = Kind("a UUID", lambda v: isinstance(v, UUID))
BYTES = Kind("bytes", lambda v: isinstance(v, bytes))


def nullable(kind: Kind) -> Kind:
    return Kind(kind.expected, kind.check, True)


def choice(*values: str, null: bool = False) -> Kind:
    return Kind("one of " + ", ".join(values), _one_of(*values), null)


def _visit_status(value: Any) -> bool:
    return isinstance(value, str) and value in VISIT_STATUSES


VISIT_STATUS = Kind("one of " + ", ".join(VISIT_STATUSES), _visit_status, True)

#: each model class: its fields in the client's order, each with its type and default
MODELS: dict[str, dict[str, tuple[Kind, Any]]] = {
    "Lister": {
        "name": (TEXT, _REQUIRED),
        "instance_name": (TEXT, _REQUIRED),
        "id": (nullable(UUID_KIND), None),
        "current_state": (MAP, dict),
        "created": (nullable(TIME), None),
        "updated": (nullable(TIME), None),
        "last_listing_finished_at": (nullable(TIME), None),
        "first_visits_queue_prefix": (nullable(TEXT), None),
        "first_visits_scheduled_at": (nullable(TIME), None),
    },
    "ListedOrigin": {
        "lister_id": (UUID_KIND, _REQUIRED),
        "url": (TEXT, _REQUIRED),
        "visit_type": (TEXT, _REQUIRED),
        "extra_loader_arguments": (MAP, dict),
        "last_update": (nullable(TIME), None),
        "is_fork": (nullable(BOOL), None),
        "forked_from_url": (nullable(TEXT), None),
        "enabled": (BOOL, True),
        "first_seen": (nullable(TIME), None),
        "last_seen": (nullable(TIME), None),
    },
    "OriginVisitStats": {
        "url": (TEXT, _REQUIRED),
        "visit_type": (TEXT, _REQUIRED),
        "last_successful": (nullable(TIME), None),
        "last_visit": (nullable(TIME), None),
        "last_visit_status": (VISIT_STATUS, None),
        "last_scheduled": (nullable(TIME), None),
        "last_snapshot": (nullable(BYTES), None),
        "next_visit_queue_position": (nullable(WHOLE), None),
        "next_position_offset": (WHOLE, 4),
        "successive_visits": (WHOLE, 1),
    },
    "SchedulerMetrics": {
        "lister_id": (UUID_KIND, _REQUIRED),
        "visit_type": (TEXT, _REQUIRED),
        "last_update": (nullable(TIME), None),
        "origins_known": (WHOLE, 0),
        "origins_enabled": (WHOLE, 0),
        "origins_never_visited": (WHOLE, 0),
        "origins_with_pending_changes": (WHOLE, 0),
    },
    "TaskType": {
        "type": (TEXT, _REQUIRED),
        "description": (TEXT, _REQUIRED),
        "backend_name": (TEXT, _REQUIRED),
        "default_interval": (nullable(DURATION), None),
        "min_interval": (nullable(DURATION), None),
        "max_interval": (nullable(DURATION), None),
        "backoff_factor": (nullable(NUMBER), None),
        "max_queue_length": (nullable(WHOLE), 1000),
        "num_retries": (nullable(WHOLE), None),
        "retry_delay": (nullable(DURATION), None),
    },
    "TaskArguments": {
        "args": (LIST, list),
        "kwargs": (MAP, dict),
    },
    "Task": {
        "type": (TEXT, _REQUIRED),
        "arguments": (Kind("a TaskArguments object", lambda v: isinstance(v, dict)), _REQUIRED),
        "next_run": (TIME, _REQUIRED),
        "status": (choice(*TASK_STATUSES), "next_run_not_scheduled"),
        "policy": (choice(*TASK_POLICIES), "recurring"),
        "retries_left": (nullable(WHOLE), None),
        "id": (nullable(WHOLE), None),
        "current_interval": (nullable(DURATION), None),
        "priority": (choice(*TASK_PRIORITIES, null=True), None),
    },
    "TaskRun": {
        "task": (nullable(WHOLE), _REQUIRED),
        "id": (nullable(WHOLE), None),
        "backend_id": (nullable(TEXT), None),
        "scheduled": (nullable(TIME), None),
        "started": (nullable(TIME), None),
        "ended": (nullable(TIME), None),
        "metadata": (nullable(MAP), None),
        "status": (choice(*TASK_RUN_STATUSES), "scheduled"),
    },
}


def _fail(kind: Kind, raw: Any, where: str) -> None:
    """The error of a field ``kind`` refused (only ever made for a fault: a good field costs a test or two)."""
    kind(raw, where)
    raise AssertionError("unreachable: the kind accepted what it refused")  # pragma: no cover


def _reader(model: str) -> Callable[[Any, str], dict[str, Any]]:
    """The reader of one model class, its fields' kinds looked up once."""
    spec = MODELS[model]
    known = frozenset(spec)
    fields_in_order = [(name, kind, kind.check, kind.nullable, default) for name, (kind, default) in spec.items()]

    def read_one(value: Any, where: str) -> dict[str, Any]:
        if value.__class__ is not Model:
            raise ValidationError(where, f"a {model} object", _shown(value))
        if value.type != model:
            raise ValidationError(where, f"a {model} object", f"a {value.type} object")
        given = value.fields
        if not known.issuperset(given):
            unknown = sorted(set(given) - known)[0]
            raise ValidationError(f"{where}.{unknown}", f"one of the fields of {model}: {', '.join(spec)}",
                                  _shown(given[unknown]))
        fields: dict[str, Any] = {}
        for name, kind, check, nullable, default in fields_in_order:
            if name in given:
                raw = given[name]
            elif default is _REQUIRED:
                raise ValidationError(f"{where}.{name}", f"{kind.expected} (the field is required)", None)
            else:
                raw = default() if callable(default) else default
            if model == "Task" and name == "arguments":
                fields[name] = read(raw, "TaskArguments", f"{where}.arguments")
                continue
            if raw is None:
                if not nullable:
                    _fail(kind, raw, f"{where}.{name}")
            elif not check(raw):
                _fail(kind, raw, f"{where}.{name}")
            fields[name] = raw
        return fields

    return read_one


_READERS: dict[str, Callable[[Any, str], dict[str, Any]]] = {}


def read(value: Any, model: str, where: str) -> dict[str, Any]:
    """The fields of a ``model`` object, checked, with their defaults; ValidationError naming the field."""
    reader = _READERS.get(model)
    if reader is None:
        reader = _READERS[model] = _reader(model)
    return reader(value, where)


def read_many(values: Any, model: str, where: str) -> list[dict[str, Any]]:
    """A list of ``model`` objects (any iterable the client sent as a list)."""
    if not isinstance(values, list):
        raise ValidationError(where, f"a list of {model} objects", _shown(values))
    reader = _READERS.get(model)
    if reader is None:
        reader = _READERS[model] = _reader(model)
    return [reader(value, f"{where}[{index}]") for index, value in enumerate(values)]


def _blank(model: str) -> tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...], frozenset[str]]:
    spec = MODELS[model]
    values = {name: None if default is _REQUIRED or callable(default) else default for name, (_, default) in spec.items()}
    factories = tuple((name, default) for name, (_, default) in spec.items() if callable(default))
    return values, factories, frozenset(spec)


_BLANKS = {model: _blank(model) for model in MODELS}


def make(model: str, **fields: Any) -> Model:
    """A ``model`` object for an answer: every field, in the client's order."""
    blank, factories, known = _BLANKS[model]
    if not known.issuperset(fields):
        raise TypeError(f"{model} has no field {sorted(set(fields) - known)[0]}")
    values = dict(blank)
    for name, factory in factories:
        if name not in fields:
            values[name] = factory()
    values.update(fields)
    if model == "OriginVisitStats" and values["last_visit_status"] is not None:
        values["last_visit_status"] = VisitStatusValue(values["last_visit_status"])
    return Model(model, values)
