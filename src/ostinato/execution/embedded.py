"""The embedded executor: a pool of worker threads in the scheduler's own process.

Dispatched runs wait in a priority queue (prioritised tasks first), a worker
calls the task type's callable, and every start and outcome goes to a
reporter thread that hands batches of :class:`RunEvent` to ``report`` (the
store's ``record_run_events``). A failing report is retried, never dropped;
``stop()`` reports queued runs that never started as lost, so nothing vanishes.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..domain.clock import Clock
from ..domain.tasks import RunEvent, ScheduledRun, TaskRunStatus
from .registry import PermanentFailure, TaskRegistry, UnknownCallable, outcome_of, registry as default_registry

log = logging.getLogger(__name__)

Report = Callable[[Sequence[RunEvent]], Any]


@dataclass(frozen=True, slots=True)
class _Job:
    scheduled: ScheduledRun
    backend_name: str


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
    ):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.executor_id = executor_id_for(node)
        self._report = report
        self._clock = clock
        self._registry = registry
        self._workers_count = workers
        self._flush_interval = flush_interval
        self._max_batch = max_batch
        self._jobs: queue.PriorityQueue[tuple[int, int, _Job | None]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._events: queue.Queue[RunEvent] = queue.Queue()
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

    # -- lifecycle --------------------------------------------------------
    def start(self) -> None:
        for index in range(self._workers_count):
            thread = threading.Thread(target=self._work, name=f"ostinato-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._reporter = threading.Thread(target=self._report_loop, name="ostinato-reporter", daemon=True)
        self._reporter.start()

    def stop(self, grace: float = 30.0) -> None:
        """Stop taking jobs; let running ones finish within ``grace`` seconds; report the rest lost."""
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        abandoned: list[_Job] = []
        while True:
            try:
                _, _, job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                abandoned.append(job)
        now = self._clock.now()
        for job in abandoned:
            self._decrement(job)
            self._events.put(RunEvent(job.scheduled.run.id, TaskRunStatus.LOST, now, self.executor_id,
                                      {"lost": "the executor stopped before the run started"}))
        for _ in self._threads:
            self._jobs.put((-1, next(self._seq), None))
        deadline = time.monotonic() + grace
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._reporter_stop.set()
        if self._reporter is not None:
            self._reporter.join(max(5.0, deadline - time.monotonic() + 5.0))
            if self._reporter.is_alive():
                log.error("the store did not take the last run events; those runs will be marked lost "
                          "once lost_run_timeout has passed")

    # -- dispatch ---------------------------------------------------------
    def waiting(self, task_type: str) -> int:
        """Runs of this task type queued and not yet started (the queue's length)."""
        with self._lock:
            return self._waiting.get(task_type, 0)

    def submit(self, runs: Sequence[ScheduledRun], backend_name: str, *, priority: bool = False) -> None:
        if self._stopping.is_set():
            raise RuntimeError("the embedded executor is stopping")
        with self._lock:
            for scheduled in runs:
                self._waiting[scheduled.task.type] = self._waiting.get(scheduled.task.type, 0) + 1
        for scheduled in runs:
            self._jobs.put((0 if priority else 1, next(self._seq), _Job(scheduled, backend_name)))

    def _decrement(self, job: _Job) -> None:
        with self._lock:
            self._waiting[job.scheduled.task.type] -= 1

    # -- workers ----------------------------------------------------------
    def _work(self) -> None:
        while True:
            _, _, job = self._jobs.get()
            if job is None:
                return
            self._decrement(job)
            self._run(job)

    def _run(self, job: _Job) -> None:
        run_id = job.scheduled.run.id
        self._events.put(RunEvent(run_id, TaskRunStatus.STARTED, self._clock.now(), self.executor_id))
        with self._lock:
            self._running += 1
        try:
            fn = self._registry.resolve(job.backend_name)
            args = job.scheduled.task.arguments
            status, metadata = outcome_of(fn(*args.args, **args.kwargs))
        except PermanentFailure as exc:
            status, metadata = TaskRunStatus.PERMFAILED, {"error": f"{type(exc).__name__}: {exc}"}
        except UnknownCallable as exc:
            status, metadata = TaskRunStatus.FAILED, {"error": str(exc)}
        except Exception as exc:  # a task's failure must never kill its worker
            status, metadata = TaskRunStatus.FAILED, {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            with self._lock:
                self._running -= 1
        if status is TaskRunStatus.FAILED:
            log.warning("run %s of %s failed: %s", run_id, job.scheduled.task.type, metadata.get("error"))
        else:
            log.debug("run %s of %s: %s", run_id, job.scheduled.task.type, status.value)
        self._events.put(RunEvent(run_id, status, self._clock.now(), self.executor_id, metadata))

    # -- reporting --------------------------------------------------------
    def _report_loop(self) -> None:
        pending: list[RunEvent] = []
        backoff = self._flush_interval
        while True:
            stopping = self._reporter_stop.is_set()
            try:
                pending.append(self._events.get(timeout=self._flush_interval))
                while len(pending) < self._max_batch:
                    pending.append(self._events.get_nowait())
            except queue.Empty:
                pass
            if pending:
                try:
                    self._report(pending)
                except Exception:
                    log.exception("could not record %d run events; retrying in %.1fs", len(pending), backoff)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 10.0)
                    continue
                finals = [e.status for e in pending if e.status.is_final]
                self.completed += len(finals)
                self.outcomes.update(finals)
                pending = []
                backoff = self._flush_interval
            elif stopping and self._events.empty():
                return
