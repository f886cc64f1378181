"""Regression (found by bench/chaos/chaos.py): an owner paused longer than the steal timeout went on
running its job after it woke, side by side with the run that had taken over, until its next
ping. A run's stop event is now a lease that lapses ``ping_timeout`` after the last recorded ping
(before anyone may steal), so the job stops as soon as its process runs again."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind, ScheduleTiming
from ostinato.domain.tasks import TaskType
from ostinato.execution.registry import TaskRegistry
from ostinato.services.deadline_scheduler import DeadlineScheduler, RunLease

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # the clock fixture's start (tests/conftest.py)
S = timedelta(seconds=1)
TIMING = ScheduleTiming(ping_timeout=30 * S, steal_grace=30 * S)


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_lease_lapses_after_its_ttl_and_stays_lapsed():
    mono = FakeMonotonic()
    lease = RunLease(30 * S, mono(), monotonic=mono)
    mono.now += 29
    assert not lease.is_set() and not lease.wait(0)
    lease.renew(mono())
    mono.now += 29
    assert not lease.is_set()
    mono.now += 2
    assert lease.is_set() and lease.lapsed and lease.wait(0)
    lease.renew(mono())  # a late ping does not take back the stop the job was given
    assert lease.is_set()


@pytest.fixture
def registry():
    reg = TaskRegistry()
    reg.worked_at = []  # moments (the fake monotonic) at which the job did a step of work
    reg.returned = threading.Event()
    return reg


def long_schedule(store, clock, registry, mono, *, steps: int | None = None) -> None:
    """Schedule "long", whose job works in small steps until told to stop (or ``steps`` are done)."""

    def job(stop=None):
        while steps is None or len(registry.worked_at) < steps:
            at = mono()  # read before the look: a step recorded was allowed when it began
            if stop.is_set():
                break
            registry.worked_at.append(at)
            time.sleep(0.005)  # a step of the job's work
        registry.returned.set()
        return True

    registry.register("jobs.work", job)
    store.create_task_type(TaskType("work", "a long job", "jobs.work"))
    store.create_schedule(Schedule("long", ScheduleKind.PERIODIC, "work", T0 - timedelta(hours=2),
                                   scheduling_period=timedelta(days=1)), clock.now())


def start(store, clock, registry, mono) -> DeadlineScheduler:
    """"long" started by scheduler a."""
    long_schedule(store, clock, registry, mono)
    a = make(store, clock, registry, "a", mono)
    assert a.run_once() == 1
    return a


def make(store, clock, registry, node, mono):
    return DeadlineScheduler(store, clock, node=node, registry=registry, timing=TIMING, monotonic=mono)


def test_a_paused_owner_stops_its_job_before_the_steal(store, clock, registry):
    mono = FakeMonotonic()
    a = start(store, clock, registry, mono)
    b = make(store, clock, registry, "b", mono)
    # a is paused for longer than the steal timeout: no ping from it meanwhile
    mono.now += 61
    woke = mono.now
    assert registry.returned.wait(10)  # a's job stopped on its own, at its first look after waking
    assert all(moment < woke for moment in registry.worked_at)  # and did no work after the pause
    clock.advance(31 * S)
    b.run_once()  # marks
    clock.advance(31 * S)
    b.run_once()  # takes over: a's run is lost
    assert store.list_schedule_runs("long")[0].status is RunStatus.LOST
    a.watch()  # a's ping finds the schedule taken
    assert a.running() == []
    assert store.list_schedule_runs("long")[0].status is RunStatus.LOST


def test_a_lapsed_lease_nobody_stole_ends_the_run_as_stopped(store, clock, registry):
    mono = FakeMonotonic()
    a = start(store, clock, registry, mono)
    mono.now += 31  # the store was away (or the process slow) for longer than the ping timeout
    assert registry.returned.wait(10)
    assert a.running() == ["long"]  # ended by the watch, not by the job's return
    a.watch()
    assert a.running() == []
    [run] = store.list_schedule_runs("long")
    assert run.status is RunStatus.STOPPED and "lease ran out" in run.detail["reason"]
    assert store.get_schedule("long").failure_count == 1


class SlowPicks:
    """The store, with a pick that takes ``seconds`` (a store that was away and came back)."""

    def __init__(self, store, clock, mono, seconds: float, *, stolen_meanwhile: bool = False):
        self._store, self._clock, self._mono, self._seconds = store, clock, mono, seconds
        self._stolen = stolen_meanwhile
        self.pings: list[datetime] = []

    def ping_schedule(self, name, tag, now):
        self.pings.append(now)
        return self._store.ping_schedule(name, tag, now)

    def __getattr__(self, name):
        return getattr(self._store, name)

    def pick_schedules(self, **kwargs):
        picked = self._store.pick_schedules(**kwargs)
        self._mono.now += self._seconds
        self._clock.advance(timedelta(seconds=self._seconds))
        if self._stolen:
            for _ in picked:
                self._store.release_owner_schedules(kwargs["node"], kwargs["owner_name"], self._clock.now(), TIMING)
        return picked


def test_a_slow_pick_pings_before_the_job_starts(store, clock, registry):
    """Regression (the chaos run's 77 stopped runs): a pick that returned after the store came back
    started its job on a lease already run out, and recorded a ping the others saw as silent."""
    mono = FakeMonotonic()
    long_schedule(store, clock, registry, mono, steps=21)
    slow = SlowPicks(store, clock, mono, 40.0)
    a = make(slow, clock, registry, "a", mono)
    assert a.run_once() == 1
    assert slow.pings == [T0 + 40 * S]  # pinged at once after the slow pick
    assert registry.returned.wait(10)
    assert len(registry.worked_at) > 20  # the job ran to its end, not stopped by a lapsed lease
    a.watch()
    a.wait_runs(10)
    assert store.list_schedule_runs("long")[0].status is RunStatus.SUCCEEDED


def test_a_slow_pick_whose_schedule_was_taken_meanwhile_does_not_start(store, clock, registry):
    mono = FakeMonotonic()
    long_schedule(store, clock, registry, mono)
    a = make(SlowPicks(store, clock, mono, 40.0, stolen_meanwhile=True), clock, registry, "a", mono)
    assert a.run_once() == 0
    assert a.running() == [] and registry.worked_at == []


def test_stopping_the_scheduler_ends_a_run_whose_lease_ran_out_without_waiting_for_the_grace(store, clock, registry):
    """A lapsed run is ended by the watch, not by its job: shutting down used to wait the whole grace
    for it, and leave it running in the store."""
    mono = FakeMonotonic()
    a = start(store, clock, registry, mono)
    mono.now += 31
    assert registry.returned.wait(10)
    a.stop_runs(grace=5.0)
    assert a.running() == []
    [run] = store.list_schedule_runs("long")
    assert run.status is RunStatus.STOPPED


def test_a_lease_waits_on_its_own_clock():
    """``wait(timeout)`` counts the timeout on the lease's monotonic clock, the one its expiry is on:
    here that clock runs 10 s per reading, so a 30 s wait ends after a few readings, long before
    the lease (1,000 s) lapses; counted on the system's clock it lasted until the lease lapsed."""
    mono = FakeMonotonic()

    def ticking() -> float:
        mono.now += 10
        return mono.now

    lease = RunLease(1000 * S, mono(), monotonic=ticking)
    began = time.monotonic()
    assert lease.wait(30) is False
    assert not lease.lapsed and mono.now < 1000 + 100
    assert time.monotonic() - began < 2
