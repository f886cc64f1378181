"""Where callables come from: explicit registration, the ``ostinato.tasks`` entry
point group, or an import path (``package.module:function`` or ``package.module.function``).

A task type's ``backend_name`` names its callable. A callable returns a result
that says whether the run was eventful (see :func:`outcome_of`); raising means
failed, raising :class:`PermanentFailure` means permfailed.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping

from ..domain.tasks import TaskRunStatus

ENTRY_POINT_GROUP = "ostinato.tasks"


class PermanentFailure(Exception):
    """Raised by a task callable when retrying cannot help: the run is ``permfailed``."""


class UnknownCallable(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class TaskResult:
    """An explicit result: eventful or not, with metadata kept on the run."""

    eventful: bool
    metadata: Mapping[str, Any] = field(default_factory=dict)


def outcome_of(result: Any) -> tuple[TaskRunStatus, dict[str, Any]]:
    """Read a callable's return value.

    ``None`` → uneventful; ``True``/``False`` → eventful or not; a TaskResult;
    ``"eventful"``/``"uneventful"``; or a dict with ``"status"`` (the seed's
    loaders return ``{"status": "eventful"}``) whose other keys become metadata.
    """
    if result is None:
        return TaskRunStatus.UNEVENTFUL, {}
    if isinstance(result, bool):
        return (TaskRunStatus.EVENTFUL if result else TaskRunStatus.UNEVENTFUL), {}
    if isinstance(result, TaskResult):
        return (TaskRunStatus.EVENTFUL if result.eventful else TaskRunStatus.UNEVENTFUL), dict(result.metadata)
    if isinstance(result, str) and result in ("eventful", "uneventful"):
        return TaskRunStatus(result), {}
    if isinstance(result, Mapping) and result.get("status") in ("eventful", "uneventful"):
        return TaskRunStatus(result["status"]), {k: v for k, v in result.items() if k != "status"}
    raise TypeError(
        "a task callable must return None, a bool, a TaskResult, 'eventful'/'uneventful' "
        f"or a dict with status eventful/uneventful; got {result!r}"
    )


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
