"""Celery workers that run Ostinato's work: the tasks they register, what they report.

:func:`install_worker_tasks` registers on a Celery app, for every backend name
served, a task of that name that calls the same callables as the embedded
executor (:mod:`ostinato.execution.calls`), and the schedule-run task:

- a **task run** (header ``kind: run``; Celery task id = run id) publishes
  its end, carrying its start, and, when it runs longer than
  :data:`STARTED_MESSAGE_AFTER`, its start as soon as that passes; an **origin
  visit** (``kind: visit``) publishes its status,
  as :class:`~ostinato.integrations.celery.app.Outcome` messages on the durable
  outcomes queue, which the listener records (a swh loader's visit, which says only
  whether its run was eventful, publishes nothing: the journal reports it); a message
  without Ostinato's header (sent by another tool, swh-scheduler among them) just calls
  the callable;
- a **schedule run** (``ostinato.schedule-run``) keeps its ownership the way
  docs/design/deadline-greedy.md says, from the worker: it pings every ``schedule_ping_interval``
  while the job runs in a thread, stops the job when a ping finds the schedule
  taken over (its result is then discarded) or when it overruns
  ``max_allowed_duration`` or enters a blackout period, and records the end
  itself. A message whose ownership is already gone (it waited in the queue
  past the steal protocol) is dropped without running.

The worker reaches the store only for schedule runs, through a store opened
lazily in each worker process.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from kombu import Queue

from ...config import Settings
from ...domain.clock import Clock
from ...domain.run_items import items_of
from ...domain.schedules import RunStatus
from ...domain.tasks import RunEvent, TaskArguments, TaskRunStatus
from ...execution.calls import call_loader, call_schedule_job, call_task
from ...execution.registry import TaskRegistry
from ...execution.registry import registry as default_registry
from ...services.deadline_scheduler import RunLease, run_verdict
from ...store import Store, open_store
from .app import HEADER, OUTCOMES_QUEUE, SCHEDULE_RUN_TASK, Outcome, worker_backend_id

log = logging.getLogger(__name__)

#: seconds after which a task run still going publishes a durable start message
STARTED_MESSAGE_AFTER = 1.0


@dataclass
class WorkerRuntime:
    """What the tasks of a worker process share: settings, clock, registry, and a store per process."""

    settings: Settings
    clock: Clock
    registry: TaskRegistry = default_registry
    open_store: Callable[[str], Store] = open_store
    #: the run leases' clock (a duration, never a scheduling moment): tests move it to mimic a pause
    monotonic: Callable[[], float] = time.monotonic
    _stores: dict[int, Store] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def store(self) -> Store:
        """The store of this process (a forked pool process opens its own)."""
        pid = os.getpid()
        with self._lock:
            store = self._stores.get(pid)
            if store is None:
                store = self._stores[pid] = self.open_store(self.settings.db)
            return store


def outcomes_queue() -> Queue:
    return Queue(OUTCOMES_QUEUE, durable=True)


def publish_outcome(app: Celery, outcome: Outcome) -> None:
    """Publish an outcome on the durable queue (retried while the broker is away, then raised)."""
    with app.producer_or_acquire() as producer:
        producer.publish(outcome.to_message(), exchange="", routing_key=OUTCOMES_QUEUE, serializer="json",
                         declare=[outcomes_queue()], delivery_mode=2, retry=True,
                         retry_policy={"max_retries": 20, "interval_start": 0.5, "interval_step": 1, "interval_max": 5})


def _header(request: Any) -> dict[str, Any]:
    found = getattr(request, HEADER, None)
    if not isinstance(found, dict):
        found = (getattr(request, "headers", None) or {}).get(HEADER)
    return found if isinstance(found, dict) else {}


def _backend_task(app: Celery, runtime: WorkerRuntime, backend_name: str) -> Callable[..., Any]:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        header = _header(self.request)
        kind = header.get("kind")
        clock = runtime.clock
        if kind == "visit":
            visit_type = header.get("visit_type") or ""
            status, metadata = call_loader(runtime.registry, backend_name, kwargs, visit_type=visit_type, clock=clock)
            if status is None:  # a swh loader said how its run went: the journal reports the visit
                return {"visit_status": None, **metadata}
            publish_outcome(app, Outcome(visit_status=status))
            return {"visit_status": status.status.value, **({"error": metadata["error"]} if "error" in metadata else {})}
        if kind == "run" and str(self.request.id).isdigit():
            started = clock.now()
            backend_id = worker_backend_id(self.request.hostname or "unknown")
            # a run still going after STARTED_MESSAGE_AFTER says so durably (unlike the task-started event, which a
            # listener that was away misses); a shorter one's end carries its start
            started_message = threading.Timer(STARTED_MESSAGE_AFTER, publish_outcome, args=(app, Outcome(
                run=RunEvent(int(self.request.id), TaskRunStatus.STARTED, started, backend_id))))
            started_message.daemon = True
            started_message.start()
            try:
                outcome = call_task(runtime.registry, backend_name, header.get("task_type") or "",
                                    TaskArguments(tuple(args), kwargs), clock)
            finally:
                started_message.cancel()
            event = RunEvent(int(self.request.id), outcome.status, clock.now(), backend_id, dict(outcome.metadata))
            publish_outcome(app, Outcome(run=event, visit_status=outcome.visit_status, started=started))
            return {"status": outcome.status.value}
        # not sent by Ostinato: a plain Celery call of the callable
        return runtime.registry.resolve(backend_name)(*args, **kwargs)

    run.__name__ = run.__qualname__ = "ostinato_task_" + re.sub(r"\W", "_", backend_name)
    return run


def _schedule_task(runtime: WorkerRuntime) -> Callable[..., Any]:
    def schedule_run(self: Any, name: str, tag: str, run_id: int, backend_name: str,
                     arguments: dict[str, Any]) -> dict[str, Any]:
        return run_schedule_here(runtime, name=name, tag=tag, backend_name=backend_name,
                                 arguments=TaskArguments.parse(arguments))

    return schedule_run


def run_schedule_here(runtime: WorkerRuntime, *, name: str, tag: str, backend_name: str,
                      arguments: TaskArguments) -> dict[str, Any]:
    """Run a schedule's job in this process under the ownership rules of docs/design/deadline-greedy.md; returns what happened."""
    store, clock = runtime.store(), runtime.clock
    timing = runtime.settings.schedule_timing()
    schedule = store.get_schedule(name)
    pinged_at = runtime.monotonic()
    if schedule is None or schedule.owner_tag != tag or not store.ping_schedule(name, tag, clock.now()):
        log.warning("schedule %s: this run (%s) is no longer its owner's; not running it", name, tag)
        return {"status": "skipped", "reason": "the schedule's ownership was taken over before the run began"}
    # the job's stop event is a lease, as in the scheduler's own threads: it turns set when no ping was
    # recorded for ping_timeout, before any other scheduler may steal the schedule (a paused worker)
    stop = RunLease(timing.ping_timeout, pinged_at, monotonic=runtime.monotonic)
    ended: dict[str, Any] = {}

    def job() -> None:
        ended["ok"], ended["detail"] = call_schedule_job(runtime.registry, backend_name, arguments, stop)

    thread = threading.Thread(target=job, name=f"ostinato-schedule-{name}", daemon=True)
    thread.start()
    interval = timing.ping_interval.total_seconds()
    warned = False
    while True:
        thread.join(interval)
        if not thread.is_alive():
            break
        pinged_at = runtime.monotonic()
        try:
            verdict = run_verdict(store, schedule, tag, clock.now())
        except Exception:  # the database is away: keep running until the lease runs out
            log.exception("schedule %s: ping failed; trying again in %.1fs", name, interval)
            continue
        if verdict.status is not RunStatus.STOLEN:
            stop.renew(pinged_at)
        if verdict.status is RunStatus.STOLEN:
            stop.set()
            log.error("schedule %s was taken over by another owner: stopping this run", name)
            return {"status": RunStatus.STOLEN.value}
        if verdict.status is RunStatus.STOPPED:
            stop.set()
            log.error("schedule %s: %s, stopping it (a failure)", name, verdict.reason)
            store.end_schedule_run(name, tag, status=RunStatus.STOPPED, ended=clock.now(),
                                   detail={"reason": verdict.reason}, timing=timing)
            return {"status": RunStatus.STOPPED.value, "reason": verdict.reason}
        if verdict.expected_overrun and not warned:
            warned = True
            log.error("schedule %s runs longer than its max_expected_duration (%s)", name, schedule.max_expected_duration)
    if stop.lapsed:  # whatever the job returned, it ran (or was told to stop) without a lease
        reason = f"no ping recorded for {timing.ping_timeout}: the lease ran out and the job stopped"
        log.error("schedule %s: %s (a failure)", name, reason)
        recorded = store.end_schedule_run(name, tag, status=RunStatus.STOPPED, ended=clock.now(),
                                          detail={"reason": reason}, timing=timing)
        return {"status": (RunStatus.STOPPED if recorded else RunStatus.STOLEN).value, "reason": reason}
    status = RunStatus.SUCCEEDED if ended["ok"] else RunStatus.FAILED
    recorded = store.end_schedule_run(name, tag, status=status, ended=clock.now(), detail=ended["detail"], timing=timing,
                                      items=items_of(ended["detail"]))
    if recorded is False:
        log.error("schedule %s was taken over while it ran; its result is recorded as stolen", name)
        return {"status": RunStatus.STOLEN.value}
    return {"status": status.value, **ended["detail"]}


def install_worker_tasks(app: Celery, runtime: WorkerRuntime, backend_names: Iterable[str]) -> list[str]:
    """Register the tasks of ``backend_names`` and the schedule-run task; returns the names registered."""
    names = sorted(set(backend_names))
    for backend_name in names:
        app.task(name=backend_name, bind=True)(_backend_task(app, runtime, backend_name))
    app.task(name=SCHEDULE_RUN_TASK, bind=True)(_schedule_task(runtime))
    return [*names, SCHEDULE_RUN_TASK]
