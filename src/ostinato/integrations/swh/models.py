"""The model objects of swh-scheduler's protocol: each class's fields and their types, read
strictly from a request and written back for its client (see docs/reference/swh-compat.md).

A model object arrives as :class:`~.wire.Model` (its class name and fields). :func:`read`
checks it is of the class an operation takes, that every field is known and of its type,
and fills the defaults; the first fault is a :class:`~ostinato.domain.errors.ValidationError`
naming the field (``task_runs[3].scheduled``). :func:`make` builds the object an answer
carries, every field present, as the protocol's client rebuilds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable
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


def read(value: Any, model: str, where: str) -> dict[str, Any]:
    """The fields of a ``model`` object, checked, with their defaults; ValidationError naming the field."""
    if not isinstance(value, Model):
        raise ValidationError(where, f"a {model} object", _shown(value))
    if value.type != model:
        raise ValidationError(where, f"a {model} object", f"a {value.type} object")
    spec = MODELS[model]
    unknown = sorted(set(value.fields) - set(spec))
    if unknown:
        raise ValidationError(f"{where}.{unknown[0]}", f"one of the fields of {model}: {', '.join(spec)}",
                              _shown(value.fields[unknown[0]]))
    fields: dict[str, Any] = {}
    for name, (kind, default) in spec.items():
        if name in value.fields:
            raw = value.fields[name]
        elif default is _REQUIRED:
            raise ValidationError(f"{where}.{name}", f"{kind.expected} (the field is required)", None)
        else:
            raw = default() if callable(default) else default
        if model == "Task" and name == "arguments":
            fields[name] = read(raw, "TaskArguments", f"{where}.arguments")
            continue
        fields[name] = kind(raw, f"{where}.{name}")
    return fields


def read_many(values: Any, model: str, where: str) -> list[dict[str, Any]]:
    """A list of ``model`` objects (any iterable the client sent as a list)."""
    if not isinstance(values, list):
        raise ValidationError(where, f"a list of {model} objects", _shown(values))
    return [read(value, model, f"{where}[{index}]") for index, value in enumerate(values)]


def make(model: str, **fields: Any) -> Model:
    """A ``model`` object for an answer: every field, in the client's order."""
    spec = MODELS[model]
    unknown = set(fields) - set(spec)
    if unknown:
        raise TypeError(f"{model} has no field {sorted(unknown)[0]}")
    values = {}
    for name, (_, default) in spec.items():
        if name in fields:
            values[name] = fields[name]
        else:
            values[name] = None if default is _REQUIRED else (default() if callable(default) else default)
    if model == "OriginVisitStats" and values["last_visit_status"] is not None:
        values["last_visit_status"] = VisitStatusValue(values["last_visit_status"])
    return Model(model, values)
