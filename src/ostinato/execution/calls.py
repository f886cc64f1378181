"""Calling a task's callable, a loader, or a schedule's job, and reading what came back.

Every executor (the embedded worker pool, a Celery worker, the deadline
scheduler's own threads) calls user code through these three functions, so a
task run, a visit and a schedule run mean the same thing wherever they ran:

- :func:`call_task` runs one task run: its outcome (eventful, uneventful,
  failed, permfailed) and metadata, and, for a "save code now" run (a
  ``load-<visit_type>`` task whose keyword arguments have a ``url``), the visit
  status the loader contract reads from the result;
- :func:`call_loader` runs one origin visit and returns its visit status (none
  when the loader, like swh's, says only whether its run was eventful);
- :func:`call_schedule_job` runs a schedule's job, handing it the ``stop``
  event when it takes one, and reads the items it did and failed (``items_done``,
  ``items_failed``) from what it returns.

None of them raises for what the user code does: a failure is an outcome.
"""

from __future__ import annotations

import inspect
import os
import threading
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..domain.clock import Clock
from ..domain.run_items import items_of
from ..domain.tasks import TaskArguments, TaskRunStatus
from ..domain.visit_policies import visit_type_of_task_type
from ..domain.visits import VisitStatus
from .registry import PermanentFailure, TaskRegistry, UnknownCallable, outcome_of, visit_status_of


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """How a task run ended, and the visit it was if it was one."""

    status: TaskRunStatus
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: a "save code now" run's visit status, to feed back too
    visit_status: VisitStatus | None = None


def _error_text(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, UnknownCallable) else f"{type(exc).__name__}: {exc}"


#: the innermost frames of a failure's traceback kept with the run (file:line in function: code)
TRACEBACK_FRAMES = 3
#: frames of Ostinato's own code (the call of the job) are left out
_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _error_detail(exc: BaseException) -> dict[str, Any]:
    """What a failed run keeps of its exception: ``error`` (``Type: message``) and ``traceback``, the
    last frames, innermost last (none for a callable that could not be found: the error says it all)."""
    detail: dict[str, Any] = {"error": _error_text(exc)}
    frames = [] if isinstance(exc, UnknownCallable) else \
        [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_OURS)][-TRACEBACK_FRAMES:]
    if frames:
        detail["traceback"] = [f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" + (f": {f.line}" if f.line else "")
                               for f in frames]
    return detail


def save_code_now_url(task_type: str, arguments: TaskArguments) -> str | None:
    """The url of a run that is a visit ("save code now"): a loader's task with a ``url`` keyword."""
    url = arguments.kwargs.get("url")
    if visit_type_of_task_type(task_type) is None or not isinstance(url, str) or not url.strip():
        return None
    return url


def call_task(registry: TaskRegistry, backend_name: str, task_type: str, arguments: TaskArguments,
              clock: Clock) -> TaskOutcome:
    """Run one task run's callable and read its result (see :mod:`ostinato.execution.registry`)."""
    url = save_code_now_url(task_type, arguments)
    kwargs = dict(arguments.kwargs)
    if url is not None:  # the loader contract's keywords, as a grab would pass them
        kwargs = {"lister_name": None, "lister_instance_name": None, **kwargs}
    result: Any = None
    error: BaseException | None = None
    status = TaskRunStatus.FAILED
    metadata: dict[str, Any] = {}
    try:
        fn = registry.resolve(backend_name)
        result = fn(*arguments.args, **kwargs)
        if url is None:
            status, metadata = outcome_of(result)
    except PermanentFailure as exc:
        error, status, metadata = exc, TaskRunStatus.PERMFAILED, _error_detail(exc)
    except Exception as exc:  # a task's failure must never kill its worker
        error, status, metadata = exc, TaskRunStatus.FAILED, _error_detail(exc)
    if url is None:
        return TaskOutcome(status, metadata)
    visit_type = visit_type_of_task_type(task_type)
    assert visit_type is not None
    loaded = visit_status_of(result, url=url, visit_type=visit_type, date=clock.now(), error=error)
    if not isinstance(error, PermanentFailure):
        status = loaded.run_status
    metadata = {**loaded.metadata, **metadata} if error is not None else dict(loaded.metadata)
    return TaskOutcome(status, metadata, loaded.status)


def call_loader(registry: TaskRegistry, backend_name: str, loader_kwargs: Mapping[str, Any], *, visit_type: str,
                clock: Clock) -> tuple[VisitStatus | None, Mapping[str, Any]]:
    """Visit one origin: the loader's visit status, and the metadata (``error`` on failure).

    The status is None when the loader said only how its run went, as swh's loaders do
    (docs/reference/swh-compat-celery.md): the archive's journal reports that visit."""
    result: Any = None
    error: BaseException | None = None
    try:
        fn = registry.resolve(backend_name)
        result = fn(**loader_kwargs)
    except Exception as exc:  # a loader's failure must never kill its worker
        error = exc
    loaded = visit_status_of(result, url=loader_kwargs["url"], visit_type=visit_type, date=clock.now(), error=error)
    return loaded.status, loaded.metadata


def call_schedule_job(registry: TaskRegistry, backend_name: str, arguments: TaskArguments,
                      stop: threading.Event) -> tuple[bool, dict[str, Any]]:
    """Run a schedule's job: (succeeded, detail). A job that takes ``stop`` gets the event to watch. A job
    whose mapping says ``items_done`` and ``items_failed`` (``domain.run_items``) has them in the detail,
    checked: a negative count, or one that is not a whole number, fails the run with an error naming it."""
    detail: dict[str, Any] = {}
    try:
        fn = registry.resolve(backend_name)
        kwargs = dict(arguments.kwargs)
        try:
            takes_stop = "stop" in inspect.signature(fn).parameters
        except (TypeError, ValueError):  # a callable without a signature (a builtin)
            takes_stop = False
        if takes_stop:
            kwargs["stop"] = stop
        status, metadata = outcome_of(fn(*arguments.args, **kwargs))
        items_of(metadata)  # items_done and items_failed: a count at fault fails the run, naming it
        detail.update(metadata)
        return status in (TaskRunStatus.EVENTFUL, TaskRunStatus.UNEVENTFUL), detail
    except Exception as exc:  # a job's failure must never kill the scheduler or the worker
        detail.update(_error_detail(exc))
        return False, detail
