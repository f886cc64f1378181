"""Where callables come from: explicit registration, the ``ostinato.tasks`` entry
point group, or an import path (``package.module:function`` or ``package.module.function``),
and how their results are read.

A task type's ``backend_name`` names its callable. A callable returns a result
that says whether the run was eventful (see :func:`outcome_of`); raising means
failed, raising :class:`PermanentFailure` means permfailed.

Loaders: the callable of the task type ``load-<visit_type>`` visits origins.
It is called with the keyword arguments of ``NextVisit.loader_kwargs()``:
``url``, ``lister_name``, ``lister_instance_name`` and the lister's extra
loader arguments (a "save code now" task passes its own keyword arguments,
``url`` among them). It returns a mapping::

    {"status": "full" | "partial" | "not_found" | "failed",
     "snapshot": "<hex>" | bytes | None,
     "visit": 3,            # optional, the archive's visit number (default 0)
     "changes": 12,         # optional, changes found since the last snapshot (new commits), when known
     "change_times": [...], # optional, the change times found since the previous visit (at most 64)
     "newest_change_at": t} # optional, the newest change's time (times: aware datetimes or ISO 8601)

Raising means ``failed``; raising :class:`OriginNotFound` means ``not_found``.
A bad return value (not a mapping, an unknown status, a bad snapshot, visit
number or change time) counts as ``failed`` and is logged with the field at fault.
:func:`visit_status_of` turns all of this into the journal's
:class:`~ostinato.domain.visits.VisitStatus`; ``full``/``partial`` without a
snapshot count as failed, as in the feedback loop.

swh's loaders and listers (docs/reference/swh-compat-celery.md) return their
run's outcome instead: ``{"status": "eventful" | "uneventful" | "failed"}``,
or ``{"status": "success", "eventful": true | false}``, other keys alongside.
Both readers take it: the run ends that way, and a loader's visit has no
status from its return value (the archive's journal reports the visit).
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import entry_points
from typing import Any

from ..domain.errors import ValidationError
from ..domain.tasks import TaskRunStatus
from ..domain.visits import JournalStatus, VisitOutcome, VisitStatus, parse_visit_status

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ostinato.tasks"


class PermanentFailure(Exception):
    """Raised by a task callable when retrying cannot help: the run is ``permfailed``."""


class OriginNotFound(Exception):
    """Raised by a loader when the origin does not exist (any more): the visit is ``not_found``."""


class UnknownCallable(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class TaskResult:
    """An explicit result: eventful or not, with metadata kept on the run."""

    eventful: bool
    metadata: Mapping[str, Any] = field(default_factory=dict)


def swh_run_outcome(result: Any) -> tuple[TaskRunStatus, dict[str, Any]] | None:
    """The run's outcome a swh task's result says (docs/reference/swh-compat-celery.md), None if it is not one.

    ``{"status": "eventful" | "uneventful" | "failed", ...}`` or ``{"status": "success", "eventful": bool, ...}``;
    the other keys become metadata (a failure's ``error`` among them).
    """
    if not isinstance(result, Mapping):
        return None
    status = result.get("status")
    rest = {k: v for k, v in result.items() if k != "status"}
    if status in ("eventful", "uneventful", "failed"):
        return TaskRunStatus(status), rest
    if status == "success" and isinstance(result.get("eventful"), bool):
        rest.pop("eventful")
        return (TaskRunStatus.EVENTFUL if result["eventful"] else TaskRunStatus.UNEVENTFUL), rest
    return None


def outcome_of(result: Any) -> tuple[TaskRunStatus, dict[str, Any]]:
    """Read a callable's return value.

    ``None`` → uneventful; ``True``/``False`` → eventful or not; a TaskResult;
    ``"eventful"``/``"uneventful"``; or a dict in the shape swh's tasks return
    (:func:`swh_run_outcome`: ``{"status": "eventful"}``, ``{"status": "failed", "error": …}``)
    whose other keys become metadata; a dict without ``status`` is eventful unless empty, as
    swh-scheduler reads its listers' ``{"pages": 3, "origins": 120}``.
    """
    if result is None:
        return TaskRunStatus.UNEVENTFUL, {}
    if isinstance(result, bool):
        return (TaskRunStatus.EVENTFUL if result else TaskRunStatus.UNEVENTFUL), {}
    if isinstance(result, TaskResult):
        return (TaskRunStatus.EVENTFUL if result.eventful else TaskRunStatus.UNEVENTFUL), dict(result.metadata)
    if isinstance(result, str) and result in ("eventful", "uneventful"):
        return TaskRunStatus(result), {}
    swh = swh_run_outcome(result)
    if swh is not None:
        return swh
    if isinstance(result, Mapping) and "status" not in result:  # swh's listers return {"pages": …, "origins": …}
        return (TaskRunStatus.EVENTFUL if result else TaskRunStatus.UNEVENTFUL), dict(result)
    raise TypeError(
        "a task callable must return None, a bool, a TaskResult, 'eventful'/'uneventful' "
        f"or a dict with status eventful, uneventful or failed; got {result!r}"
    )


LOADER_STATUSES = (JournalStatus.FULL, JournalStatus.PARTIAL, JournalStatus.NOT_FOUND, JournalStatus.FAILED)
_LOADER_STATUS_FORMS = ", ".join(s.value for s in LOADER_STATUSES)


@dataclass(frozen=True, slots=True)
class LoaderResult:
    """A visit as the feedback loop sees it, and what the run that made it keeps as metadata."""

    #: None when the loader said only how its run went (swh's loaders): the journal reports the visit
    status: VisitStatus | None
    metadata: Mapping[str, Any]
    #: the run's outcome the loader said, when it said one instead of a visit status
    said: TaskRunStatus | None = None

    @property
    def run_status(self) -> TaskRunStatus:
        """The outcome of a task run that was this visit: success eventful, not found permfailed
        (or what the loader said)."""
        if self.status is None:
            assert self.said is not None
            return self.said
        outcome = self.status.outcome
        if outcome is VisitOutcome.SUCCESSFUL:
            return TaskRunStatus.EVENTFUL
        if outcome is VisitOutcome.NOT_FOUND:
            return TaskRunStatus.PERMFAILED
        return TaskRunStatus.FAILED


def visit_status_of(result: Any, *, url: str, visit_type: str, date: datetime,
                    error: BaseException | None = None) -> LoaderResult:
    """The one conversion of a loader's return value (or of what it raised) into a visit status.

    ``date`` is when the visit ended (the caller's clock). Never raises: a bad
    result is logged, naming the field at fault, and counts as ``failed``.
    """
    def failed(reason: str, status: JournalStatus = JournalStatus.FAILED) -> LoaderResult:
        return LoaderResult(VisitStatus(url, 0, visit_type, status, date, None), {"visit_status": status.value, "error": reason})

    if isinstance(error, OriginNotFound):
        return failed(f"{type(error).__name__}: {error}", JournalStatus.NOT_FOUND)
    if error is not None:
        return failed(f"{type(error).__name__}: {error}")
    said = swh_run_outcome(result)
    if said is not None and said[0] is not TaskRunStatus.FAILED:  # swh's "failed" is a failed visit in both
        return LoaderResult(None, said[1], said[0])
    try:
        if not isinstance(result, Mapping):
            raise ValidationError("result", "a mapping with status, snapshot and visit", type(result).__name__)
        if result.get("status") not in [s.value for s in LOADER_STATUSES]:
            raise ValidationError("status", f"one of {_LOADER_STATUS_FORMS}", result.get("status"))
        visit = result.get("visit")
        status = parse_visit_status({"origin": url, "type": visit_type, "date": date, "status": result["status"],
                                     "visit": 0 if visit is None else visit, "snapshot": result.get("snapshot"),
                                     "changes": result.get("changes"), "change_times": result.get("change_times"),
                                     "newest_change_at": result.get("newest_change_at")})
    except ValidationError as exc:
        log.error("loader of %s (%s) returned a bad value, counted as failed: %s", url, visit_type, exc)
        return failed(f"bad loader result: {exc}")
    metadata: dict[str, Any] = {"visit_status": status.status.value, "visit": status.visit}
    if status.snapshot is not None:
        metadata["snapshot"] = status.snapshot.hex()
    if isinstance(result.get("error"), str):  # what a failed swh loader says
        metadata["error"] = result["error"]
    return LoaderResult(status, metadata)


class TaskRegistry:
    """Resolves backend names to callables, caching what it found."""

    def __init__(self) -> None:
        self._callables: dict[str, Callable[..., Any]] = {}
        self._lock = threading.Lock()

    def register(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        with self._lock:
            self._callables[name] = fn
        return fn

    def task(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: ``@registry.task("load-git")``."""
        return lambda fn: self.register(name, fn)

    def resolve(self, name: str) -> Callable[..., Any]:
        with self._lock:
            found = self._callables.get(name)
        if found is not None:
            return found
        found = self._from_entry_points(name) or self._from_import_path(name)
        if found is None:
            raise UnknownCallable(
                f"no callable for backend_name {name!r}: register it, declare it in the "
                f"{ENTRY_POINT_GROUP!r} entry points, or use an import path 'package.module:function'"
            )
        return self.register(name, found)

    def import_problem(self, name: str) -> str | None:
        """Why ``name`` resolves to no callable in this process, naming the import error; None when it
        resolves. Imports the module, as :meth:`resolve` would."""
        with self._lock:
            if name in self._callables:
                return None
        try:
            if self._from_entry_points(name) is not None:
                return None
        except Exception as exc:  # a plugin's entry point that fails to load
            return f"its {ENTRY_POINT_GROUP!r} entry point fails to load ({type(exc).__name__}: {exc})"
        if ":" in name:
            module_name, _, attr = name.partition(":")
        elif "." in name:
            module_name, _, attr = name.rpartition(".")
        else:
            return (f"it is not registered, not an {ENTRY_POINT_GROUP!r} entry point, "
                    "and not an import path 'package.module:function'")
        try:
            target: Any = importlib.import_module(module_name)
        except Exception as exc:  # ImportError, and whatever the module raises as it is imported
            return f"{type(exc).__name__}: {exc}"
        for part in attr.split("."):
            if not hasattr(target, part):
                return f"module {module_name!r} has no attribute {attr!r}"
            target = getattr(target, part)
        return None if callable(target) else f"{name} is not callable"

    @staticmethod
    def _from_entry_points(name: str) -> Callable[..., Any] | None:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name == name:
                return ep.load()
        return None

    @staticmethod
    def _from_import_path(name: str) -> Callable[..., Any] | None:
        if ":" in name:
            module_name, _, attr = name.partition(":")
        elif "." in name:
            module_name, _, attr = name.rpartition(".")
        else:
            return None
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return None
        target: Any = module
        for part in attr.split("."):
            target = getattr(target, part, None)
            if target is None:
                return None
        return target if callable(target) else None


#: The process-wide registry used by default.
registry = TaskRegistry()
task = registry.task
