"""The task runner (``scheduler-runner``, see docs/design/tasks.md) and its priority twin.

Each pass, for every task type it serves, reads the free room of the type's
queue (``max_queue_length`` minus what waits in the executor), grabs at most
that many ready tasks (recording their runs in the same transaction) and
hands them to the executor. It also marks runs that never reported back as
lost, and at start-up those of executors on this node that died.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from ..domain.clock import Clock
from ..domain.errors import QueueUnavailable
from ..domain.tasks import ScheduledRun, TaskType
from ..store.interface import TaskStore
from . import service_metrics as metrics

log = logging.getLogger(__name__)


class Executor(Protocol):
    executor_id: str

    def waiting(self, task_type: TaskType, *, priority: bool | None = None) -> int:
        """Work of this task type waiting in its queue (the priority queue's, the normal one's, or both: None);
        raises QueueUnavailable when it cannot be known."""

    def submit(self, runs: Sequence[ScheduledRun], backend_name: str, *, priority: bool = False) -> None: ...


class TaskRunner:
    def __init__(
        self,
        store: TaskStore,
        executor: Executor,
        clock: Clock,
        *,
        task_types: Sequence[str] | None = None,
        priority: bool = False,
        batch_size: int = 1000,
        lost_run_timeout: timedelta = timedelta(hours=1),
        reap_every: timedelta = timedelta(minutes=1),
    ):
        self.store = store
        self.executor = executor
        self.clock = clock
        self.task_types = list(task_types) if task_types else None
        self.priority = priority
        self.batch_size = batch_size
        self.lost_run_timeout = lost_run_timeout
        self.reap_every = reap_every
        self._last_reap: datetime | None = None
        self.dispatched = 0

    @property
    def name(self) -> str:
        return "priority runner" if self.priority else "runner"

    def _served_types(self) -> list[TaskType]:
        types = self.store.list_task_types()
        if self.task_types is None:
            return types
        known = {t.type for t in types}
        missing = [name for name in self.task_types if name not in known]
        if missing:
            log.warning("%s: unknown task types %s", self.name, ", ".join(missing))
        return [t for t in types if t.type in self.task_types]

    def room(self, task_type: TaskType) -> int:
        """How many runs of this type may be dispatched now (0 while its queue's depth is unknown)."""
        if task_type.queue_limit is None:
            return self.batch_size
        try:
            waiting = self.executor.waiting(task_type, priority=self.priority)
        except QueueUnavailable as exc:
            log.error("%s: %s not dispatched: %s", self.name, task_type.type, exc)
            return 0
        metrics.queue_depth(task_type.type + (":priority" if self.priority else ""), waiting)
        return max(0, min(self.batch_size, task_type.queue_limit - waiting))

    def run_once(self) -> int:
        """One pass over every served task type; returns how many runs were dispatched."""
        with metrics.looping(self.loop):
            return self._run_once()

    @property
    def loop(self) -> str:
        """The name of this loop in the service metrics."""
        return "priority_runner" if self.priority else "runner"

    def _run_once(self) -> int:
        now = self.clock.now()
        self.reap_lost_runs()
        total = 0
        for task_type in self._served_types():
            room = self.room(task_type)
            if room <= 0:
                continue
            with metrics.picking(self.loop):
                grabbed = self.store.grab_ready_tasks(
                    task_type.type, now, room, priority=self.priority, backend_id=self.executor.executor_id
                )
            if grabbed:
                self.executor.submit(grabbed, task_type.backend_name, priority=self.priority)
                metrics.dispatched_each(self.loop, grabbed, lambda r: (r.task.type, "", r.task.policy.value))
                log.info("%s: dispatched %d %s", self.name, len(grabbed), task_type.type)
                total += len(grabbed)
        self.dispatched += total
        return total

    def reap_lost_runs(self, *, force: bool = False) -> list[int]:
        now = self.clock.now()
        if not force and self._last_reap is not None and now - self._last_reap < self.reap_every:
            return []
        self._last_reap = now
        lost = self.store.mark_lost_runs(now, self.lost_run_timeout)
        if lost:
            log.warning("%s: %d runs had no report for %s and were marked lost", self.name, len(lost), self.lost_run_timeout)
        return lost

    def run_forever(self, stop: threading.Event, poll_interval: float = 1.0) -> None:
        while not stop.is_set():
            try:
                dispatched = self.run_once()
            except Exception:
                log.exception("%s: pass failed; retrying in %.1fs", self.name, poll_interval)
                dispatched = 0
            if not dispatched:
                stop.wait(poll_interval)


def recover_dead_executors(store: TaskStore, clock: Clock, node: str, own_id: str) -> list[int]:
    """Mark lost the runs held by embedded executors of ``node`` that are no longer alive.

    Called at start-up, before dispatching: an executor id equal to our own
    belongs to an earlier process that had the same pid.
    """
    prefix = f"embedded@{node}:"
    dead = []
    for backend_id in store.in_flight_backend_ids(prefix):
        pid_text = backend_id[len(prefix):]
        if backend_id == own_id or not pid_text.isdigit() or not _pid_alive(int(pid_text)):
            dead.append(backend_id)
    if not dead:
        return []
    lost = store.mark_lost_runs(clock.now(), timedelta(0), backend_ids=dead)
    if lost:
        log.warning("marked %d runs of dead executors %s as lost", len(lost), ", ".join(dead))
    return lost


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
