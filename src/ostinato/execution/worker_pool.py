"""The embedded executor: a pool of worker threads in the scheduler's own process.

It runs two kinds of work from one priority queue (prioritised work first):

- **task runs**: a worker calls the task type's callable with the task's
  arguments; every start and outcome goes to a reporter thread that hands
  batches of :class:`RunEvent` to ``report`` (the store's ``record_run_events``);
- **origin visits** (:meth:`EmbeddedExecutor.submit_visits`): a worker calls the
  loader of ``load-<visit_type>`` with ``NextVisit.loader_kwargs()`` and the
  reporter hands batches of :class:`VisitStatus` to ``report_visits`` (the
  store's ``record_visit_statuses``). The loader contract is in
  :mod:`ostinato.execution.registry`.

Visits and task runs of one task type share its queue: :meth:`waiting` counts
both. A task run of a ``load-*`` type whose keyword arguments have a ``url`` (a
"save code now" request) is a visit too: its loader gets ``lister_name`` and
``lister_instance_name`` (None unless the task gives them), its result is read
by the loader contract and also fed back as a visit status; the run is
eventful after a successful visit, permfailed after ``not_found``, failed otherwise.

A failing report is retried, never dropped. ``stop()`` reports queued runs that
never started as lost and hands queued visits back with ``release_visits``, so
nothing vanishes and nothing waits for the in-flight timeout needlessly.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..domain.clock import Clock
from ..domain.tasks import RunEvent, ScheduledRun, TaskRunStatus, TaskType
from ..domain.visit_policies import NextVisit, loader_task_type
from ..domain.visits import JournalStatus, VisitStatus
from .calls import call_loader, call_task
from .registry import TaskRegistry
from .registry import registry as default_registry

log = logging.getLogger(__name__)

Report = Callable[[Sequence[RunEvent]], Any]
ReportVisits = Callable[[Sequence[VisitStatus]], Any]
ReleaseVisits = Callable[[Sequence[tuple[str, str]]], Any]


@dataclass(frozen=True, slots=True)
class _Job:
    scheduled: ScheduledRun
    backend_name: str

    @property
    def task_type(self) -> str:
        return self.scheduled.task.type


@dataclass(frozen=True, slots=True)
class _VisitJob:
    visit: NextVisit
    backend_name: str

    @property
    def task_type(self) -> str:
        return loader_task_type(self.visit.visit_type)


@dataclass(frozen=True, slots=True)
class _VisitReport:
    #: None: the loader said only how its run went (a swh loader); the journal reports the visit
    status: VisitStatus | None
    #: the end of a dispatched visit (counted in ``visits_completed``), not of a save code now task
    dispatched: bool


def executor_id_for(node: str, pid: int | None = None) -> str:
    """The backend id of an embedded executor: ``embedded@NODE:PID``."""
    return f"embedded@{node}:{os.getpid() if pid is None else pid}"


class EmbeddedExecutor:
    def __init__(
        self,
        report: Report,
        clock: Clock,
        *,
        node: str,
        workers: int = 4,
        registry: TaskRegistry = default_registry,
        flush_interval: float = 0.2,
        max_batch: int = 1000,
        report_visits: ReportVisits | None = None,
        release_visits: ReleaseVisits | None = None,
    ):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.executor_id = executor_id_for(node)
        self._report = report
        self._report_visits = report_visits
        self._release_visits = release_visits
        self._clock = clock
        self._registry = registry
        self._workers_count = workers
        self._flush_interval = flush_interval
        self._max_batch = max_batch
        self._jobs: queue.PriorityQueue[tuple[int, int, _Job | _VisitJob | None]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._events: queue.Queue[RunEvent | _VisitReport] = queue.Queue()
        self._waiting: dict[str, int] = {}
        self._running = 0
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._reporter: threading.Thread | None = None
        self._stopping = threading.Event()
        self._reporter_stop = threading.Event()
        self._stopped = False
        self.completed = 0
        #: final outcomes reported so far, by status
        self.outcomes: collections.Counter[TaskRunStatus] = collections.Counter()
        #: dispatched visits whose status was recorded
        self.visits_completed = 0
        #: statuses of the dispatched visits recorded so far
        self.visit_outcomes: collections.Counter[JournalStatus] = collections.Counter()

    # -- lifecycle --------------------------------------------------------
    def start(self) -> None:
        for index in range(self._workers_count):
            thread = threading.Thread(target=self._work, name=f"ostinato-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._reporter = threading.Thread(target=self._report_loop, name="ostinato-reporter", daemon=True)
        self._reporter.start()

    def stop(self, grace: float = 30.0) -> None:
        """Stop taking jobs; let running ones finish within ``grace`` seconds.

        Queued runs that never started are reported lost; queued visits are
        handed back (``release_visits``) so that the next grab may take them.
        """
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        abandoned: list[_Job | _VisitJob] = []
        while True:
            try:
                _, _, job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                abandoned.append(job)
        now = self._clock.now()
        unstarted: list[tuple[str, str]] = []
        for job in abandoned:
            self._decrement(job)
            if isinstance(job, _VisitJob):
                unstarted.append((job.visit.url, job.visit.visit_type))
            else:
                self._events.put(RunEvent(job.scheduled.run.id, TaskRunStatus.LOST, now, self.executor_id,
                                          {"lost": "the executor stopped before the run started"}))
        self._release(unstarted)
        for _ in self._threads:
            self._jobs.put((-1, next(self._seq), None))
        deadline = time.monotonic() + grace
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._reporter is None:  # never started: still report what was abandoned
            self._reporter = threading.Thread(target=self._report_loop, name="ostinato-reporter", daemon=True)
            self._reporter.start()
        self._reporter_stop.set()
        if self._reporter is not None:
            self._reporter.join(max(5.0, deadline - time.monotonic() + 5.0))
            if self._reporter.is_alive():
                log.error("the store did not take the last run events and visit statuses; those runs will be "
                          "marked lost once lost_run_timeout has passed, those visits grabbed again after the "
                          "in-flight timeout")

    def _release(self, keys: list[tuple[str, str]]) -> None:
        if not keys:
            return
        if self._release_visits is None:
            log.warning("%d queued visits never started; they may be grabbed again after the in-flight timeout", len(keys))
            return
        try:
            self._release_visits(keys)
            log.info("handed back %d queued visits that never started", len(keys))
        except Exception:
            log.exception("could not hand back %d queued visits; they may be grabbed again after the in-flight "
                          "timeout", len(keys))

    # -- dispatch ---------------------------------------------------------
    def waiting(self, task_type: TaskType | str, *, priority: bool | None = None) -> int:
        """Runs and visits of this task type queued and not yet started (the queue's length; prioritised
        work shares it, whatever ``priority`` asks)."""
        name = task_type.type if isinstance(task_type, TaskType) else task_type
        with self._lock:
            return self._waiting.get(name, 0)

    def submit(self, runs: Sequence[ScheduledRun], backend_name: str, *, priority: bool = False) -> None:
        self._enqueue([_Job(scheduled, backend_name) for scheduled in runs], priority)

    def submit_visits(self, visits: Sequence[NextVisit], backend_name: str, *, priority: bool = False) -> None:
        """Queue origin visits for the loader ``backend_name``; each one's status goes to ``report_visits``."""
        if self._report_visits is None:
            raise RuntimeError("this executor was built without report_visits: it cannot run visits")
        self._enqueue([_VisitJob(visit, backend_name) for visit in visits], priority)

    def check_callable(self, backend_name: str) -> None:
        """Raise UnknownCallable unless ``backend_name`` names a callable."""
        self._registry.resolve(backend_name)

    def _enqueue(self, jobs: Sequence[_Job | _VisitJob], priority: bool) -> None:
        if self._stopping.is_set():
            raise RuntimeError("the embedded executor is stopping")
        with self._lock:
            for job in jobs:
                self._waiting[job.task_type] = self._waiting.get(job.task_type, 0) + 1
        for job in jobs:
            self._jobs.put((0 if priority else 1, next(self._seq), job))

    def _decrement(self, job: _Job | _VisitJob) -> None:
        with self._lock:
            self._waiting[job.task_type] -= 1

    # -- workers ----------------------------------------------------------
    def _work(self) -> None:
        while True:
            _, _, job = self._jobs.get()
            if job is None:
                return
            self._decrement(job)
            with self._lock:
                self._running += 1
            try:
                if isinstance(job, _VisitJob):
                    self._visit(job)
                else:
                    self._run(job)
            finally:
                with self._lock:
                    self._running -= 1

    def _visit(self, job: _VisitJob) -> None:
        visit = job.visit
        status, metadata = call_loader(self._registry, job.backend_name, visit.loader_kwargs(), visit_type=visit.visit_type,
                                       clock=self._clock)
        if status is None:  # a swh loader's run outcome: the journal reports the visit
            log.debug("visit of %s (%s) ended; its status comes from the journal", visit.url, visit.visit_type)
        elif status.status is JournalStatus.FAILED:
            log.warning("visit of %s (%s) failed: %s", visit.url, visit.visit_type, metadata.get("error"))
        else:
            log.debug("visit of %s (%s): %s", visit.url, visit.visit_type, status.status.value)
        self._events.put(_VisitReport(status, dispatched=True))

    def _run(self, job: _Job) -> None:
        run_id = job.scheduled.run.id
        self._events.put(RunEvent(run_id, TaskRunStatus.STARTED, self._clock.now(), self.executor_id))
        outcome = call_task(self._registry, job.backend_name, job.task_type, job.scheduled.task.arguments, self._clock)
        if outcome.visit_status is not None and self._report_visits is not None:
            self._events.put(_VisitReport(outcome.visit_status, dispatched=False))
        if outcome.status in (TaskRunStatus.FAILED, TaskRunStatus.PERMFAILED):  # one line a failed run, with why
            log.warning("run %s of %s %s: %s", run_id, job.task_type,
                        "failed" if outcome.status is TaskRunStatus.FAILED else "failed for good (permfailed)",
                        outcome.metadata.get("error"))
        else:
            log.debug("run %s of %s: %s", run_id, job.task_type, outcome.status.value)
        self._events.put(RunEvent(run_id, outcome.status, self._clock.now(), self.executor_id, dict(outcome.metadata)))

    # -- reporting --------------------------------------------------------
    def _report_loop(self) -> None:
        runs: list[RunEvent] = []
        visits: list[_VisitReport] = []
        backoff = self._flush_interval

        def take(item: RunEvent | _VisitReport) -> None:
            if isinstance(item, _VisitReport):
                visits.append(item)
            else:
                runs.append(item)

        while True:
            stopping = self._reporter_stop.is_set()
            try:
                take(self._events.get(timeout=self._flush_interval))
                while len(runs) + len(visits) < self._max_batch:
                    take(self._events.get_nowait())
            except queue.Empty:
                pass
            if runs or visits:
                try:
                    if runs:
                        self._report(runs)
                        finals = [e.status for e in runs if e.status.is_final]
                        self.completed += len(finals)
                        self.outcomes.update(finals)
                        runs = []
                    if visits:
                        assert self._report_visits is not None
                        statuses = [v.status for v in visits if v.status is not None]
                        if statuses:
                            self._report_visits(statuses)
                        self.visits_completed += sum(1 for v in visits if v.dispatched)
                        self.visit_outcomes.update(v.status.status for v in visits if v.dispatched and v.status)
                        visits = []
                except Exception:
                    log.exception("could not record %d run events and %d visit statuses; retrying in %.1fs",
                                  len(runs), len(visits), backoff)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 10.0)
                    continue
                backoff = self._flush_interval
            elif stopping and self._events.empty():
                return
