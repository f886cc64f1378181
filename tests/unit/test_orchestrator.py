"""The orchestrator (docs/design/orchestrator.md) on every store: queue room and
threshold, save code now tasks first, the default ratios with room passed on,
statuses fed back, origins in flight left alone; and its settings."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from waiting import wait_until

from ostinato.config import Settings
from ostinato.domain.errors import ValidationError
from ostinato.domain.orchestration import BY_LAG, NEVER_VISITED, WITHOUT_LAST_UPDATE
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskRunStatus, TaskType
from ostinato.domain.visit_policies import GrabOptions
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitOutcome, VisitStatus
from ostinato.execution.registry import TaskRegistry
from ostinato.execution.worker_pool import EmbeddedExecutor
from ostinato.services.orchestrator import Orchestrator

DAY = timedelta(days=1)
SNAP = "aa" * 20
POLICY = FeedbackPolicy()

#: the start of the ``clock`` fixture (a ManualClock)
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _clock_starts_at_t0(clock):
    assert clock.now() == T0


def url(name) -> str:
    return f"https://forge.example/{name}"


@pytest.fixture
def registry() -> TaskRegistry:
    reg = TaskRegistry()
    reg.register("load.git", lambda url, lister_name, lister_instance_name, **extra: {"status": "full", "snapshot": SNAP})
    reg.register("load.pypi", lambda url, **kw: {"status": "full", "snapshot": SNAP})
    return reg


def loader_type(visit_type="git", max_queue_length=100, backend="load.git") -> TaskType:
    return TaskType(f"load-{visit_type}", visit_type, backend, default_interval=DAY, max_queue_length=max_queue_length)


def executor_for(store, clock, registry, *, started=False) -> EmbeddedExecutor:
    """A real executor; left unstarted, what it is given stays queued (the queue's length is under the test's control)."""
    executor = EmbeddedExecutor(
        store.record_run_events, clock, node="test", workers=2, registry=registry, flush_interval=0.02,
        report_visits=lambda statuses: store.record_visit_statuses(statuses, POLICY, now=clock.now()),
        release_visits=store.release_visits)
    if started:
        executor.start()
    return executor


def list_origins(store, names, *, last_update=T0 - DAY, visit_type="git", lister=("forge", "forge.example")):
    found = store.get_or_create_lister(*lister, T0 - 30 * DAY)
    store.record_listed_origins(found.id, [ListedOrigin(url(n), visit_type, last_update=last_update) for n in names],
                                T0 - 30 * DAY)


def seed_policy_pools(store, *, lag=0, never=0, without=0):
    """Origins for each of the default git policies: visited with changes since (by lag), never visited with a
    last_update, and without last_update."""
    list_origins(store, [f"lag-{i}" for i in range(lag)])
    store.record_visit_statuses([VisitStatus(url(f"lag-{i}"), 1, "git", JournalStatus.FULL, T0 - 10 * DAY, b"\x01")
                                 for i in range(lag)], POLICY, now=T0)
    list_origins(store, [f"never-{i}" for i in range(never)])
    list_origins(store, [f"without-{i}" for i in range(without)], last_update=None)


def fill_queue(store, executor, n, type_name="load-git"):
    """``n`` ordinary task runs of ``type_name`` waiting in the (unstarted) executor."""
    store.create_tasks([NewTask(type_name, T0 - DAY, TaskArguments((f"filler-{i}",))) for i in range(n)])
    executor.submit(store.grab_ready_tasks(type_name, T0, n), "load.git")
    assert executor.waiting(type_name) == n


def visits_of(result) -> dict:
    return {visit_type: {p: n for p, n in d.visits.items() if n} for visit_type, d in result.items()}


def test_room_is_the_free_queue_and_the_threshold_skips_a_queue_full_enough(store, clock, registry):
    store.create_task_type(loader_type(max_queue_length=10))
    seed_policy_pools(store, never=50)
    executor = executor_for(store, clock, registry)
    orchestrator = Orchestrator(store, executor, clock, threshold=0.5)
    fill_queue(store, executor, 6)  # ordinary load-git runs share the queue: 4 free, below 0.5 x 10
    assert orchestrator.run_once() == {}
    executor.stop()

    executor = executor_for(store, clock, registry)
    orchestrator = Orchestrator(store, executor, clock, threshold=0.5)
    store.create_tasks([NewTask("load-git", T0 - DAY, TaskArguments((f"more-{i}",))) for i in range(5)])
    executor.submit(store.grab_ready_tasks("load-git", T0, 5), "load.git")  # 5 free: at the threshold
    assert visits_of(orchestrator.run_once()) == {"git": {NEVER_VISITED: 5}}
    assert executor.waiting("load-git") == 10
    assert orchestrator.run_once() == {}  # full
    executor.stop()


def test_threshold_zero_fills_any_room_and_batch_size_caps_a_pass(store, clock, registry):
    store.create_task_type(loader_type(max_queue_length=10))
    store.create_task_type(loader_type("pypi", max_queue_length=None, backend="load.pypi"))
    seed_policy_pools(store, never=50)
    list_origins(store, [f"pkg-{i}" for i in range(50)], visit_type="pypi")
    executor = executor_for(store, clock, registry)
    fill_queue(store, executor, 9)
    orchestrator = Orchestrator(store, executor, clock, threshold=0, batch_size=7)
    dispatched = orchestrator.run_once()
    assert dispatched["git"].total == 1  # one free place of ten
    assert dispatched["pypi"].total == 7  # no max_queue_length: batch_size is both the length and the cap
    assert visits_of(orchestrator.run_once()) == {}  # pypi's queue is full at batch_size
    executor.stop()


def test_save_code_now_tasks_come_first(store, clock, registry):
    store.create_task_type(loader_type(max_queue_length=5))
    seed_policy_pools(store, never=50)
    store.create_tasks([NewTask("load-git", T0, TaskArguments((), {"url": url(f"now-{i}")}), policy=TaskPolicy.ONESHOT,
                                priority=TaskPriority.HIGH) for i in range(3)]
                       + [NewTask("load-git", T0, TaskArguments((), {"url": url("plain")}), policy=TaskPolicy.ONESHOT)])
    executor = executor_for(store, clock, registry)
    orchestrator = Orchestrator(store, executor, clock, threshold=0)
    [(visit_type, done)] = orchestrator.run_once().items()
    assert visit_type == "git" and done.tasks == 3 and done.visits[NEVER_VISITED] == 2
    runs = store.list_task_runs()
    assert len(runs) == 3 and {r.backend_id for r in runs} == {executor.executor_id}
    executor.stop()  # queued runs are reported lost, queued visits handed back
    assert {r.status for r in store.list_task_runs()} == {TaskRunStatus.LOST}


def test_save_code_now_tasks_fill_a_small_room_before_any_origin(store, clock, registry):
    store.create_task_type(loader_type(max_queue_length=2))
    seed_policy_pools(store, never=10)
    store.create_tasks([NewTask("load-git", T0, TaskArguments((), {"url": url(f"now-{i}")}), policy=TaskPolicy.ONESHOT,
                                priority=TaskPriority.HIGH) for i in range(3)])
    executor = executor_for(store, clock, registry)
    done = Orchestrator(store, executor, clock, threshold=0).run_once()["git"]
    assert done.tasks == 2 and sum(done.visits.values()) == 0
    executor.stop()


def test_git_room_is_split_49_49_2_as_in_seed_003(store, clock, registry):
    store.create_task_type(loader_type(max_queue_length=100))
    seed_policy_pools(store, lag=60, never=60, without=10)
    executor = executor_for(store, clock, registry)
    orchestrator = Orchestrator(store, executor, clock, threshold=0)
    assert visits_of(orchestrator.run_once()) == {"git": {BY_LAG: 49, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 2}}
    executor.stop()


@pytest.mark.parametrize("room", [1, 10, 30])
def test_a_small_room_goes_to_the_policy_whose_share_rounded_to_nothing(store, clock, registry, room):
    store.create_task_type(loader_type(max_queue_length=room))
    seed_policy_pools(store, without=50)  # a forge with no last_update: only the 2% policy has origins
    executor = executor_for(store, clock, registry)
    assert visits_of(Orchestrator(store, executor, clock, threshold=0).run_once()) == {"git": {WITHOUT_LAST_UPDATE: room}}
    executor.stop()


def test_room_a_policy_cannot_use_goes_to_the_others(store, clock, registry):
    store.create_task_type(loader_type(max_queue_length=50))
    seed_policy_pools(store, lag=10, never=100, without=0)
    executor = executor_for(store, clock, registry)
    orchestrator = Orchestrator(store, executor, clock, threshold=0)
    assert visits_of(orchestrator.run_once()) == {"git": {BY_LAG: 10, NEVER_VISITED: 40}}
    executor.stop()


def test_configured_ratios_are_merged_over_the_defaults(store, clock, registry):
    store.create_task_type(loader_type(max_queue_length=100))
    seed_policy_pools(store, lag=60, never=200, without=60)
    executor = executor_for(store, clock, registry)
    orchestrator = Orchestrator(store, executor, clock, threshold=0, ratios={"git": {WITHOUT_LAST_UPDATE: 0, BY_LAG: 3}})
    assert orchestrator.ratios("git") == {BY_LAG: 3, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 0}
    assert visits_of(orchestrator.run_once()) == {"git": {BY_LAG: 6, NEVER_VISITED: 94}}
    executor.stop()


def test_statuses_fed_back_move_the_next_visit_target(store, clock, registry):
    store.create_task_type(loader_type())
    seed_policy_pools(store, never=3)
    executor = executor_for(store, clock, registry, started=True)
    orchestrator = Orchestrator(store, executor, clock, threshold=0)
    clock.advance(timedelta(hours=1))
    assert visits_of(orchestrator.run_once()) == {"git": {NEVER_VISITED: 3}}
    wait_until(lambda: executor.visits_completed >= 3, timeout=30, interval=0.01, what="the three visits to end")
    executor.stop()
    for stats in store.get_visit_stats([(url(f"never-{i}"), "git") for i in range(3)]):
        assert stats.last_visit_status is VisitOutcome.SUCCESSFUL and stats.last_snapshot == bytes.fromhex(SNAP)
        assert stats.last_scheduled == stats.last_successful == T0 + timedelta(hours=1)
        assert stats.next_visit_target == T0 + timedelta(hours=1) + POLICY.minimum_interval
    # visited and unchanged since: no policy wants them now
    assert visits_of(Orchestrator(store, executor_for(store, clock, registry), clock, threshold=0).run_once()) == {}


def test_an_origin_in_flight_is_not_grabbed_again(store, clock, registry):
    store.create_task_type(loader_type(max_queue_length=100))
    seed_policy_pools(store, never=4)
    executor = executor_for(store, clock, registry)  # never started: the visits stay in flight
    options = GrabOptions(in_flight_timeout=timedelta(hours=6))
    orchestrator = Orchestrator(store, executor, clock, threshold=0, grab_options=options)
    assert visits_of(orchestrator.run_once()) == {"git": {NEVER_VISITED: 4}}
    assert orchestrator.run_once() == {}  # room left, but every origin is in flight
    clock.advance(timedelta(hours=5))
    assert Orchestrator(store, executor_for(store, clock, registry), clock, threshold=0).run_once() == {}
    clock.advance(timedelta(hours=2))  # the visits never reported back: the in-flight timeout is over
    other = executor_for(store, clock, registry)
    assert visits_of(Orchestrator(store, other, clock, threshold=0).run_once()) == {"git": {NEVER_VISITED: 4}}
    other.stop()  # hands them back: free again at once
    assert visits_of(Orchestrator(store, executor_for(store, clock, registry), clock, threshold=0)
                     .run_once()) == {"git": {NEVER_VISITED: 4}}


def test_visit_types_served_and_unknown_ones_warned_about_once(store, clock, registry, caplog):
    store.create_task_type(loader_type())
    store.create_task_type(loader_type("pypi", backend="load.pypi"))
    store.create_task_type(TaskType("example-watch", "not a loader", "load.git", default_interval=DAY))
    assert [v for v, _ in Orchestrator(store, executor_for(store, clock, registry), clock).served()] == ["git", "pypi"]
    orchestrator = Orchestrator(store, executor_for(store, clock, registry), clock, visit_types=["pypi", "svn"])
    with caplog.at_level(logging.WARNING, logger="ostinato.services.orchestrator"):
        assert [v for v, _ in orchestrator.served()] == ["pypi"]
        orchestrator.run_once()
    assert [r.getMessage() for r in caplog.records] == ["orchestrator: no task type load-svn: those visit types are not served"]


def test_a_loader_that_cannot_be_found_grabs_nothing(store, clock, registry, caplog):
    store.create_task_type(loader_type(backend="no.such:loader"))
    seed_policy_pools(store, never=3)
    orchestrator = Orchestrator(store, executor_for(store, clock, registry), clock, threshold=0)
    with caplog.at_level(logging.WARNING, logger="ostinato.services.orchestrator"):
        assert orchestrator.run_once() == {} and orchestrator.run_once() == {}
    assert len(caplog.records) == 1 and "no.such:loader" in caplog.records[0].getMessage()
    assert all(s.last_scheduled is None for s in store.get_visit_stats([(url(f"never-{i}"), "git") for i in range(3)]))


def test_bad_ratios_and_threshold_are_refused(store, clock, registry):
    executor = executor_for(store, clock, registry)
    with pytest.raises(ValidationError) as info:
        Orchestrator(store, executor, clock, ratios={"git": {"bogus": 1}})
    assert info.value.field == "policy_ratios.git.bogus"
    with pytest.raises(ValidationError) as info:
        Orchestrator(store, executor, clock, ratios={"pypi": {BY_LAG: 0, NEVER_VISITED: 0}})
    assert info.value.field == "policy_ratios.pypi"
    with pytest.raises(ValidationError) as info:
        Orchestrator(store, executor, clock, threshold=1.5)
    assert info.value.field == "orchestrator_threshold"


# -- settings ------------------------------------------------------------------------
def test_orchestrator_settings_from_toml_and_environment(tmp_path):
    path = tmp_path / "ostinato.toml"
    path.write_text("""
[ostinato]
visit_types = ["git", "pypi"]
orchestrator_threshold = 0.25
in_flight_timeout = "6h"
not_found_cooldown = "30d"
adjust_factor = 3
max_failures = 5

[ostinato.policy_ratios.git]
origins_without_last_update = 0
""", encoding="utf-8")
    settings = Settings.load(path, environ={"OSTINATO_MINIMUM_INTERVAL": "2d"})
    assert settings.visit_types == ("git", "pypi") and settings.orchestrator_threshold == 0.25
    assert settings.ratios("git") == {BY_LAG: 49, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 0}
    assert settings.ratios("pypi") == {BY_LAG: 50, NEVER_VISITED: 50}
    assert settings.grab_options() == GrabOptions(in_flight_timeout=timedelta(hours=6), minimum_interval=2 * DAY)
    feedback = settings.feedback_policy()
    assert (feedback.adjust_factor, feedback.max_failures, feedback.minimum_interval) == (3.0, 5, 2 * DAY)
    assert feedback.not_found_cooldown == 30 * DAY and feedback.absolute_cooldown == timedelta(hours=12)


def test_policy_ratios_from_the_environment_are_json(tmp_path):
    path = tmp_path / "ostinato.toml"
    path.write_text('[policy_ratios.git]\norigins_without_last_update = 0\n', encoding="utf-8")
    settings = Settings.load(path, environ={"OSTINATO_POLICY_RATIOS": '{"pypi": {"oldest_scheduled_first": 10}}'})
    assert settings.ratios("pypi") == {BY_LAG: 50, NEVER_VISITED: 50, "oldest_scheduled_first": 10}
    assert settings.ratios("git") == {BY_LAG: 49, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 2}  # the variable wins whole


def test_orchestrator_defaults():
    settings = Settings.load(environ={"OSTINATO_CONFIG": "/dev/null"})
    assert settings.visit_types == () and settings.orchestrator_threshold == 0.1
    assert settings.feedback_policy() == FeedbackPolicy()
    assert settings.grab_options() == GrabOptions()
    assert settings.ratios("hg") == {BY_LAG: 49, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 2}


@pytest.mark.parametrize("values, field", [
    ({"policy_ratios": {"git": {"bogus": 1}}}, "policy_ratios.git.bogus"),
    ({"policy_ratios": {"git": {BY_LAG: -1}}}, f"policy_ratios.git.{BY_LAG}"),
    ({"policy_ratios": {"npm": {BY_LAG: 0, NEVER_VISITED: 0}}}, "policy_ratios.npm"),
    ({"policy_ratios": {"git": 3}}, "policy_ratios.git"),
    ({"policy_ratios": "not json"}, "policy_ratios"),
    ({"orchestrator_threshold": 2}, "orchestrator_threshold"),
    ({"orchestrator_threshold": "lots"}, "orchestrator_threshold"),
    ({"in_flight_timeout": "0s"}, "in_flight_timeout"),
    ({"failed_cooldown": "soon"}, "failed_cooldown"),
    ({"adjust_factor": 1}, "adjust_factor"),
    ({"max_failures": 0}, "max_failures"),
])
def test_bad_orchestrator_settings_name_the_field(values, field):
    with pytest.raises(ValidationError) as info:
        Settings().with_values(values)
    assert info.value.field == field


# -- in the embedded scheduler -----------------------------------------------------------
def test_the_embedded_scheduler_runs_the_orchestrator_and_waits_for_its_visits(store, clock):
    from ostinato.execution.registry import registry as default_registry
    from ostinato.services.embedded_scheduler import EmbeddedScheduler

    def slow_loader(url, **kw):
        time.sleep(0.05)  # the visit's work, which run_once must wait for
        return {"status": "full", "snapshot": SNAP}

    default_registry.register("test_orchestrator.slow_loader", slow_loader)
    store.create_task_type(loader_type(backend="test_orchestrator.slow_loader"))
    seed_policy_pools(store, never=5)
    settings = Settings().with_values({"workers": 1, "orchestrator_threshold": 0})
    scheduler = EmbeddedScheduler(store, settings, clock, normal=False, priority=False, orchestrate=True)
    scheduler.start()
    assert scheduler.run_once() == 5
    assert scheduler.executor.visits_completed == 5  # waited for every visit, one worker, one after the other
    summary = scheduler.stop()
    assert (summary.dispatched, summary.visits_dispatched, summary.visits_finished) == (0, 5, 5)
    stats = store.get_visit_stats([(url(f"never-{i}"), "git") for i in range(5)])
    assert [s.last_visit_status for s in stats] == [VisitOutcome.SUCCESSFUL] * 5
