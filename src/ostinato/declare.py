"""Schedules declared in Python, on the functions they run (see docs/reference/schedules.md)::

    import ostinato

    jobs = ostinato.Schedules("reports")

    @jobs.periodic(every="1h", cooldown="10m")
    def cleanup(directory="/tmp"): ...

    @jobs.calendar("0 2 * * *", tz="Europe/Paris", max_duration="4h", catch_up=ostinato.CatchUp.all(3))
    def nightly_report(): ...

    if __name__ == "__main__":
        jobs.run()          # the settings' database (the embedded SQLite file by default), until Ctrl-C

The code is the source of truth: :meth:`Schedules.sync` (which :meth:`Schedules.run` calls first)
creates or updates the declared schedules and pauses those removed from the code, in one
transaction (``domain.declarations``: the newest declarations win over an older process). The
schedules then run on the deadline scheduler, in this process and in any number of others
(``ostinato scheduler``, or more ``run()``), each run exactly once at a time.

Each function is a task type named by its import path (``module:function``), which the scheduler
resolves to the function. A function of a script run as ``python jobs.py`` (module ``__main__``) is
named by the module that file is imported as (``jobs:cleanup``, found from ``sys.path`` as an import
would find it), so that an ``ostinato scheduler`` that can import ``jobs`` runs it too; a function
of ``__main__`` with no such file (``python -`` from stdin, a notebook) is refused, saying how to fix
it. Errors name the field and the schedule.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .config import local_actor
from .domain.blackouts import BlackoutPeriod, parse_blackout_periods
from .domain.clock import Clock, SystemClock
from .domain.declarations import Declaration, DeclarationOutcome
from .domain.durations import parse_duration
from .domain.errors import ConflictError, ValidationError
from .domain.firings import CatchUp
from .domain.schedules import RunMode, Schedule, ScheduleKind, ScheduleTiming
from .domain.tasks import TaskArguments, TaskType
from .store import Store

if TYPE_CHECKING:
    from .config import Settings
    from .services.deadline_scheduler import DeadlineScheduler

__all__ = ["CatchUp", "DeclarationOutcome", "Schedules"]

F = TypeVar("F", bound=Callable[..., Any])
Duration = str | int | float | timedelta
#: a declaration's created_at until the store gives it one (the store keeps a stored schedule's own)
_UNSTORED = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Job:
    """A declared function: the task type that runs it."""

    path: str
    fn: Callable[..., Any]


def job_path(fn: Callable[..., Any]) -> str:
    """A function's import path, ``module:qualified.name``: its task type and the name it resolves by
    (for a function of ``__main__``, the module its script is imported as: see the module's docstring)."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not callable(fn) or not module or not qualname or "<locals>" in qualname or "<lambda>" in qualname:
        raise ValidationError("function", "a function defined at the top level of a module (not a lambda nor a "
                                          "nested function: the scheduler finds it by its import path)", fn)
    if module == "__main__":
        module = main_module_name()
        if module is None:
            raise ValidationError("function", "a function of a module other processes can import; this one is in "
                                  "__main__ with no .py file on sys.path (stdin, a notebook): define it in a file "
                                  "such as jobs.py and run `python jobs.py`, or import it from there", qualname)
    return f"{module}:{qualname}"


def main_module_name() -> str | None:
    """The name ``__main__`` is imported as by another process: its ``-m`` name, else its file's path
    under the first ``sys.path`` entry that holds it (``python jobs.py``: ``jobs``); None if it has none."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and not spec.name.endswith("__main__"):
        return spec.name
    file = getattr(main, "__file__", None)
    if not file or not file.endswith(".py"):
        return None
    script = Path(file).resolve().with_suffix("")
    for entry in sys.path:
        try:
            parts = script.relative_to(Path(entry or os.getcwd()).resolve()).parts
        except (ValueError, OSError):
            continue
        if parts and all(part.isidentifier() for part in parts):
            return ".".join(parts)
    return None


class Schedules:
    """A set of schedules declared in code, under a name (its source: ``python:<name>``)."""

    def __init__(self, name: str):
        self.source = f"python:{name}"
        Declaration(self.source, ()).validated()  # the name, checked now (field "source")
        self._schedules: dict[str, Schedule] = {}
        self._jobs: dict[str, _Job] = {}

    # -- declaring -------------------------------------------------------------
    def periodic(self, every: Duration, *, cooldown: Duration | None = None, **options: Any) -> Callable[[F], F]:
        """Keep the function's work at most ``every`` stale (a run starts and completes within each such
        period). Without ``cooldown`` it runs once a period, starting a tenth of the period before it
        must (as ``schedule add --every`` alone); with one, it waits that long after a good run (``"0s"``:
        back to back). Options: see :meth:`_declare`."""
        def declare(fn: F) -> F:
            name = self._name(fn, options)
            timing = _checked(name, lambda: dict(
                kind=ScheduleKind.PERIODIC, scheduling_period=parse_duration(every, "scheduling_period"),
                cooldown_duration=None if cooldown is None else parse_duration(cooldown, "cooldown_duration",
                                                                                 allow_zero=True)))
            return self._declare(fn, name, timing, options)
        return declare

    def calendar(self, rule: str, *, max_duration: Duration, tz: str = "UTC", **options: Any) -> Callable[[F], F]:
        """Start the function at each fire time of ``rule`` (cron, systemd calendar event or RRULE) in the
        zone ``tz``, to complete within ``max_duration`` of it. Options: see :meth:`_declare`."""
        def declare(fn: F) -> F:
            name = self._name(fn, options)
            timing = _checked(name, lambda: dict(
                kind=ScheduleKind.CALENDAR, cron_schedule=rule, tz=tz,
                cron_max_schedule_duration=parse_duration(max_duration, "cron_max_schedule_duration")))
            return self._declare(fn, name, timing, options)
        return declare

    def _declare(self, fn: F, name: str, timing: dict[str, Any], options: Mapping[str, Any]) -> F:
        """Options of either kind: ``name`` (default: the function's, ``_`` as ``-``), ``args`` and
        ``kwargs`` (its arguments), ``catch_up`` (a :class:`CatchUp` or ``latest``, ``skip``, ``all:N``;
        calendar only), ``blackout`` (daily ``HH:MM-HH:MM`` windows in ``tz``), ``dont_run_on`` (node
        names), ``max_expected`` and ``max_allowed`` (durations), ``retry_backoff`` (durations after
        failure 1, 2, 3 or more), ``mode`` (``run``, or ``submit`` to queue a task for the runner),
        ``tz`` (periodic: the zone of the blackouts), ``enabled``."""
        try:
            path = job_path(fn)
        except ValidationError as refused:
            if getattr(fn, "__module__", None) == "__main__":  # a typo in the schedule's own fields is told first
                _checked(name, lambda: _schedule(name, f"__main__:{fn.__qualname__}", timing, options))
            raise refused.at(f"schedule {name}") from None
        schedule = _checked(name, lambda: _schedule(name, path, timing, options))
        if name in self._schedules:
            raise ValidationError("name", "each schedule declared once", name, record=f"schedule {name}")
        self._schedules[name] = schedule
        self._jobs[path] = _Job(path, fn)
        return fn

    def _name(self, fn: Callable[..., Any], options: Mapping[str, Any]) -> str:
        name = options.get("name") or getattr(fn, "__name__", "").replace("_", "-")
        return name if isinstance(name, str) else str(name)

    @property
    def schedules(self) -> tuple[Schedule, ...]:
        """The declared schedules, by name."""
        return tuple(self._schedules[name] for name in sorted(self._schedules))

    def declaration(self, *, force: bool = False) -> Declaration:
        return Declaration(self.source, self.schedules, force).validated()

    # -- applying and running --------------------------------------------------
    def sync(self, store: Store, *, clock: Clock | None = None, timing: ScheduleTiming = ScheduleTiming(),
             force: bool = False) -> DeclarationOutcome:
        """Make the store hold what the code declares: the task types of the functions, then the
        schedules in one transaction (created, updated, the removed ones paused). With ``force``, these
        declarations win even over newer ones (a deliberate roll back)."""
        self.register()
        now = (clock or SystemClock()).now()
        for job in self._jobs.values():
            _ensure_task_type(store, job, self.source)
        return store.apply_declarations(self.declaration(force=force), now, timing)

    def run_now(self, job: Callable[..., Any] | str, store: Store, *, clock: Clock | None = None,
                timing: ScheduleTiming = ScheduleTiming(), actor: str | None = None) -> Schedule:
        """Ask for a run of a declared schedule (its function, or its name) as soon as a scheduler can:
        ``ostinato schedule run-now``'s rule (never beside a run in progress; a blackout is waited out).
        The audit trail names ``actor``, by default this process's user and host."""
        names = {self._jobs[s.task_type].fn: s.name for s in self._schedules.values() if s.task_type in self._jobs}
        name = job if isinstance(job, str) else names.get(job)
        if name not in self._schedules:
            raise ValidationError("job", f"a schedule declared in {self.source} (or its function)",
                                  getattr(job, "__qualname__", job))
        return store.request_schedule_run(name, (clock or SystemClock()).now(), timing, actor=actor or local_actor())

    def register(self, registry: Any = None) -> None:
        """Make each function resolvable by its import path in ``registry`` (the default one)."""
        from .execution.registry import registry as default_registry

        target = registry or default_registry
        for job in self._jobs.values():
            target.register(job.path, job.fn)

    def run(self, db: str | None = None, *, node: str | None = None, instance: str | None = None,
            capacity: int = 4, once: bool = False, settings: Settings | None = None, clock: Clock | None = None,
            stop: threading.Event | None = None, force: bool = False) -> DeadlineScheduler:
        """Sync, then run the schedules in this process until ``stop`` is set (or Ctrl-C); ``once``:
        start what is due, wait for it, and return. ``db`` defaults to the settings' (``ostinato.toml``,
        ``OSTINATO_DB``: the embedded SQLite file unless set); ``node`` to the settings' (the host name).
        ``instance`` names this scheduler on its node (default: the source and the process id); give a
        stable one to have a restart end at once the runs its predecessor left (else the steal does)."""
        from .config import Settings
        from .services.deadline_scheduler import DeadlineScheduler
        from .store import open_store

        settings = settings or Settings.load()
        clock = clock or SystemClock()
        store = open_store(db or settings.db)
        try:
            _prepare(store)
            outcome = self.sync(store, clock=clock, timing=settings.schedule_timing(), force=force)
            _report(outcome)
            scheduler = DeadlineScheduler(store, clock, node=node or settings.node,
                                          instance=instance or f"{self.source}:{os.getpid()}",
                                          capacity=capacity, timing=settings.schedule_timing(),
                                          rule=settings.schedule_pick_rule())
            _drive(scheduler, once, stop)
            return scheduler
        finally:
            store.close()


def _checked(name: str, build: Callable[[], Any]) -> Any:
    """``build()``, its ValidationError located at the schedule."""
    try:
        return build()
    except ValidationError as exc:
        raise exc.at(f"schedule {name}") from None


def _durations(values: Iterable[Duration] | None, field: str) -> tuple[timedelta, ...] | None:
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValidationError(field, "a list of durations", values)
    return tuple(parse_duration(v, f"{field}[{i}]", allow_zero=True) for i, v in enumerate(values))


def _blackouts(values: Sequence[str] | None) -> tuple[BlackoutPeriod, ...]:
    periods = []
    for index, value in enumerate(values or ()):
        start, sep, end = value.partition("-") if isinstance(value, str) else ("", "", "")
        if not sep:
            raise ValidationError(f"blackout[{index}]", "HH:MM-HH:MM (a daily window in the schedule's zone)", value)
        periods.append({"start": start.strip(), "end": end.strip()})
    return parse_blackout_periods(periods)


_OPTIONS = {"name", "args", "kwargs", "catch_up", "blackout", "dont_run_on", "max_expected", "max_allowed",
            "retry_backoff", "mode", "tz", "enabled"}


def _schedule(name: str, path: str, timing: dict[str, Any], options: Mapping[str, Any]) -> Schedule:
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ValidationError(unknown[0], f"one of the options {', '.join(sorted(_OPTIONS))}", options[unknown[0]])
    args, kwargs = options.get("args", ()), options.get("kwargs") or {}
    if isinstance(args, (str, bytes)) or not isinstance(args, (list, tuple)):
        raise ValidationError("args", "a list of positional arguments", args)
    if not isinstance(kwargs, Mapping):
        raise ValidationError("kwargs", "a mapping of keyword arguments", kwargs)
    mode = options.get("mode", "run")
    if mode not in (RunMode.RUN.value, RunMode.SUBMIT.value, RunMode.RUN, RunMode.SUBMIT):
        raise ValidationError("mode", "run or submit", mode)
    extra = {"tz": options["tz"]} if "tz" in options else {}
    return Schedule(
        name=name, task_type=path, created_at=_UNSTORED, arguments=TaskArguments(tuple(args), dict(kwargs)),
        mode=RunMode(mode), catch_up=CatchUp.parse(options.get("catch_up", "latest")),
        blackout_periods=_blackouts(options.get("blackout")), dont_run_on_nodes=tuple(options.get("dont_run_on", ())),
        max_expected_duration=None if options.get("max_expected") is None
        else parse_duration(options["max_expected"], "max_expected_duration"),
        max_allowed_duration=None if options.get("max_allowed") is None
        else parse_duration(options["max_allowed"], "max_allowed_duration"),
        retry_backoff=_durations(options.get("retry_backoff"), "retry_backoff"),
        enabled=options.get("enabled", True), **timing, **extra,
    ).validated()


def _ensure_task_type(store: Store, job: _Job, source: str) -> None:
    """The task type of a declared function (its import path), created when missing."""
    if store.get_task_type(job.path) is not None:
        return
    try:
        store.create_task_type(TaskType(job.path, f"{job.path} (declared by {source})", job.path))
    except ConflictError:  # another process created it meanwhile
        pass


def _prepare(store: Store) -> None:
    """A fresh embedded database gets its schema; any other must be at this version."""
    if store.schema_state().current is None and store.dialect == "sqlite":
        store.init_schema()
    store.check_schema()


def _report(outcome: DeclarationOutcome) -> None:
    import logging

    log = logging.getLogger("ostinato.declare")
    if not outcome.applied:
        log.warning("%s: declarations %s not applied: newer ones (%s, first seen %s) are in the store",
                    outcome.source, outcome.fingerprint, outcome.newest, outcome.newest_seen_at.isoformat())
        return
    log.info("%s: declarations %s applied: %d created, %d updated, %d paused, %d unchanged", outcome.source,
             outcome.fingerprint, len(outcome.created), len(outcome.updated), len(outcome.paused),
             len(outcome.unchanged))


def _drive(scheduler: DeadlineScheduler, once: bool, stop: threading.Event | None) -> None:
    if once:
        scheduler.start()
        scheduler.run_once()
        scheduler.wait_runs()
        return
    stop = stop or threading.Event()
    try:
        scheduler.run_forever(stop)
    except KeyboardInterrupt:
        stop.set()
        scheduler.stop_runs()
