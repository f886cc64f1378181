"""What a Celery worker does with a schedule's run (the ownership rules, from the worker), and the
outcome messages workers send to the listener. The schedule-run body is called directly,
in this process, against both stores; Celery itself is exercised in tests/e2e."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from waiting import wait_until

from ostinato.config import Settings
from ostinato.domain.clock import ManualClock
from ostinato.domain.errors import ValidationError
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind
from ostinato.domain.tasks import RunEvent, TaskArguments, TaskRunStatus, TaskType
from ostinato.domain.visits import JournalStatus, VisitStatus
from ostinato.execution.registry import TaskRegistry
from ostinato.integrations.celery.app import Outcome
from ostinato.integrations.celery.worker import WorkerRuntime, run_schedule_here

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = Settings().with_values({"schedule_ping_interval": "0.05s", "schedule_ping_timeout": "1s"})


@pytest.fixture
def world(store):
    clock = ManualClock(T0)
    registry = TaskRegistry()
    calls: list[str] = []
    release = threading.Event()

    @registry.task("quick")
    def quick() -> bool:
        calls.append("quick")
        return True

    @registry.task("waits")
    def waits(stop: threading.Event) -> bool:
        calls.append("waits")
        while not stop.is_set() and not release.is_set():
            time.sleep(0.01)  # the job's work, until one of the two events ends it
        return True

    store.create_task_type(TaskType("job", "a job", "quick"))
    runtime = WorkerRuntime(SETTINGS, clock, registry, open_store=lambda url: store)
    return store, clock, runtime, calls, release


def picked(store, clock, *, max_allowed: timedelta | None = None) -> str:
    store.create_schedule(Schedule("s", ScheduleKind.PERIODIC, "job", T0 - timedelta(hours=2),
                                   scheduling_period=timedelta(hours=1), cooldown_duration=timedelta(minutes=30),
                                   max_allowed_duration=max_allowed), T0, SETTINGS.schedule_timing())
    [(schedule, run)] = store.pick_schedules(node="n1", owner_name="sched", tags=["tag-1"], now=clock.now())
    return run.owner_tag


def test_a_run_ends_succeeded_and_frees_the_schedule(world):
    store, clock, runtime, calls, _ = world
    tag = picked(store, clock)
    assert run_schedule_here(runtime, name="s", tag=tag, backend_name="quick", arguments=TaskArguments()) == {
        "status": "succeeded"}
    assert calls == ["quick"]
    [run] = store.list_schedule_runs("s")
    assert run.status is RunStatus.SUCCEEDED
    assert store.get_schedule("s").owner_tag is None


def test_a_message_whose_ownership_is_gone_is_not_run(world):
    store, clock, runtime, calls, _ = world
    tag = picked(store, clock)
    store.end_schedule_run("s", tag, status=RunStatus.LOST, ended=clock.now(), detail={}, timing=SETTINGS.schedule_timing())
    result = run_schedule_here(runtime, name="s", tag=tag, backend_name="quick", arguments=TaskArguments())
    assert result["status"] == "skipped"
    assert calls == []


def test_a_run_taken_over_while_it_runs_is_stopped_and_reports_nothing(world):
    store, clock, runtime, calls, _ = world
    tag = picked(store, clock)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(run_schedule_here(
        runtime, name="s", tag=tag, backend_name="waits", arguments=TaskArguments())))
    worker.start()
    wait_until(lambda: calls, timeout=10, interval=0.01, what="the job to start")
    # the steal protocol ends the run (its owner looked silent) and frees the schedule
    store.end_schedule_run("s", tag, status=RunStatus.LOST, ended=clock.now(), detail={"lost": "silent"},
                           timing=SETTINGS.schedule_timing())
    worker.join(5)
    assert not worker.is_alive() and result == {"status": "stolen"}
    [run] = store.list_schedule_runs("s")
    assert run.status is RunStatus.LOST  # the worker did not overwrite the steal


def test_a_run_past_max_allowed_duration_is_stopped_as_a_failure(world):
    store, clock, runtime, calls, _ = world
    tag = picked(store, clock, max_allowed=timedelta(minutes=10))
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(run_schedule_here(
        runtime, name="s", tag=tag, backend_name="waits", arguments=TaskArguments())))
    worker.start()
    wait_until(lambda: calls, timeout=10, interval=0.01, what="the job to start")
    clock.advance(timedelta(minutes=11))
    worker.join(5)
    assert result == {"status": "stopped", "reason": "max_allowed_duration exceeded"}
    [run] = store.list_schedule_runs("s")
    assert run.status is RunStatus.STOPPED
    assert store.get_schedule("s").failure_count == 1


# -- outcome messages ---------------------------------------------------------------
SNAP = bytes.fromhex("9b922e6d8d5b803c1582aabe5525b7b91150788e")


@pytest.mark.parametrize("outcome", [
    Outcome(run=RunEvent(7, TaskRunStatus.EVENTFUL, T0, "celery:w1@n1", {"rows": 3})),
    Outcome(run=RunEvent(7, TaskRunStatus.STARTED, T0, "celery:w1@n1", {})),
    Outcome(run=RunEvent(7, TaskRunStatus.FAILED, T0, "celery:w1@n1", {"error": "boom"}), started=T0 - timedelta(seconds=3)),
    Outcome(visit_status=VisitStatus("https://x.example/r", 2, "git", JournalStatus.FULL, T0, SNAP)),
    Outcome(visit_status=VisitStatus("https://x.example/r", 2, "git", JournalStatus.FULL, T0, SNAP, 2,
                                     T0 - timedelta(hours=1), (T0 - timedelta(days=9), T0 - timedelta(hours=1)))),
    Outcome(visit_status=VisitStatus("https://x.example/r", 2, "git", JournalStatus.FULL, T0, SNAP,
                                     newest_change_at=T0 - timedelta(hours=1))),
    Outcome(run=RunEvent(8, TaskRunStatus.PERMFAILED, T0, "celery:w1@n1", {"visit_status": "not_found"}),
            visit_status=VisitStatus("https://x.example/gone", 0, "git", JournalStatus.NOT_FOUND, T0, None)),
])
def test_outcomes_survive_the_trip_through_json(outcome):
    import json

    assert Outcome.from_message(json.loads(json.dumps(outcome.to_message()))) == outcome


def test_the_start_comes_before_the_end_in_one_batch():
    outcome = Outcome(run=RunEvent(7, TaskRunStatus.EVENTFUL, T0, "celery:w1@n1", {}), started=T0 - timedelta(seconds=3))
    assert [e.status for e in outcome.run_events()] == [TaskRunStatus.STARTED, TaskRunStatus.EVENTFUL]
    assert outcome.run_events()[0].at == T0 - timedelta(seconds=3)


@pytest.mark.parametrize("message, field", [
    ([], "outcome"),
    ({}, "outcome"),
    ({"run": "7"}, "run"),
    ({"run": {"id": 0, "status": "eventful", "at": "2026-03-01T12:00:00Z"}}, "run.id"),
    ({"run": {"id": True, "status": "eventful", "at": "2026-03-01T12:00:00Z"}}, "run.id"),
    ({"run": {"id": 7, "status": "done", "at": "2026-03-01T12:00:00Z"}}, "run.status"),
    ({"run": {"id": 7, "status": "scheduled", "at": "2026-03-01T12:00:00Z"}}, "run.status"),
    ({"run": {"id": 7, "status": "eventful", "at": None}}, "run.at"),
    ({"run": {"id": 7, "status": "eventful", "at": "yesterday"}}, "run.at"),
    ({"run": {"id": 7, "status": "eventful", "at": "2026-03-01T12:00:00"}}, "run.at"),
    ({"run": {"id": 7, "status": "eventful", "at": "2026-03-01T12:00:00Z", "metadata": []}}, "run.metadata"),
    ({"run": {"id": 7, "status": "eventful", "at": "2026-03-01T12:00:00Z", "started": 3}}, "run.started"),
    ({"visit_status": {"origin": "https://x", "visit": 1, "type": "git", "status": "full", "date": "2026-03-01T12:00:00Z",
                       "snapshot": "zz"}}, "visit_status.snapshot"),
    ({"visit_status": {"origin": "https://x", "visit": 1, "status": "full", "date": "2026-03-01T12:00:00Z"}},
     "visit_status.type"),
])
def test_a_bad_outcome_names_the_field(message, field):
    with pytest.raises(ValidationError) as caught:
        Outcome.from_message(message)
    assert caught.value.field == field


class _PingsLost:
    """The store, except that the worker's pings after the first one never get through (the database away)."""

    def __init__(self, store):
        self._store, self.pings = store, 0

    def ping_schedule(self, *args, **kwargs):
        self.pings += 1
        if self.pings > 1:
            raise ConnectionError("the database is away")
        return self._store.ping_schedule(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_a_run_whose_pings_stop_getting_through_stops_before_it_could_be_stolen(world):
    """The chaos harness's finding, on the Celery path: a worker that cannot record its pings (paused, or
    cut from the database) must stop its job once ping_timeout has passed, before the steal protocol may
    start the schedule elsewhere (ping_timeout + steal_grace); the run then ends stopped, a failure."""
    store, clock, runtime, calls, release = world
    tag = picked(store, clock)
    cut = _PingsLost(store)
    runtime = WorkerRuntime(SETTINGS, clock, runtime.registry, open_store=lambda url: cut)
    backstop = threading.Timer(30, release.set)  # without the lease the job would wait for ever: fail instead
    backstop.start()
    try:
        result = run_schedule_here(runtime, name="s", tag=tag, backend_name="waits", arguments=TaskArguments())
    finally:
        backstop.cancel()
    assert not release.is_set()  # the job returned because its lease ran out, not because it was released
    assert result["status"] == "stopped" and "lease ran out" in result["reason"]
    assert calls == ["waits"] and cut.pings > 1
    [run] = store.list_schedule_runs("s")
    assert run.status is RunStatus.STOPPED
    assert store.get_schedule("s").owner_tag is None
