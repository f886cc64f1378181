"""The orchestrator (``schedule-recurrent``, see docs/design/orchestrator.md), which keeps the loaders' queues fed.

Each pass, for every visit type it serves (every task type named
``load-<visit_type>``, or the list it was given):

1. *check queue status*: the free room of the queue is the task type's
   ``max_queue_length`` (``batch_size`` when it has none) minus what waits in
   the executor; below ``threshold`` × that length the queue is full enough and
   the visit type is skipped (``threshold`` 0: fill whenever there is room);
2. *fill in the void*: at most ``batch_size`` are dispatched: first the
   prioritised one-shot tasks of the task type ("save code now" requests), then
   origins, the room split between scheduling policies by the visit type's
   ratios (the default table by default), a policy short of origins leaving its
   share to the others — one grab, one transaction
   (:func:`ostinato.domain.orchestration.plan_grab_requests`).

Grabbed origins are marked scheduled by the store (a cooldown of the grab
options' ``in_flight_timeout``) and handed to the executor, whose loaders'
statuses come back through the feedback loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ..domain.clock import Clock
from ..domain.errors import QueueUnavailable, ValidationError
from ..domain.orchestration import default_ratios, plan_grab_requests, validate_ratios
from ..domain.tasks import ScheduledRun, TaskType
from ..domain.visit_policies import (
    POLICY_NAMES,
    GrabOptions,
    GrabRequest,
    NextVisit,
    VisitPolicy,
    loader_task_type,
    visit_type_of_task_type,
)
from ..store import Store
from . import service_metrics as metrics
from .revisit_steering import ThresholdSteering

log = logging.getLogger(__name__)


class VisitExecutor(Protocol):
    executor_id: str

    def waiting(self, task_type: TaskType, *, priority: bool | None = None) -> int: ...

    def submit(self, runs: Sequence[ScheduledRun], backend_name: str, *, priority: bool = False) -> None: ...

    def submit_visits(self, visits: Sequence[NextVisit], backend_name: str, *, priority: bool = False) -> None: ...

    def check_callable(self, backend_name: str) -> None: ...


@dataclass
class Dispatched:
    """What one pass dispatched for one visit type."""

    #: prioritised one-shot tasks ("save code now")
    tasks: int = 0
    #: origins, by policy
    visits: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.tasks + sum(self.visits.values())


class Orchestrator:
    name = "orchestrator"

    def __init__(
        self,
        store: Store,
        executor: VisitExecutor,
        clock: Clock,
        *,
        visit_types: Sequence[str] | None = None,
        ratios: Mapping[str, Mapping[str, float]] | None = None,
        threshold: float = 0.1,
        grab_options: GrabOptions = GrabOptions(),
        batch_size: int = 1000,
        steering: ThresholdSteering | None = None,
    ):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValidationError("orchestrator_threshold", "a number from 0 to 1", threshold)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size", "a whole number of at least 1", batch_size)
        self.store = store
        self.executor = executor
        self.clock = clock
        self.visit_types = list(visit_types) if visit_types else None
        self._ratios = {visit_type: self._merged(visit_type, table) for visit_type, table in (ratios or {}).items()}
        self.threshold = float(threshold)
        self.grab_options = grab_options.validated()
        self.batch_size = batch_size
        self.dispatched = 0
        self.visits_dispatched = 0
        self._warned: set[str] = set()
        #: change_rate_optimal's threshold, steered to the capacity (None: thresholds are left as they are)
        self.steering = steering

    @staticmethod
    def _merged(visit_type: str, table: Mapping[str, float]) -> dict[str, float]:
        return validate_ratios({**default_ratios(visit_type), **table}, POLICY_NAMES, field=f"policy_ratios.{visit_type}")

    def ratios(self, visit_type: str) -> dict[str, float]:
        """The ratios of ``visit_type``: the ones given, over the defaults."""
        return self._ratios.get(visit_type) or default_ratios(visit_type)

    def served(self) -> list[tuple[str, TaskType]]:
        """(visit type, its loader's task type) for every visit type served."""
        loaders = {visit_type: t for t in self.store.list_task_types()
                   if (visit_type := visit_type_of_task_type(t.type)) is not None}
        if self.visit_types is None:
            return sorted(loaders.items())
        missing = [v for v in self.visit_types if v not in loaders]
        if missing:
            self._warn_once("unknown:" + ",".join(missing), "%s: no task type %s: those visit types are not served",
                            self.name, ", ".join(loader_task_type(v) for v in missing))
        return [(v, loaders[v]) for v in self.visit_types if v in loaders]

    def free_room(self, task_type: TaskType) -> int:
        """The queue's free room, uncapped: its length (``batch_size`` if unbounded) minus what waits."""
        length = task_type.queue_limit or self.batch_size
        try:
            waiting = self.executor.waiting(task_type)
            metrics.queue_depth(task_type.type, waiting)
        except QueueUnavailable as exc:
            self._warn_once(f"queue:{task_type.type}", "%s: %s not served while its queue's depth is unknown: %s",
                            self.name, task_type.type, exc)
            return 0
        self._warned.discard(f"queue:{task_type.type}")
        return max(0, length - waiting)

    def room(self, task_type: TaskType) -> int:
        """How many may be dispatched now: 0 while the queue is above the threshold, else its free room
        capped at ``batch_size``."""
        free = self.free_room(task_type)
        length = task_type.queue_limit or self.batch_size
        if free <= 0 or free < self.threshold * length:
            return 0
        return min(free, self.batch_size)

    def run_once(self) -> dict[str, Dispatched]:
        """One pass over every served visit type; returns what was dispatched, by visit type."""
        with metrics.looping("orchestrator"):
            return self._run_once()

    def _run_once(self) -> dict[str, Dispatched]:
        now = self.clock.now()
        result: dict[str, Dispatched] = {}
        for visit_type, task_type in self.served():
            room = self.room(task_type)
            if room <= 0:
                continue
            try:
                self.executor.check_callable(task_type.backend_name)
            except LookupError as exc:
                self._warn_once(f"callable:{task_type.type}", "%s: %s not served: %s", self.name, task_type.type, exc)
                continue
            self._steer(visit_type, now)
            done = self._fill(visit_type, task_type, room, now)
            if self.steering is not None:
                self.steering.dispatched(visit_type, sum(done.visits.values()), now)
            if done.total:
                result[visit_type] = done
                shares = ", ".join(f"{n} {policy}" for policy, n in sorted(done.visits.items()) if n)
                log.info("%s: dispatched %d %s (%d save code now tasks; visits: %s)", self.name, done.total,
                         task_type.type, done.tasks, shares or "none")
        self.dispatched += sum(d.total for d in result.values())
        self.visits_dispatched += sum(sum(d.visits.values()) for d in result.values())
        return result

    def _steer(self, visit_type: str, now: datetime) -> None:
        ratios = self.ratios(visit_type)
        share = ratios.get(VisitPolicy.CHANGE_RATE_OPTIMAL.value, 0.0) / (sum(ratios.values()) or 1.0)
        if self.steering is None or share <= 0 or not self.steering.due(visit_type, now):
            return
        try:
            self.steering.steer(visit_type, share, now)
        except Exception:  # steering is an optimisation: the grab goes on with the last threshold
            log.exception("%s: could not steer %s's change_rate_optimal threshold", self.name, visit_type)

    def _fill(self, visit_type: str, task_type: TaskType, room: int, now: datetime) -> Dispatched:
        done = Dispatched()
        tasks = self.store.grab_ready_tasks(task_type.type, now, room, priority=True, backend_id=self.executor.executor_id)
        if tasks:
            self.executor.submit(tasks, task_type.backend_name, priority=True)
            metrics.dispatched("orchestrator", len(tasks), task_type=task_type.type, visit_type=visit_type,
                               policy="priority")
            done.tasks = len(tasks)
            room -= len(tasks)

        if room > 0:
            requests = [GrabRequest(VisitPolicy(p), n) for p, n in plan_grab_requests(room, self.ratios(visit_type))]
            with metrics.picking("orchestrator"):
                visits = self.store.grab_next_visits(visit_type, requests, now, options=self.grab_options, limit=room)
            if visits:
                try:
                    self.executor.submit_visits(visits, task_type.backend_name)
                except Exception:
                    self.store.release_visits([(v.url, v.visit_type) for v in visits])
                    raise
                metrics.dispatched_each("orchestrator", visits, lambda v: (task_type.type, visit_type, v.policy.value))
            done.visits = {policy: 0 for policy in self.ratios(visit_type)}
            for visit in visits:
                done.visits[visit.policy.value] += 1
        return done

    def _warn_once(self, key: str, message: str, *args: object) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    def run_forever(self, stop: threading.Event, poll_interval: float = 1.0) -> None:
        while not stop.is_set():
            try:
                dispatched = sum(d.total for d in self.run_once().values())
            except Exception:
                log.exception("%s: pass failed; retrying in %.1fs", self.name, poll_interval)
                dispatched = 0
            if not dispatched:
                stop.wait(poll_interval)
