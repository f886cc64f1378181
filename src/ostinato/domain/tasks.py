"""The generic task model (see docs/design/tasks.md) and the rules that move a task after a run.

Task types carry the scheduling knobs (``default_interval``, ``min_interval``,
``max_interval``, ``backoff_factor``, ``max_queue_length``, ``num_retries``,
``retry_delay``); tasks are ``oneshot`` or ``recurring``; each dispatch is a
task run. :func:`apply_run_outcome` is the single place where a run's outcome
becomes the task's next state, whatever path the outcome came by.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import orjson

from .errors import ValidationError
from .limits import MAX_DURATION, MAX_JSON_DEPTH, check_json_value, check_stored_text, check_time_range, check_whole


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 text: the form arguments are compared and stored in."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # integers beyond 64 bits: the standard library writes them the same way
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


#: ``canonical_json``'s options, and times and dataclasses (never storable) refused instead of written
_CANONICAL_CHECKED = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def storable_json(document: dict[str, Any]) -> str | None:
    """``canonical_json(document)`` in one pass that also proves it storable (what ``check_json_value`` asks of
    each value), or None when that pass cannot tell: then the caller checks each part, naming it, and writes it
    with ``canonical_json``. Every answer given is the very text ``canonical_json`` gives.

    One ``orjson`` pass writes the text and refuses, as the check does, keys other than text, sets, bytes and
    unpaired surrogates; reading the text back equal to the document rules out what it would write as something
    else (NaN and infinities as null, tuples as arrays, enumerations, UUIDs); a NUL escape in the text (or text
    that merely looks like one), or more brackets than ``MAX_JSON_DEPTH``, leaves the answer to the check."""
    try:
        text = orjson.dumps(document, option=_CANONICAL_CHECKED)
    except TypeError:
        return None
    if b"\\u0000" in text or text.count(b"[") + text.count(b"{") > MAX_JSON_DEPTH:
        return None
    if orjson.loads(text) != document:
        return None
    return text.decode()


class TaskPolicy(str, enum.Enum):
    ONESHOT = "oneshot"
    RECURRING = "recurring"


class TaskStatus(str, enum.Enum):
    NEXT_RUN_NOT_SCHEDULED = "next_run_not_scheduled"
    NEXT_RUN_SCHEDULED = "next_run_scheduled"
    COMPLETED = "completed"
    DISABLED = "disabled"


class TaskPriority(str, enum.Enum):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


#: Order in which the priority runner serves priorities.
PRIORITY_ORDER: tuple[TaskPriority, ...] = (TaskPriority.HIGH, TaskPriority.NORMAL, TaskPriority.LOW)


class TaskRunStatus(str, enum.Enum):
    SCHEDULED = "scheduled"
    STARTED = "started"
    EVENTFUL = "eventful"
    UNEVENTFUL = "uneventful"
    FAILED = "failed"
    PERMFAILED = "permfailed"
    LOST = "lost"

    @property
    def is_final(self) -> bool:
        return self not in (TaskRunStatus.SCHEDULED, TaskRunStatus.STARTED)


FINAL_RUN_STATUSES = frozenset(s for s in TaskRunStatus if s.is_final)

# Stored text to enum member, by dictionary: stores read many rows, and calling an
# Enum class per value costs more than the rest of the row's decoding.
POLICY_OF: dict[str, TaskPolicy] = {m.value: m for m in TaskPolicy}
STATUS_OF: dict[str, TaskStatus] = {m.value: m for m in TaskStatus}
RUN_STATUS_OF: dict[str, TaskRunStatus] = {m.value: m for m in TaskRunStatus}
PRIORITY_OF: dict[str | None, TaskPriority | None] = {None: None, **{m.value: m for m in TaskPriority}}


def _enum_value(enum_cls: type[enum.Enum], value: Any, field_name: str) -> Any:
    if isinstance(value, enum_cls):
        return value
    try:
        return enum_cls(value)
    except (ValueError, TypeError):
        allowed = ", ".join(m.value for m in enum_cls)
        raise ValidationError(field_name, f"one of {allowed}", value) from None


def parse_policy(value: Any) -> TaskPolicy:
    return _enum_value(TaskPolicy, value, "policy")


def parse_status(value: Any) -> TaskStatus:
    return _enum_value(TaskStatus, value, "status")


def parse_run_status(value: Any) -> TaskRunStatus:
    return _enum_value(TaskRunStatus, value, "status")


def parse_priority(value: Any) -> TaskPriority | None:
    if value is None or value == "" or (isinstance(value, str) and value.lower() == "none"):
        return None
    return _enum_value(TaskPriority, value, "priority")


#: the delay before a retry when the task type sets none (a type kept as given; the swh protocol's rule)
DEFAULT_RETRY_DELAY = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class TaskType:
    """A declared type of task and its scheduling knobs."""

    type: str
    description: str
    backend_name: str
    default_interval: timedelta | None = None
    min_interval: timedelta | None = None
    max_interval: timedelta | None = None
    backoff_factor: float | None = None
    max_queue_length: int | None = None
    num_retries: int | None = None
    retry_delay: timedelta | None = None

    def validated(self, *, strict: bool = True) -> TaskType:
        """Return self if every field can be kept; raise ValidationError naming the field otherwise.

        ``strict`` (Ostinato's own interfaces) also asks for a consistent type: a default interval
        within ``[min_interval, max_interval]``, a delay for retries, a queue of at least one. The
        swh protocol's store keeps a type without those (its ``task-type add`` makes a backoff
        factor of 1 and retries with no delay): ``strict=False`` checks only what can be stored
        and used, as given; the rules cope (:meth:`clamp`, :func:`apply_run_outcome`'s delays, a
        queue length of 0 meaning none, as in the protocol's runner)."""
        if not isinstance(self.type, str) or not self.type.strip():
            raise ValidationError("type", "a non-empty name", self.type)
        check_stored_text(self.type, "type", 200)
        if not isinstance(self.backend_name, str) or not self.backend_name.strip():
            raise ValidationError("backend_name", "a non-empty name of a registered callable", self.backend_name)
        check_stored_text(self.backend_name, "backend_name")
        if not isinstance(self.description, str):
            raise ValidationError("description", "text", self.description)
        check_stored_text(self.description, "description")
        for name in ("default_interval", "min_interval", "max_interval", "retry_delay"):
            value = getattr(self, name)
            lowest = "positive" if strict or name != "default_interval" else "zero or positive"
            if value is not None and (not isinstance(value, timedelta) or not timedelta(0) <= value <= MAX_DURATION
                                      or (value == timedelta(0) and lowest == "positive")):
                raise ValidationError(name, f"a {lowest} duration of at most {MAX_DURATION.days} days", value)
        lo, hi, default = self.min_interval, self.max_interval, self.default_interval
        if lo is not None and hi is not None and lo > hi:
            raise ValidationError("min_interval", f"at most max_interval ({hi})", lo)
        if strict and default is not None and lo is not None and default < lo:
            raise ValidationError("default_interval", f"at least min_interval ({lo})", default)
        if strict and default is not None and hi is not None and default > hi:
            raise ValidationError("default_interval", f"at most max_interval ({hi})", default)
        if self.backoff_factor is not None:
            least = 1 if strict else 0
            if (isinstance(self.backoff_factor, bool) or not isinstance(self.backoff_factor, (int, float))
                    or not least <= self.backoff_factor < math.inf or self.backoff_factor == 0):
                raise ValidationError("backoff_factor", "a finite number of at least 1 (1: a fixed interval)" if strict
                                      else "a finite positive number", self.backoff_factor)
        if self.max_queue_length is not None:
            check_whole(self.max_queue_length, "max_queue_length", 1 if strict else 0)
        if self.num_retries is not None:
            check_whole(self.num_retries, "num_retries")
            if strict and self.num_retries > 0 and self.retry_delay is None:
                raise ValidationError("retry_delay", "a positive duration when num_retries > 0", None)
        return self

    def clamp(self, interval: timedelta) -> timedelta:
        """``interval`` within [min_interval, max_interval], and never beyond ``MAX_DURATION`` (a type
        with no max_interval would otherwise grow it until the next run's time overflows)."""
        if self.min_interval is not None and interval < self.min_interval:
            interval = self.min_interval
        if self.max_interval is not None and interval > self.max_interval:
            interval = self.max_interval
        return min(interval, MAX_DURATION)

    @property
    def retries(self) -> int:
        return self.num_retries or 0

    @property
    def queue_limit(self) -> int | None:
        """The longest its queue may be; None for no limit (a ``max_queue_length`` of None, or of 0,
        which the swh protocol's runner reads as none too)."""
        return self.max_queue_length or None

    def to_dict(self) -> dict[str, Any]:
        """Under the task model's field names, durations in seconds (the CLI's ``--json``, the API's bodies)."""
        def seconds(value: timedelta | None) -> float | None:
            return None if value is None else value.total_seconds()

        return {
            "type": self.type,
            "description": self.description,
            "backend_name": self.backend_name,
            "default_interval": seconds(self.default_interval),
            "min_interval": seconds(self.min_interval),
            "max_interval": seconds(self.max_interval),
            "backoff_factor": self.backoff_factor,
            "max_queue_length": self.max_queue_length,
            "num_retries": self.num_retries,
            "retry_delay": seconds(self.retry_delay),
        }


@dataclass(frozen=True, slots=True)
class TaskArguments:
    """Positional and keyword arguments handed to the task's callable."""

    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, compact, UTF-8): equal arguments give equal text."""
        return canonical_json({"args": list(self.args), "kwargs": dict(self.kwargs)})

    def storable_json(self, field_name: str = "arguments") -> str:
        """``to_json()``, once the arguments are proven storable (``check_json_value``): a ValidationError naming
        ``<field_name>.args`` or ``<field_name>.kwargs`` otherwise. Most arguments take one pass (``storable_json``)."""
        document = {"args": list(self.args), "kwargs": dict(self.kwargs)}
        text = storable_json(document)
        if text is not None:
            return text
        check_json_value(document["args"], f"{field_name}.args")
        check_json_value(document["kwargs"], f"{field_name}.kwargs")
        return canonical_json(document)

    def to_dict(self) -> dict[str, Any]:
        return {"args": list(self.args), "kwargs": dict(self.kwargs)}

    @classmethod
    def parse(cls, value: Any, field_name: str = "arguments") -> TaskArguments:
        """Accept a TaskArguments, a dict {"args": [...], "kwargs": {...}}, or its JSON text."""
        if isinstance(value, TaskArguments):
            return value
        if value is None:
            return cls()
        if isinstance(value, (str, bytes)):
            try:
                value = json.loads(value)
            except (ValueError, RecursionError) as exc:
                why = "nested too deep" if isinstance(exc, RecursionError) else exc
                raise ValidationError(field_name, f'JSON such as {{"args": [...], "kwargs": {{...}}}} ({why})',
                                      value[:80]) from None
        if not isinstance(value, Mapping):
            raise ValidationError(field_name, 'an object {"args": [...], "kwargs": {...}}', value)
        unknown = set(value) - {"args", "kwargs"}
        if unknown:
            raise ValidationError(field_name, 'only the keys "args" and "kwargs"', sorted(unknown))
        args = value.get("args", [])
        kwargs = value.get("kwargs", {})
        if not isinstance(args, (list, tuple)):
            raise ValidationError(f"{field_name}.args", "a JSON array", args)
        if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
            raise ValidationError(f"{field_name}.kwargs", "a JSON object", kwargs)
        check_json_value(args, f"{field_name}.args")
        check_json_value(kwargs, f"{field_name}.kwargs")
        return cls(tuple(args), dict(kwargs))


@dataclass(frozen=True, slots=True)
class NewTask:
    """A task to create. ``current_interval`` defaults to the type's ``default_interval``; ``status`` is
    the one it starts in (pending by default; the swh protocol lets a caller create a task disabled)."""

    type: str
    next_run: datetime
    arguments: TaskArguments = field(default_factory=TaskArguments)
    policy: TaskPolicy = TaskPolicy.RECURRING
    priority: TaskPriority | None = None
    current_interval: timedelta | None = None
    retries_left: int | None = None
    status: TaskStatus = TaskStatus.NEXT_RUN_NOT_SCHEDULED


@dataclass(frozen=True, slots=True)
class Task:
    id: int
    type: str
    arguments: TaskArguments
    next_run: datetime
    current_interval: timedelta | None
    policy: TaskPolicy
    status: TaskStatus
    retries_left: int
    priority: TaskPriority | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "arguments": self.arguments.to_dict(),
            "next_run": self.next_run.isoformat(),
            "current_interval": self.current_interval.total_seconds() if self.current_interval is not None else None,
            "policy": self.policy.value,
            "status": self.status.value,
            "retries_left": self.retries_left,
            "priority": self.priority.value if self.priority else None,
        }


@dataclass(frozen=True, slots=True)
class TaskRun:
    id: int
    task: int
    backend_id: str | None
    scheduled: datetime | None
    started: datetime | None
    ended: datetime | None
    #: None: none was ever given (a run scheduled through the swh protocol without any; an event's metadata,
    #: even empty, makes it an object)
    metadata: Mapping[str, Any] | None
    status: TaskRunStatus

    def to_dict(self) -> dict[str, Any]:
        def iso(value: datetime | None) -> str | None:
            return value.isoformat() if value else None

        return {
            "id": self.id,
            "task": self.task,
            "backend_id": self.backend_id,
            "scheduled": iso(self.scheduled),
            "started": iso(self.started),
            "ended": iso(self.ended),
            "metadata": dict(self.metadata or {}),
            "status": self.status.value,
        }


@dataclass(frozen=True, slots=True)
class NewTaskRun:
    """A run to record as scheduled for a task, by the executor that took it (see
    :meth:`~ostinato.store.Store.schedule_task_runs`)."""

    task: int
    backend_id: str | None
    #: None: none given (kept as none, as the swh protocol's bulk scheduling keeps it)
    scheduled: datetime | None
    #: None: none given (kept as none, as the swh protocol's bulk scheduling keeps it)
    metadata: Mapping[str, Any] | None = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScheduledRun:
    """A task grabbed for dispatch together with the run recorded for it."""

    task: Task
    run: TaskRun


@dataclass(frozen=True, slots=True)
class RunEvent:
    """What an executor reports about a run: it started, or it ended with an outcome."""

    run_id: int
    status: TaskRunStatus
    at: datetime
    backend_id: str | None = None
    metadata: Mapping[str, Any] | None = None
    #: an end told with a status that is no end (``scheduled``, ``started``), which the swh protocol's store
    #: applies as told: the run's end time and that status (only with ``as_told``)
    ends: bool = False


def lost_run_events(run_ids: Sequence[int], now: datetime) -> list[RunEvent]:
    """The events that declare runs lost: no report came from their executor."""
    return [RunEvent(run_id, TaskRunStatus.LOST, now, metadata={"lost": "no report from the executor"}) for run_id in run_ids]


def prepared_task(task: NewTask, task_type: TaskType, *, clamp: bool = True) -> tuple[timedelta | None, int, str]:
    """Check the task against its type (raise ValidationError if it cannot run); its interval and retries with
    the type's defaults filled in, and its arguments' canonical JSON (``TaskArguments.storable_json``: checked
    and written in one pass). Same type, arguments, policy, priority and status is the same task. ``clamp``
    (Ostinato's rule) keeps a recurring task's interval within its type's bounds; the swh protocol's store
    keeps it as given."""
    next_run = task.next_run
    if not isinstance(next_run, datetime) or next_run.tzinfo is None:
        raise ValidationError("next_run", "a timezone-aware time", next_run)
    check_time_range(next_run, "next_run")
    if not isinstance(task.arguments, TaskArguments):
        raise ValidationError("arguments", 'an object {"args": [...], "kwargs": {...}}', task.arguments)
    arguments = task.arguments.storable_json()
    interval = task.current_interval
    if interval is not None and (not isinstance(interval, timedelta) or interval > MAX_DURATION):
        raise ValidationError("current_interval", f"a positive duration of at most {MAX_DURATION.days} days", interval)
    # a zero interval only as the type's own default (a type the swh protocol's store keeps as given)
    if task.policy is TaskPolicy.RECURRING:
        if interval is None:
            interval = task_type.default_interval
        if interval is None:
            raise ValidationError("current_interval", f"an interval (task type {task_type.type!r} has no default_interval)", None)
        if interval < _ZERO or (interval == _ZERO and interval != task_type.default_interval):
            raise ValidationError("current_interval", "a positive duration", interval)
        if clamp:
            interval = task_type.clamp(interval)
    elif interval is not None and (interval < _ZERO or (interval == _ZERO and interval != task_type.default_interval)):
        raise ValidationError("current_interval", "a positive duration", interval)
    retries = task.retries_left
    if retries is None:
        retries = task_type.retries
    check_whole(retries, "retries_left")
    if not isinstance(task.status, TaskStatus):
        raise ValidationError("status", "a task status", task.status)
    return interval, retries, arguments


_ZERO = timedelta(0)


@dataclass(frozen=True, slots=True)
class TaskChange:
    """The task's next state after a run ended."""

    status: TaskStatus
    next_run: datetime
    current_interval: timedelta | None
    retries_left: int


def apply_run_outcome(task: Task, task_type: TaskType, outcome: TaskRunStatus, ended: datetime) -> TaskChange:
    """The rules for a task whose run ended with ``outcome`` at ``ended``.

    - eventful: the interval is divided by ``backoff_factor``; uneventful: multiplied
      by it; both clamped to ``[min_interval, max_interval]``; ``next_run = ended + interval``;
      retries are refilled. A one-shot task that succeeds is completed.
    - failed / lost: a retry is consumed (``next_run = ended + retry_delay``, an hour for a type
      with none, as in the swh protocol's rule); when
      none is left a recurring task falls back to its normal interval and gets its
      retries back, a one-shot task is disabled.
    - permfailed: the task is disabled.
    """
    if not outcome.is_final:
        raise ValueError(f"apply_run_outcome needs a final outcome, got {outcome.value}")
    interval = task.current_interval
    if outcome in (TaskRunStatus.EVENTFUL, TaskRunStatus.UNEVENTFUL):
        if task.policy is TaskPolicy.ONESHOT:
            return TaskChange(TaskStatus.COMPLETED, task.next_run, interval, task.retries_left)
        interval = interval or task_type.default_interval or task_type.min_interval or timedelta(days=1)
        factor = task_type.backoff_factor
        if factor:
            interval = interval / factor if outcome is TaskRunStatus.EVENTFUL else interval * factor
        interval = task_type.clamp(interval)
        return TaskChange(TaskStatus.NEXT_RUN_NOT_SCHEDULED, ended + interval, interval, task_type.retries)
    if outcome is TaskRunStatus.PERMFAILED:
        return TaskChange(TaskStatus.DISABLED, task.next_run, interval, task.retries_left)
    # failed or lost
    if task.retries_left > 0:
        delay = task_type.retry_delay or DEFAULT_RETRY_DELAY
        return TaskChange(TaskStatus.NEXT_RUN_NOT_SCHEDULED, ended + delay, interval, task.retries_left - 1)
    if task.policy is TaskPolicy.ONESHOT:
        return TaskChange(TaskStatus.DISABLED, task.next_run, interval, 0)
    interval = interval or task_type.default_interval or timedelta(days=1)
    return TaskChange(TaskStatus.NEXT_RUN_NOT_SCHEDULED, ended + interval, interval, task_type.retries)


def fold_run_events(run: TaskRun, events: Sequence[RunEvent], *, as_told: bool = False) -> tuple[TaskRun, TaskRunStatus | None]:
    """Apply a run's events in order; return the new run and the final outcome reached, if any.

    Events for a run that is already final are ignored (a late or duplicate report
    changes nothing), so every feedback path is idempotent. ``as_told`` (the swh
    protocol's start and end, which an executor's retry of one job repeats) applies
    each event whatever came before: a start after the end makes the run started
    again, a second end ends it again (and moves its task again); metadata, even
    none, makes the run's an object.
    """
    final: TaskRunStatus | None = None
    for event in events:
        if run.status.is_final and not as_told:
            break
        if event.status is TaskRunStatus.SCHEDULED and not (as_told and event.ends):
            continue
        if as_told:
            metadata: Mapping[str, Any] | None = {**(run.metadata or {}), **(event.metadata or {})}
        else:
            metadata = {**(run.metadata or {}), **event.metadata} if event.metadata else run.metadata
        backend_id = event.backend_id or run.backend_id
        if as_told and event.ends and not event.status.is_final:
            run = TaskRun(run.id, run.task, backend_id, run.scheduled, run.started, event.at, metadata, event.status)
            continue
        if event.status is TaskRunStatus.STARTED:
            if run.status is TaskRunStatus.SCHEDULED or as_told:
                run = TaskRun(run.id, run.task, backend_id, run.scheduled, event.at, run.ended, metadata, TaskRunStatus.STARTED)
            continue
        run = TaskRun(run.id, run.task, backend_id, run.scheduled, run.started, event.at, metadata, event.status)
        final = event.status
    return run, final


@dataclass(frozen=True, slots=True)
class RunEventPlan:
    """What a batch of run events changes: runs to rewrite, tasks to move, ids nobody knows."""

    runs: list[TaskRun]
    tasks: list[tuple[int, TaskChange]]
    finished: int
    unknown_runs: list[int]


def plan_run_events(
    current: Mapping[int, tuple[TaskRun, Task]],
    task_types: Mapping[str, TaskType],
    events: Sequence[RunEvent],
    *,
    as_told: bool = False,
) -> RunEventPlan:
    """Fold a batch of events onto the stored runs and their tasks.

    ``current`` maps run id to the stored (run, task). Within a run, ``started``
    is applied before any final event, so a batch that carries both in either
    order gives the same result. A task moves only if it is still waiting on a
    run (``next_run_scheduled``): a task disabled meanwhile stays disabled.
    ``as_told``: each event applies as told (:func:`fold_run_events`), in order.
    """
    by_run: dict[int, list[RunEvent]] = {}
    for event in events:
        by_run.setdefault(event.run_id, []).append(event)
    runs: list[TaskRun] = []
    tasks: list[tuple[int, TaskChange]] = []
    unknown: list[int] = []
    finished = 0
    for run_id, run_events in by_run.items():
        stored = current.get(run_id)
        if stored is None:
            unknown.append(run_id)
            continue
        run, task = stored
        if not as_told:
            run_events.sort(key=lambda e: e.status.is_final)
        new_run, final = fold_run_events(run, run_events, as_told=as_told)
        if new_run == run:
            continue
        runs.append(new_run)
        if final is not None:
            finished += 1
            if task.status is TaskStatus.NEXT_RUN_SCHEDULED:
                assert new_run.ended is not None
                tasks.append((task.id, apply_run_outcome(task, task_types[task.type], final, new_run.ended)))
    return RunEventPlan(runs, tasks, finished, unknown)
