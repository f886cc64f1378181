"""Dispatch to Celery workers: the executor the runner, the orchestrator and the
deadline scheduler use when the ``executor`` setting is ``celery``.

It has the embedded executor's face (``waiting``, ``submit``, ``submit_visits``)
plus :meth:`CeleryExecutor.send_schedule_run`:

- a task run is sent with ``send_task(backend_name, args, kwargs)`` to the
  queue named after the backend, ``save_code_now:<backend_name>`` when prioritised,
  with the run's id as the Celery task id; the run was recorded (``scheduled``)
  by the grab before the send. A send that fails marks the run ``lost`` at
  once, which counts as a failure and retries it (``retry_delay``): never
  silently lost;
- an origin visit is sent to its loader with ``url``, ``lister_name``,
  ``lister_instance_name`` and the extra loader arguments as keyword
  arguments; a visit whose send fails is handed back (``release_visits``);
- a schedule's run is sent as :data:`~ostinato.integrations.celery.app.SCHEDULE_RUN_TASK`
  to the queue of its task type; the worker pings and ends it.

``waiting`` reads the queue's depth from the broker (cached briefly) and
raises :class:`~ostinato.integrations.celery.app.QueueUnavailable` when the broker
cannot be reached, so that dispatch to that queue waits.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from celery import Celery

from ...domain.clock import Clock
from ...domain.schedules import Schedule, ScheduleRun
from ...domain.tasks import RunEvent, ScheduledRun, TaskRunStatus, TaskType
from ...domain.visit_policies import NextVisit
from .app import (
    HEADER,
    SCHEDULE_RUN_TASK,
    QueueDepths,
    dispatcher_id,
    queue_name,
    run_header,
    schedule_header,
    visit_header,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

Report = Callable[[Sequence[RunEvent]], Any]
ReleaseVisits = Callable[[Sequence[tuple[str, str]]], Any]


class CeleryExecutor:
    def __init__(self, app: Celery, clock: Clock, *, node: str, report: Report, release_visits: ReleaseVisits | None = None,
                 queue_depth_cache: float = 2.0):
        self.app = app
        self.clock = clock
        self.executor_id = dispatcher_id(node)
        self._report = report
        self._release_visits = release_visits
        self.depths = QueueDepths(app, cache_seconds=queue_depth_cache)
        #: messages sent, and sends that failed
        self.sent = 0
        self.send_failures = 0

    # -- the executor's face ------------------------------------------------------
    def start(self) -> None:
        """Nothing to start: the workers are other processes."""

    def stop(self, grace: float = 30.0) -> None:
        self.depths.close()

    def waiting(self, task_type: TaskType, *, priority: bool | None = None) -> int:
        """Messages of this task type waiting in the broker: its queue, its priority queue, or both (None)."""
        if not isinstance(task_type, TaskType):
            raise TypeError("CeleryExecutor.waiting needs the TaskType (its backend_name names the queue)")
        queues = [False, True] if priority is None else [priority]
        return sum(self.depths.depth(queue_name(task_type.backend_name, priority=p)) for p in queues)

    def check_callable(self, backend_name: str) -> None:
        """Workers resolve callables; nothing to check here."""

    def submit(self, runs: Sequence[ScheduledRun], backend_name: str, *, priority: bool = False) -> None:
        def send(scheduled: ScheduledRun, queue: str, producer: Any) -> None:
            task = scheduled.task
            self.app.send_task(backend_name, args=list(task.arguments.args), kwargs=dict(task.arguments.kwargs),
                               task_id=str(scheduled.run.id), queue=queue, producer=producer,
                               headers={HEADER: run_header(task.type)})

        queue = queue_name(backend_name, priority=priority)
        failed, error = self._send_all(runs, queue, send)
        if failed:
            log.error("could not send %d runs to queue %s (%s: %s); they are marked lost and will be retried",
                      len(failed), queue, type(error).__name__, error)
            now = self.clock.now()
            self._report([RunEvent(s.run.id, TaskRunStatus.LOST, now, self.executor_id,
                                   {"lost": f"could not send to the broker: {type(error).__name__}: {error}"})
                          for s in failed])

    def submit_visits(self, visits: Sequence[NextVisit], backend_name: str, *, priority: bool = False) -> None:
        def send(visit: NextVisit, queue: str, producer: Any) -> None:
            self.app.send_task(backend_name, kwargs=visit.loader_kwargs(), queue=queue, producer=producer,
                               task_id=f"visit:{visit.visit_type}:{uuid.uuid4().hex}",
                               headers={HEADER: visit_header(visit.visit_type)})

        queue = queue_name(backend_name, priority=priority)
        failed, error = self._send_all(visits, queue, send)
        if failed:
            log.error("could not send %d visits to queue %s (%s: %s); they are handed back", len(failed), queue,
                      type(error).__name__, error)
            if self._release_visits is not None:
                self._release_visits([(v.url, v.visit_type) for v in failed])

    def _send_all(self, items: Sequence[T], queue: str,
                  send: Callable[[T, str, Any], None]) -> tuple[list[T], BaseException | None]:
        """Send each item with one producer; after a failure (the broker went away) the rest are not tried.
        Returns what was not sent, and why."""
        failed: list[T] = []
        error: BaseException | None = None
        with self.app.producer_or_acquire() as producer:
            for index, item in enumerate(items):
                try:
                    send(item, queue, producer)
                except Exception as exc:  # the rest would fail too
                    error, failed = exc, list(items[index:])
                    break
        self._count(queue, len(items) - len(failed), len(failed))
        return failed, error

    def send_schedule_run(self, schedule: Schedule, run: ScheduleRun, backend_name: str) -> None:
        """Send a schedule's run to a worker; raises if the broker does not take it."""
        queue = queue_name(backend_name)
        self.app.send_task(SCHEDULE_RUN_TASK, queue=queue, task_id=f"schedule:{schedule.name}:{run.id}",
                           kwargs={"name": schedule.name, "tag": run.owner_tag, "run_id": run.id,
                                   "backend_name": backend_name, "arguments": schedule.arguments.to_dict()},
                           headers={HEADER: schedule_header(schedule.name)})
        self._count(queue, 1, 0)

    def _count(self, queue: str, sent: int, failed: int) -> None:
        self.sent += sent
        self.send_failures += failed
        if sent:
            self.depths.forget(queue, added=sent)
