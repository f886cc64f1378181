"""The deadline-greedy scheduler (docs/design/deadline-greedy.md) and periodic tasks into the job queue (docs/design/periodic-tasks.md).

Each pass:

1. the steal protocol over owners that went silent (``steal_silent_schedules``); then calendar
   schedules whose fire times piled up (an outage) skip what their catch-up rule does not run
   (``catch_up_schedules``, recorded in the ledger of fire times);
2. while it has free capacity, it picks the schedule that can start and will
   soonest be late (one indexed pick that takes ownership) and starts it:
   - ``run`` mode: the task type's callable runs in a thread of this process,
     pinging every ``ping_interval``; the run ends succeeded or failed. With a
     ``remote`` (the Celery executor) the run is sent to a worker instead, which
     pings and ends it by the same rule (:func:`run_verdict`); the scheduler
     counts it against its capacity until the schedule's ownership is released;
   - ``submit`` mode: a one-shot task is submitted to the generic
     queue unless the task submitted last time is still pending or running;
     the run ends at once either way, which moves the next start;
3. it watches its runs: a ping that finds the schedule taken over stops the run
   (stolen); past ``max_expected_duration`` it logs an error; past
   ``max_allowed_duration`` or inside a blackout period it stops the run and
   counts a failure. A run whose last recorded ping is ``ping_timeout`` old
   (its lease ran out: the process was paused, or the store was away) reads
   its stop event as set at once, before any other scheduler may steal it
   (that takes ``ping_timeout`` + ``steal_grace``); the run counts a failure.

A run is stopped cooperatively: a callable that takes a ``stop`` keyword gets
a ``threading.Event`` it should watch; one that does not is left to finish
and its result is discarded (the schedule already counts the stop). Between
passes it sleeps until the next ``can_start_by``, at most ``max_sleep``, and
wakes early when :meth:`wake` is called.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from ..domain.clock import Clock
from ..domain.lookahead import PickRule
from ..domain.run_items import items_of
from ..domain.schedule_watch import Overrun, overruns
from ..domain.schedules import (
    RunMode,
    RunStatus,
    Schedule,
    ScheduleRun,
    ScheduleTiming,
    expected_run,
)
from ..domain.tasks import NewTask, TaskPolicy, TaskStatus
from ..execution.calls import call_schedule_job
from ..execution.registry import TaskRegistry
from ..execution.registry import registry as default_registry
from ..store import Store
from . import service_metrics as metrics

log = logging.getLogger(__name__)
_PENDING = (TaskStatus.NEXT_RUN_NOT_SCHEDULED, TaskStatus.NEXT_RUN_SCHEDULED)


class RemoteRuns(Protocol):
    """Where runs go when they do not run in this process (the Celery executor)."""

    def send_schedule_run(self, schedule: Schedule, run: ScheduleRun, backend_name: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a running schedule's owner should do after a ping."""

    #: STOLEN (taken over: stop, report nothing), STOPPED (overran: stop, a failure) or None (go on)
    status: RunStatus | None = None
    reason: str | None = None
    #: past max_expected_duration (log an error once)
    expected_overrun: bool = False


def run_verdict(store: Store, schedule: Schedule, tag: str, now: datetime) -> Verdict:
    """Ping a run the caller owns, and judge it: the one rule for the scheduler's
    own threads and for Celery workers."""
    if not store.ping_schedule(schedule.name, tag, now):
        return Verdict(RunStatus.STOLEN)
    found = overruns(schedule, now)
    if Overrun.ALLOWED in found or Overrun.BLACKOUT in found:
        reason = "max_allowed_duration exceeded" if Overrun.ALLOWED in found else "a blackout period began"
        return Verdict(RunStatus.STOPPED, reason)
    return Verdict(expected_overrun=Overrun.EXPECTED in found)


class RunLease(threading.Event):
    """A run's stop event that also turns set once the owner's lease ran out: no ping recorded for
    ``ttl`` (the ping timeout) of this process's monotonic time. Other schedulers steal only after
    the ping timeout and the steal grace, so a job that watches this event stops working before its
    schedule can run elsewhere, even when its process wakes from a long pause (SIGSTOP, a frozen VM)
    or lost the store. Once lapsed it stays set: the watch then ends the run (stolen, or stopped)."""

    def __init__(self, ttl: timedelta, renewed_at: float, *, monotonic: Callable[[], float] = time.monotonic):
        super().__init__()
        self.ttl = ttl.total_seconds()
        self.monotonic = monotonic
        self.expires_at = renewed_at + self.ttl
        self.lapsed = False

    def renew(self, pinged_at: float) -> None:
        """A ping recorded (sent at ``pinged_at``, monotonic) extends the lease, unless it lapsed already."""
        if not self.lapsed:
            self.expires_at = pinged_at + self.ttl

    def is_set(self) -> bool:
        if super().is_set():
            return True
        if self.monotonic() >= self.expires_at:
            self.lapsed = True
            self.set()
            return True
        return False

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until set or lapsed, at most ``timeout`` seconds of the lease's monotonic time."""
        deadline = None if timeout is None else self.monotonic() + timeout
        while not self.is_set():
            left = None if deadline is None else deadline - self.monotonic()
            if left is not None and left <= 0:
                return False
            super().wait(0.1 if left is None else min(left, 0.1))
        return True


@dataclass
class _ActiveRun:
    schedule: Schedule
    run: ScheduleRun
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    #: why this scheduler stopped it (then its own result is not reported)
    stopped: RunStatus | None = None
    warned_expected: bool = False


class DeadlineScheduler:
    name = "scheduler"

    def __init__(self, store: Store, clock: Clock, *, node: str, instance: str = "default",
                 registry: TaskRegistry = default_registry, timing: ScheduleTiming = ScheduleTiming(),
                 capacity: int = 4, max_sleep: timedelta = timedelta(seconds=60), remote: RemoteRuns | None = None,
                 monotonic: Callable[[], float] = time.monotonic, rule: PickRule | None = None):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.store = store
        self.clock = clock
        self.node = node
        self.instance = instance
        self.registry = registry
        self.timing = timing.validated()
        self.capacity = capacity
        self.max_sleep = max_sleep
        #: the pick's order and lookahead (None: the plain greedy pick)
        rule = None if rule is None else rule.validated()
        self.rule = None if rule is None or rule.plain else rule
        #: when each run in flight here or sent to a worker is expected to end (the heartbeat tells them)
        self._expected_ends: dict[str, datetime] = {}
        #: the run leases' time (see RunLease), and when this pass's picks were pinged
        self.monotonic = monotonic
        self._pass_began = monotonic()
        self._active: dict[str, _ActiveRun] = {}
        self._lock = threading.Lock()
        self._ends: queue.Queue[tuple[_ActiveRun, bool, dict[str, Any], datetime]] = queue.Queue()
        self._reporter = threading.Thread(target=self._report_ends, name="ostinato-schedule-ends", daemon=True)
        self._reporter.start()
        self._task_types: dict[str, Any] = {}
        #: Celery: runs sent to workers and not seen ended yet, schedule name -> owner tag
        self.remote = remote
        self._remote: dict[str, str] = {}
        self._wake = threading.Event()
        self.started = 0
        self.finished = 0

    # -- life cycle ------------------------------------------------------------
    def start(self) -> list[str]:
        """Clear what an earlier process of this node and instance left running (not with Celery:
        runs sent to workers live on without this process, and their workers ping them)."""
        if self.remote is not None:
            return []
        released = self.store.release_owner_schedules(self.node, self.instance, self.clock.now(), self.timing)
        if released:
            log.warning("%s: runs of %s left by an earlier %s/%s ended as lost", self.name, ", ".join(released),
                        self.node, self.instance)
        return released

    def wake(self) -> None:
        """A schedule was added or changed: pick again now rather than at the next deadline."""
        self._wake.set()

    def running(self) -> list[str]:
        with self._lock:
            return sorted(self._active)

    # -- one pass --------------------------------------------------------------
    def run_once(self) -> int:
        with metrics.looping("scheduler"):
            return self._run_once()

    def _run_once(self) -> int:
        now, self._pass_began = self.clock.now(), self.monotonic()
        stolen = self.store.steal_silent_schedules(now, self.timing)
        for name in stolen["taken"]:
            log.warning("%s: took %s over from a silent owner", self.name, name)
        for skipped in self.store.catch_up_schedules(now, self.timing, sender=f"{self.node}/{self.instance}"):
            log.warning("%s: %s skipped %s fire times from %s to %s (its catch-up rule)", self.name, skipped.schedule,
                        skipped.firings if skipped.firings is not None else "many", skipped.nominal_at.isoformat(),
                        skipped.last_at.isoformat() if skipped.last_at else "?")
        self.watch()
        self._task_types = {t.type: t for t in self.store.list_task_types()}
        started = 0
        if self.rule is not None and self.rule.lookahead is not None:
            self._heartbeat(self.clock.now())  # once a pass: the registry lookahead plans with
        while (room := self.capacity - len(self.running()) - self._remote_in_flight()) > 0:
            now, self._pass_began = self.clock.now(), self.monotonic()  # the picks' first ping: this moment
            with metrics.picking("scheduler"):
                picked = self.store.pick_schedules(node=self.node, owner_name=self.instance,
                                                   tags=[uuid.uuid4().hex for _ in range(room)], now=now,
                                                   **({"rule": self.rule} if self.rule is not None else {}))
            late = self.monotonic() - self._pass_began > self.timing.ping_timeout.total_seconds() / 2
            for schedule, run in picked:
                if late and not self._ping_late_pick(schedule, run):
                    continue
                self._start(schedule, run)
                metrics.dispatched("scheduler", 1, task_type=schedule.task_type, policy="schedule")
                started += 1
            if len(picked) < room:
                break
        self.started += started
        return started

    def _heartbeat(self, now: datetime) -> None:
        """Tell the live schedulers' registry this one's slots and when its runs should end (lookahead on)."""
        assert self.rule is not None and self.rule.lookahead is not None
        with self._lock:
            live = set(self._active) | set(self._remote)
        for name in set(self._expected_ends) - live:
            del self._expected_ends[name]
        self.store.heartbeat_scheduler(self.node, self.instance, slots=self.capacity,
                                       run_ends=sorted(self._expected_ends.values())[:self.capacity], now=now,
                                       ttl=self.rule.lookahead.node_ttl)

    def _ping_late_pick(self, schedule: Schedule, run: ScheduleRun) -> bool:
        """A pick that took over half the ping timeout (the store was slow or away) recorded a time
        that is already old: ping before starting, so that the run neither starts on a lease about to
        lapse nor looks silent to the others. False (not started) when the ping fails or finds the
        schedule taken; the steal protocol then ends the run as lost."""
        pinged_at = self.monotonic()
        try:
            ours = self.store.ping_schedule(schedule.name, run.owner_tag, self.clock.now())
        except Exception:
            log.exception("%s: could not ping %s after a slow pick; not starting it", self.name, schedule.name)
            return False
        if not ours:
            log.warning("%s: %s was taken over during a slow pick; not starting it", self.name, schedule.name)
            return False
        self._pass_began = pinged_at
        return True

    def _remote_in_flight(self) -> int:
        """Runs sent to Celery workers whose schedule is still owned by them."""
        for name, tag in list(self._remote.items()):
            schedule = self.store.get_schedule(name)
            if schedule is None or schedule.owner_tag != tag:
                del self._remote[name]
        return len(self._remote)

    def _start(self, schedule: Schedule, run: ScheduleRun) -> None:
        self._expected_ends[schedule.name] = run.started_at + expected_run(schedule)
        if schedule.mode is RunMode.SUBMIT:
            self._submit(schedule, run)
            return
        if self.remote is not None:
            self._send(schedule, run)
            return
        active = _ActiveRun(schedule, run, RunLease(self.timing.ping_timeout, self._pass_began,
                                                    monotonic=self.monotonic))
        active.thread = threading.Thread(target=self._run, args=(active,), name=f"ostinato-schedule-{schedule.name}",
                                         daemon=True)
        with self._lock:
            self._active[schedule.name] = active
        log.info("%s: started %s (run %d)", self.name, schedule.name, run.id)
        active.thread.start()

    def _send(self, schedule: Schedule, run: ScheduleRun) -> None:
        """Celery: the run goes to a worker, which pings it and ends it."""
        assert self.remote is not None
        task_type = self._task_types.get(schedule.task_type)
        try:
            if task_type is None:
                raise LookupError(f"no task type {schedule.task_type!r} (see `ostinato task-type list`)")
            self.remote.send_schedule_run(schedule, run, task_type.backend_name)
        except Exception as exc:
            log.error("%s: could not send %s to a worker (%s: %s); counted as a failure, it will be retried",
                      self.name, schedule.name, type(exc).__name__, exc)
            self.store.end_schedule_run(schedule.name, run.owner_tag, status=RunStatus.FAILED, ended=self.clock.now(),
                                        detail={"error": f"not sent to a worker: {type(exc).__name__}: {exc}"},
                                        timing=self.timing)
            metrics.outcome("schedule_run", RunStatus.FAILED)
            self.finished += 1
            return
        self._remote[schedule.name] = run.owner_tag
        log.info("%s: sent %s to a worker (run %d)", self.name, schedule.name, run.id)

    def _submit(self, schedule: Schedule, run: ScheduleRun) -> None:
        """Submit mode: a one-shot task into the queue, unless the last one is still pending or running."""
        now = self.clock.now()
        previous = next((r for r in self.store.list_schedule_runs(schedule.name, limit=5)
                         if r.status is RunStatus.SUBMITTED and "task_id" in r.detail), None)
        pending = previous is not None and any(
            t.status in _PENDING for t in self.store.get_tasks([previous.detail["task_id"]]))
        if previous is not None and pending:
            detail: dict[str, Any] = {"skipped": f"task {previous.detail['task_id']} is still pending or running",
                                      "task_id": previous.detail["task_id"]}
        else:
            [task] = self.store.create_tasks([NewTask(schedule.task_type, now, schedule.arguments,
                                                      policy=TaskPolicy.ONESHOT)])
            detail = {"task_id": task.id}
        self.store.end_schedule_run(schedule.name, run.owner_tag, status=RunStatus.SUBMITTED, ended=self.clock.now(),
                                    detail=detail, timing=self.timing)
        metrics.outcome("schedule_run", RunStatus.SUBMITTED)
        self.finished += 1
        log.info("%s: %s %s", self.name, schedule.name,
                 f"skipped: {detail['skipped']}" if pending else f"submitted task {detail['task_id']}")

    def _run(self, active: _ActiveRun) -> None:
        schedule = active.schedule
        task_type = self._task_types.get(schedule.task_type)
        if task_type is None:
            ok, detail = False, {"error": f"LookupError: no task type {schedule.task_type!r} (see `ostinato task-type list`)"}
        else:
            ok, detail = call_schedule_job(self.registry, task_type.backend_name, schedule.arguments, active.stop)
        if active.stopped is not None:
            return  # already ended by the watch (stolen, or stopped for overrunning)
        if isinstance(active.stop, RunLease) and active.stop.lapsed:
            return  # the lease ran out: the watch ends the run (stolen, or stopped if the schedule is still ours)
        self._ends.put((active, ok, detail, self.clock.now()))

    def _report_ends(self) -> None:
        """One thread records the ends of runs, so that thousands of short runs do not all
        contend for the store at once; a run counts as running until its end is stored."""
        while True:
            active, ok, detail, ended_at = self._ends.get()
            schedule = active.schedule
            try:
                ended = self.store.end_schedule_run(schedule.name, active.run.owner_tag,
                                                    status=RunStatus.SUCCEEDED if ok else RunStatus.FAILED,
                                                    ended=ended_at, detail=detail, timing=self.timing,
                                                    items=items_of(detail))
            except Exception:
                log.exception("%s: could not record the end of %s; the steal protocol will end it as lost",
                              self.name, schedule.name)
                ended = None
            if ended is not None:  # counted before the run stops counting as running
                metrics.outcome("schedule_run", RunStatus.STOLEN if ended is False
                                else RunStatus.SUCCEEDED if ok else RunStatus.FAILED)
            with self._lock:
                if self._active.get(schedule.name) is active:
                    del self._active[schedule.name]
            self.finished += 1
            self.wake()  # a slot is free, and the schedule's next start may be near: pick again now
            if ended is False:
                log.error("%s: %s was taken over while it ran; its result is recorded as stolen", self.name, schedule.name)
            elif ended and not ok:
                log.warning("%s: %s failed: %s", self.name, schedule.name, detail.get("error"))

    # -- watching running schedules ---------------------------------------------
    def watch(self) -> None:
        """Ping every run; stop the stolen and the overrunning."""
        now, pinged_at = self.clock.now(), self.monotonic()
        with self._lock:
            active = list(self._active.values())
        for item in active:
            verdict = run_verdict(self.store, item.schedule, item.run.owner_tag, now)
            lease = item.stop if isinstance(item.stop, RunLease) else None
            if lease is not None and verdict.status is not RunStatus.STOLEN:
                lease.renew(pinged_at)
            if verdict.status is RunStatus.STOLEN:
                self._stop(item, RunStatus.STOLEN, None)
                log.error("%s: %s was taken over by another scheduler: stopping our run", self.name, item.schedule.name)
            elif lease is not None and lease.lapsed and not (item.thread is not None and item.thread.is_alive()):
                reason = f"no ping recorded for {self.timing.ping_timeout}: the lease ran out and the job stopped"
                log.error("%s: %s: %s (a failure)", self.name, item.schedule.name, reason)
                self._stop(item, RunStatus.STOPPED, reason)
            elif verdict.status is RunStatus.STOPPED:
                log.error("%s: %s: %s, stopping it (a failure)", self.name, item.schedule.name, verdict.reason)
                self._stop(item, RunStatus.STOPPED, verdict.reason)
            elif verdict.expected_overrun and not item.warned_expected:
                item.warned_expected = True
                log.error("%s: %s runs longer than its max_expected_duration (%s)", self.name, item.schedule.name,
                          item.schedule.max_expected_duration)

    def _stop(self, item: _ActiveRun, status: RunStatus, reason: str | None) -> None:
        item.stopped = status
        item.stop.set()
        if status is RunStatus.STOPPED:
            self.store.end_schedule_run(item.schedule.name, item.run.owner_tag, status=status, ended=self.clock.now(),
                                        detail={"reason": reason}, timing=self.timing)
        metrics.outcome("schedule_run", status)
        with self._lock:
            if self._active.get(item.schedule.name) is item:
                del self._active[item.schedule.name]
        self.finished += 1

    # -- the loop ---------------------------------------------------------------
    def sleep_for(self, now: datetime) -> float:
        """Until the next can_start_by or the next ping, at most ``max_sleep``."""
        limit = self.max_sleep
        if self.running():
            limit = min(limit, self.timing.ping_interval)
        upcoming = self.store.next_can_start_by()
        if upcoming is not None and upcoming <= now and self.rule is not None and self.rule.lookahead is not None:
            # startable schedules wait while slots are held: pick again when the first hold falls due
            # (a run's end wakes the loop earlier)
            held = [h.due_at for h in self.store.list_holds(now) if (h.node, h.instance) == (self.node, self.instance)]
            upcoming = min(held) if held else now + self.timing.ping_interval
        if upcoming is not None:
            limit = min(limit, max(upcoming - now, timedelta(0)))
        return max(limit.total_seconds(), 0.05)

    def wait_runs(self, timeout: float = 3600.0) -> None:
        """Wait for the runs in progress (here or sent to workers) to end and their ends to be stored (``--once``)."""
        deadline = time.monotonic() + timeout
        watched = 0.0
        while self.running() and time.monotonic() < deadline:
            if self._lapsed_and_returned() and time.monotonic() - watched > 0.5:
                watched = time.monotonic()  # a lapsed run is ended by the watch, not by its job: watch now
                try:
                    self.watch()
                except Exception:
                    log.exception("%s: could not end the runs whose lease ran out", self.name)
            time.sleep(0.01)
        while self._remote and self._remote_in_flight() and time.monotonic() < deadline:
            time.sleep(0.25)  # each look is a read per run sent

    def _lapsed_and_returned(self) -> bool:
        with self._lock:
            return any(isinstance(item.stop, RunLease) and item.stop.lapsed
                       and not (item.thread is not None and item.thread.is_alive()) for item in self._active.values())

    def stop_runs(self, grace: float = 30.0) -> None:
        """Ask running jobs to stop and wait for them (at most ``grace`` seconds); their ends are reported."""
        with self._lock:
            active = list(self._active.values())
        for item in active:
            item.stop.set()
        self.wait_runs(grace)

    def listen(self, stop: threading.Event) -> threading.Thread:
        """Wake early when the store says a schedule changed (PostgreSQL: LISTEN/NOTIFY)."""
        thread = threading.Thread(target=self.store.listen_schedule_changes, args=(self.wake, stop),
                                  name="ostinato-schedule-listener", daemon=True)
        thread.start()
        return thread

    def run_forever(self, stop: threading.Event) -> None:
        self.start()
        self.listen(stop)
        while not stop.is_set():
            try:
                self.run_once()
                wait = self.sleep_for(self.clock.now())
            except Exception:
                log.exception("%s: pass failed; retrying in 5s", self.name)
                wait = 5.0
            deadline = time.monotonic() + wait
            while not stop.is_set() and not self._wake.is_set() and time.monotonic() < deadline:
                stop.wait(min(0.5, max(deadline - time.monotonic(), 0.0)))
            self._wake.clear()
        self.stop_runs()
