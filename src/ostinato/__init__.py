"""Ostinato: a scheduler for recurring work at archive scale.

The public API is re-exported here; everything else is internal.
"""

from .declare import CatchUp, DeclarationOutcome, Schedules
from .domain.clock import Clock, ManualClock, SystemClock
from .domain.durations import format_duration, parse_duration, parse_time
from .domain.errors import ConflictError, NotFoundError, OstinatoError, SchemaError, ValidationError
from .domain.tasks import (
    NewTask,
    RunEvent,
    ScheduledRun,
    Task,
    TaskArguments,
    TaskPolicy,
    TaskPriority,
    TaskRun,
    TaskRunStatus,
    TaskStatus,
    TaskType,
)
from .store import Store, open_store

__version__ = "0.1.0"

__all__ = [
    "CatchUp",
    "Clock",
    "ConflictError",
    "DeclarationOutcome",
    "ManualClock",
    "NewTask",
    "NotFoundError",
    "OstinatoError",
    "RunEvent",
    "ScheduledRun",
    "Schedules",
    "SchemaError",
    "Store",
    "SystemClock",
    "Task",
    "TaskArguments",
    "TaskPolicy",
    "TaskPriority",
    "TaskRun",
    "TaskRunStatus",
    "TaskStatus",
    "TaskType",
    "ValidationError",
    "format_duration",
    "open_store",
    "parse_duration",
    "parse_time",
]
