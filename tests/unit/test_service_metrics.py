"""The service metrics move when the loops work: a runner pass, an orchestrator pass and a
scheduler pass against a real store count their dispatches, time their grabs and passes, and
read their queue depths; stored outcomes are counted by status. Counters are process-wide, so
each test compares before and after."""

from __future__ import annotations

from datetime import timedelta

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from waiting import wait_until

from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import Schedule, ScheduleKind
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskType
from ostinato.domain.visits import FeedbackPolicy
from ostinato.execution.registry import TaskRegistry
from ostinato.execution.worker_pool import EmbeddedExecutor
from ostinato.services import service_metrics
from ostinato.services.deadline_scheduler import DeadlineScheduler
from ostinato.services.orchestrator import Orchestrator
from ostinato.services.runner import TaskRunner
from ostinato.services.service_metrics import REGISTRY

DAY = timedelta(days=1)


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def registry() -> TaskRegistry:
    reg = TaskRegistry()
    reg.register("jobs.ok", lambda *args, **kwargs: {"status": "eventful"})
    reg.register("load.git", lambda url, **kwargs: {"status": "full", "snapshot": "aa" * 20})
    return reg


def executor(store, clock) -> EmbeddedExecutor:
    """A real executor, left unstarted: what it is given waits in its queue."""
    return EmbeddedExecutor(
        service_metrics.counting_outcomes("run", store.record_run_events), clock, node="test", workers=1,
        registry=registry(), report_visits=lambda s: store.record_visit_statuses(s, FeedbackPolicy(), now=clock.now()),
        release_visits=store.release_visits)


def test_a_runner_pass_counts_dispatches_times_the_grab_and_reads_the_queue(sqlite_store, clock):
    store = sqlite_store
    store.create_task_type(TaskType("ok", "ok job", "jobs.ok", default_interval=DAY, max_queue_length=10))
    store.create_tasks([NewTask("ok", clock.now(), TaskArguments((n,)), TaskPolicy.ONESHOT) for n in range(3)]
                       + [NewTask("ok", clock.now(), TaskArguments(("r",)))])
    before = {"oneshot": value("ostinato_dispatches_total", loop="runner", task_type="ok", visit_type="", policy="oneshot"),
              "recurring": value("ostinato_dispatches_total", loop="runner", task_type="ok", visit_type="",
                                 policy="recurring"),
              "picks": value("ostinato_pick_seconds_count", loop="runner"),
              "passes": value("ostinato_loop_seconds_count", loop="runner")}
    queued = executor(store, clock)
    runner = TaskRunner(store, queued, clock)
    assert runner.run_once() == 4
    assert value("ostinato_dispatches_total", loop="runner", task_type="ok", visit_type="", policy="oneshot") \
        == before["oneshot"] + 3
    assert value("ostinato_dispatches_total", loop="runner", task_type="ok", visit_type="", policy="recurring") \
        == before["recurring"] + 1
    assert value("ostinato_pick_seconds_count", loop="runner") == before["picks"] + 1
    assert value("ostinato_loop_seconds_count", loop="runner") == before["passes"] + 1
    assert value("ostinato_queue_depth", queue="ok") == 0  # read before the dispatch
    runner.run_once()  # the four wait in the unstarted executor's queue
    assert value("ostinato_queue_depth", queue="ok") == 4
    assert value("ostinato_pick_seconds_count", loop="runner") == before["picks"] + 2

    # the outcomes, once the executor runs them and reports
    ended = value("ostinato_outcomes_total", kind="run", status="eventful")
    queued.start()
    try:
        wait_until(lambda: value("ostinato_outcomes_total", kind="run", status="eventful") >= ended + 4, timeout=10,
                   what="the four outcomes to be counted")
    finally:
        queued.stop()
    assert value("ostinato_outcomes_total", kind="run", status="eventful") == ended + 4


def test_an_orchestrator_pass_counts_visits_by_policy(sqlite_store, clock):
    store = sqlite_store
    store.create_task_type(TaskType("load-git", "git", "load.git", default_interval=DAY, max_queue_length=100))
    lister = store.get_or_create_lister("forge", "forge.example", clock.now() - 30 * DAY)
    store.record_listed_origins(lister.id, [ListedOrigin(f"https://forge.example/{n}", "git",
                                                         last_update=clock.now() - DAY) for n in range(5)],
                                clock.now() - 30 * DAY)
    label = dict(loop="orchestrator", task_type="load-git", visit_type="git")
    policies = ("never_visited_oldest_update_first", "already_visited_order_by_lag", "origins_without_last_update")
    before = sum(value("ostinato_dispatches_total", **label, policy=p) for p in policies)
    picks = value("ostinato_pick_seconds_count", loop="orchestrator")
    orchestrator = Orchestrator(store, executor(store, clock), clock)
    dispatched = orchestrator.run_once()
    assert sum(dispatched["git"].visits.values()) == 5
    assert sum(value("ostinato_dispatches_total", **label, policy=p) for p in policies) == before + 5
    assert value("ostinato_pick_seconds_count", loop="orchestrator") == picks + 1
    assert value("ostinato_queue_depth", queue="load-git") == 0


def test_a_scheduler_pass_counts_schedule_runs_and_times_the_pick(sqlite_store, clock):
    store = sqlite_store
    store.create_task_type(TaskType("ok", "ok job", "jobs.ok", default_interval=DAY))
    store.create_schedule(Schedule("bills", ScheduleKind.PERIODIC, "ok", created_at=clock.now() - 2 * DAY,
                                   scheduling_period=DAY), clock.now())
    label = dict(loop="scheduler", task_type="ok", visit_type="", policy="schedule")
    before, picks = value("ostinato_dispatches_total", **label), value("ostinato_pick_seconds_count", loop="scheduler")
    succeeded = value("ostinato_outcomes_total", kind="schedule_run", status="succeeded")
    scheduler = DeadlineScheduler(store, clock, node="n1", registry=registry())
    assert scheduler.run_once() == 1
    scheduler.wait_runs(10)
    assert value("ostinato_dispatches_total", **label) == before + 1
    assert value("ostinato_outcomes_total", kind="schedule_run", status="succeeded") == succeeded + 1
    assert value("ostinato_pick_seconds_count", loop="scheduler") >= picks + 1
    assert value("ostinato_loop_seconds_count", loop="scheduler") >= 1


def test_the_registry_names_every_documented_metric():
    names = {family.name for family in text_string_to_metric_families(generate_latest(REGISTRY).decode())}
    assert {"ostinato_dispatches", "ostinato_outcomes", "ostinato_pick_seconds", "ostinato_queue_depth",
            "ostinato_loop_seconds"} <= names
    for name in names - {n for n in names if n.endswith("_created")}:  # the client's own creation stamps
        assert name in service_metrics.__doc__
