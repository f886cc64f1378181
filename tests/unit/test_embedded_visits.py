"""The embedded executor runs origin visits: the loader contract, statuses fed back
through the store, queued visits handed back at stop, "save code now" tasks that
are visits too. Real stores (SQLite and PostgreSQL), a manual clock."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

import pytest
import waiting

from ostinato.domain.origins import ListedOrigin
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskRunStatus, TaskStatus, TaskType
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitOutcome
from ostinato.execution.registry import OriginNotFound, PermanentFailure, TaskRegistry, visit_status_of
from ostinato.execution.worker_pool import EmbeddedExecutor

SNAP = "9b922e6d8d5b803c1582aabe5525b7b91150788e"
POLICY = FeedbackPolicy()
NEVER = VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST

#: the start of the ``clock`` fixture (a ManualClock)
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _clock_starts_at_t0(clock):
    assert clock.now() == T0


def url(name: str) -> str:
    return f"https://forge.example/{name}"


# -- the loader contract -----------------------------------------------------------
@pytest.mark.parametrize("result, status, visit, snapshot", [
    ({"status": "full", "snapshot": SNAP, "visit": 7}, JournalStatus.FULL, 7, bytes.fromhex(SNAP)),
    ({"status": "partial", "snapshot": b"\x01\x02"}, JournalStatus.PARTIAL, 0, b"\x01\x02"),
    ({"status": "not_found", "snapshot": None}, JournalStatus.NOT_FOUND, 0, None),
    ({"status": "failed"}, JournalStatus.FAILED, 0, None),
])
def test_loader_results_become_visit_statuses(result, status, visit, snapshot):
    loaded = visit_status_of(result, url=url("a"), visit_type="git", date=T0)
    assert (loaded.status.origin, loaded.status.type, loaded.status.date) == (url("a"), "git", T0)
    assert (loaded.status.status, loaded.status.visit, loaded.status.snapshot) == (status, visit, snapshot)
    assert loaded.metadata["visit_status"] == status.value


def test_a_loader_may_count_the_changes_it_found():
    loaded = visit_status_of({"status": "full", "snapshot": SNAP, "changes": 4}, url=url("a"), visit_type="git", date=T0)
    assert loaded.status.changes == 4
    assert visit_status_of({"status": "full", "snapshot": SNAP}, url=url("a"), visit_type="git", date=T0).status.changes is None


def test_a_loader_may_say_when_the_changes_it_found_were_made():
    times = [T0 - timedelta(days=30), (T0 - timedelta(hours=2)).isoformat()]
    loaded = visit_status_of({"status": "full", "snapshot": SNAP, "changes": 2, "change_times": times},
                             url=url("a"), visit_type="git", date=T0)
    assert loaded.status.change_times == (T0 - timedelta(days=30), T0 - timedelta(hours=2))
    assert loaded.status.newest_change_at == T0 - timedelta(hours=2)


@pytest.mark.parametrize("result, field", [
    (None, "result"),
    (True, "result"),
    ("full", "result"),
    ({"status": "success"}, "status"),
    ({"status": "ongoing", "snapshot": SNAP}, "status"),
    ({"snapshot": SNAP}, "status"),
    ({"status": "full", "snapshot": "not hex"}, "snapshot"),
    ({"status": "full", "snapshot": SNAP, "visit": -1}, "visit"),
    ({"status": "full", "snapshot": SNAP, "visit": "3"}, "visit"),
    ({"status": "full", "snapshot": SNAP, "changes": -1}, "changes"),
    ({"status": "full", "snapshot": SNAP, "changes": "4"}, "changes"),
    ({"status": "full", "snapshot": SNAP, "change_times": ["noon"]}, "change_times[0]"),
    ({"status": "full", "snapshot": SNAP, "newest_change_at": T0 + timedelta(days=1)}, "newest_change_at"),
])
def test_a_bad_return_value_is_a_failed_visit_and_the_log_names_the_field(result, field, caplog):
    with caplog.at_level(logging.ERROR, logger="ostinato.execution.registry"):
        loaded = visit_status_of(result, url=url("a"), visit_type="git", date=T0)
    assert loaded.status.status is JournalStatus.FAILED and loaded.status.snapshot is None
    assert loaded.run_status is TaskRunStatus.FAILED
    [record] = caplog.records
    assert f"{field}: expected" in record.getMessage() and url("a") in record.getMessage()
    assert f"{field}: expected" in loaded.metadata["error"]


@pytest.mark.parametrize("result, run_status, metadata", [
    ({"status": "eventful"}, TaskRunStatus.EVENTFUL, {}),
    ({"status": "uneventful", "snapshot_swhid": "swh:1:snp:00"}, TaskRunStatus.UNEVENTFUL, {"snapshot_swhid": "swh:1:snp:00"}),
    ({"status": "success", "eventful": True}, TaskRunStatus.EVENTFUL, {}),
])
def test_a_swh_loaders_run_outcome_ends_the_run_and_leaves_the_visit_to_the_journal(result, run_status, metadata):
    loaded = visit_status_of(result, url=url("a"), visit_type="git", date=T0)
    assert loaded.status is None and loaded.run_status is run_status and loaded.metadata == metadata


def test_a_swh_loaders_failure_is_a_failed_visit_with_its_error():
    loaded = visit_status_of({"status": "failed", "error": "fetch: connection reset"}, url=url("a"), visit_type="git",
                             date=T0)
    assert loaded.status.status is JournalStatus.FAILED and loaded.run_status is TaskRunStatus.FAILED
    assert loaded.metadata["error"] == "fetch: connection reset"


def test_raising_means_failed_and_origin_not_found_means_not_found():
    gone = visit_status_of(None, url=url("a"), visit_type="git", date=T0, error=OriginNotFound("404"))
    assert gone.status.status is JournalStatus.NOT_FOUND and gone.run_status is TaskRunStatus.PERMFAILED
    boom = visit_status_of(None, url=url("a"), visit_type="git", date=T0, error=RuntimeError("boom"))
    assert boom.status.status is JournalStatus.FAILED and boom.metadata["error"] == "RuntimeError: boom"
    # a full visit without a snapshot is a failure for the feedback loop, and so for the run
    assert visit_status_of({"status": "full"}, url=url("a"), visit_type="git", date=T0).run_status is TaskRunStatus.FAILED
    assert visit_status_of({"status": "partial", "snapshot": SNAP}, url=url("a"), visit_type="git",
                           date=T0).run_status is TaskRunStatus.EVENTFUL


# -- through the executor and the store ---------------------------------------------
def loaders() -> TaskRegistry:
    reg = TaskRegistry()

    def load(url, lister_name, lister_instance_name, **extra):
        kind = url.rsplit("/", 1)[1].split("-")[0]
        if kind == "boom":
            raise RuntimeError("network down")
        if kind == "gone":
            raise OriginNotFound(url)
        if kind == "bad":
            return "full"
        if kind == "extra":
            assert (lister_name, lister_instance_name, extra) == ("forge", "forge.example", {"branch": "main"})
        return {"status": "full", "snapshot": SNAP, "visit": 2}

    reg.register("load.git", load)
    return reg


def executor_for(store, clock, registry, *, workers=2, report_visits=None) -> EmbeddedExecutor:
    def record(statuses):
        return store.record_visit_statuses(statuses, POLICY, now=clock.now())

    return EmbeddedExecutor(store.record_run_events, clock, node="test", workers=workers, registry=registry,
                            flush_interval=0.02, report_visits=report_visits or record,
                            release_visits=store.release_visits)


def wait_until(predicate, timeout=30.0):
    waiting.wait_until(predicate, timeout=timeout, what="the condition", interval=0.01)


def list_origins(store, names, **kw):
    lister = store.get_or_create_lister("forge", "forge.example", T0)
    store.record_listed_origins(lister.id, [ListedOrigin(url(n), "git", last_update=T0 - timedelta(days=1), **kw)
                                            for n in names], T0)


def test_visits_are_run_and_their_statuses_fed_back(store, clock):
    list_origins(store, ["ok", "boom", "gone", "bad"])
    list_origins(store, ["extra"], extra_loader_arguments={"branch": "main"})
    visits = store.grab_next_visits("git", [GrabRequest(NEVER, 10)], clock.now())
    assert len(visits) == 5
    executor = executor_for(store, clock, loaders())
    executor.start()
    clock.advance(timedelta(minutes=5))
    executor.submit_visits(visits, "load.git")
    wait_until(lambda: executor.visits_completed == 5)
    executor.stop()
    stats = {s.url.rsplit("/", 1)[1]: s for s in store.get_visit_stats([(url(n), "git") for n in
                                                                        ("ok", "boom", "gone", "bad", "extra")])}
    assert stats["ok"].last_visit_status is VisitOutcome.SUCCESSFUL and stats["ok"].last_snapshot == bytes.fromhex(SNAP)
    assert stats["ok"].last_successful == T0 + timedelta(minutes=5)  # the clock at the end of the visit
    assert stats["ok"].next_visit_target == T0 + timedelta(minutes=5) + POLICY.minimum_interval
    assert stats["extra"].last_visit_status is VisitOutcome.SUCCESSFUL  # got the lister's extra arguments
    assert stats["boom"].last_visit_status is VisitOutcome.FAILED and stats["boom"].failure_count == 1
    assert stats["bad"].last_visit_status is VisitOutcome.FAILED
    assert stats["gone"].last_visit_status is VisitOutcome.NOT_FOUND
    assert stats["gone"].cooldown_until == T0 + timedelta(minutes=5) + POLICY.not_found_cooldown
    assert executor.visit_outcomes == {JournalStatus.FULL: 2, JournalStatus.FAILED: 2, JournalStatus.NOT_FOUND: 1}
    assert store.list_task_runs() == []  # visits are not task runs


def test_a_swh_loaders_visit_ends_without_a_status_the_journal_brings_it(store, clock):
    list_origins(store, ["swh"])
    registry = TaskRegistry()
    registry.register("load.swh", lambda *, url, lister_name=None, lister_instance_name=None, **kw: {"status": "eventful"})
    executor = executor_for(store, clock, registry)
    executor.start()
    executor.submit_visits(store.grab_next_visits("git", [GrabRequest(NEVER, 10)], clock.now()), "load.swh")
    wait_until(lambda: executor.visits_completed == 1)
    executor.stop()
    [stats] = store.get_visit_stats([(url("swh"), "git")])
    assert stats.last_status_date is None and stats.last_scheduled == T0  # still in flight, until the journal says
    assert executor.visit_outcomes == {}


def test_visits_and_tasks_of_a_type_share_its_queue_and_stop_releases_queued_visits(store, clock):
    release = threading.Event()
    registry = loaders()
    registry.register("load.slow", lambda *args, **kw: release.wait(10) and (
        {"status": "full", "snapshot": SNAP} if "url" in kw else None))  # a visit, or an ordinary task
    store.create_task_type(TaskType("load-git", "git", "load.slow", default_interval=timedelta(days=1)))
    store.create_tasks([NewTask("load-git", T0, TaskArguments((url("task"),)))])
    list_origins(store, [str(i) for i in range(5)])
    executor = executor_for(store, clock, registry, workers=1)
    executor.start()
    executor.submit(store.grab_ready_tasks("load-git", T0, 10, backend_id=executor.executor_id), "load.slow")
    visits = store.grab_next_visits("git", [GrabRequest(NEVER, 5)], T0)
    executor.submit_visits(visits, "load.slow")
    wait_until(lambda: executor.waiting("load-git") == 5)  # the task run started; five visits wait behind it
    assert store.grab_next_visits("git", [GrabRequest(NEVER, 5)], T0, dry_run=True) == []  # in flight
    threading.Timer(0.3, release.set).start()
    executor.stop(grace=10)
    assert executor.waiting("load-git") == 0
    [run] = store.list_task_runs()
    assert run.status is TaskRunStatus.UNEVENTFUL  # a task without url=: an ordinary task run
    assert store.get_visit_stats([(v.url, "git") for v in visits]) and all(
        s.cooldown_until is None and s.last_status_date is None for s in store.get_visit_stats([(v.url, "git") for v in visits]))
    again = store.grab_next_visits("git", [GrabRequest(NEVER, 10)], T0 + timedelta(seconds=1))
    assert sorted(v.url for v in again) == sorted(v.url for v in visits)  # free at once, not after the in-flight timeout


def test_a_visit_status_the_store_refuses_is_retried_never_dropped(store, clock):
    list_origins(store, ["ok"])
    calls = []

    def flaky_record(statuses):
        calls.append(len(statuses))
        if len(calls) == 1:
            raise ConnectionError("database went away")
        return store.record_visit_statuses(statuses, POLICY, now=clock.now())

    executor = executor_for(store, clock, loaders(), report_visits=flaky_record)
    executor.start()
    executor.submit_visits(store.grab_next_visits("git", [GrabRequest(NEVER, 1)], T0), "load.git")
    wait_until(lambda: executor.visits_completed == 1)
    executor.stop()
    assert calls == [1, 1]
    [stats] = store.get_visit_stats([(url("ok"), "git")])
    assert stats.last_visit_status is VisitOutcome.SUCCESSFUL


@pytest.mark.parametrize("name, run_status, outcome", [
    ("ok", TaskRunStatus.EVENTFUL, VisitOutcome.SUCCESSFUL),
    ("gone", TaskRunStatus.PERMFAILED, VisitOutcome.NOT_FOUND),
    ("boom", TaskRunStatus.FAILED, VisitOutcome.FAILED),
    ("bad", TaskRunStatus.FAILED, VisitOutcome.FAILED),
])
def test_a_save_code_now_task_feeds_its_visit_status_back(store, clock, name, run_status, outcome):
    store.create_task_type(TaskType("load-git", "git", "load.git", num_retries=0))
    # as `ostinato task add load-git url=... --policy oneshot --priority high` makes it: only url
    [task] = store.create_tasks([NewTask("load-git", T0, TaskArguments((), {"url": url(name)}),
                                         policy=TaskPolicy.ONESHOT, priority=TaskPriority.HIGH)])
    executor = executor_for(store, clock, loaders())
    executor.start()
    executor.submit(store.grab_ready_tasks("load-git", T0, 10, priority=True, backend_id=executor.executor_id),
                    "load.git", priority=True)
    wait_until(lambda: executor.completed == 1)
    wait_until(lambda: store.get_visit_stats([(url(name), "git")]) != [])
    executor.stop()
    [run] = store.list_task_runs()
    assert run.status is run_status and run.metadata["visit_status"] in ("full", "not_found", "failed")
    [stats] = store.get_visit_stats([(url(name), "git")])
    assert stats.last_visit_status is outcome
    assert store.get_tasks([task.id])[0].status in (TaskStatus.COMPLETED, TaskStatus.DISABLED)
    assert executor.visits_completed == 0  # not a dispatched visit: run_once waits for it as a run


def test_a_loader_raising_permanent_failure_permfails_the_task_and_fails_the_visit(store, clock):
    registry = TaskRegistry()

    def fatal(url, **kw):
        raise PermanentFailure("unsupported forge")

    registry.register("load.fatal", fatal)
    store.create_task_type(TaskType("load-git", "git", "load.fatal"))
    store.create_tasks([NewTask("load-git", T0, TaskArguments((), {"url": url("x")}), policy=TaskPolicy.ONESHOT,
                                priority=TaskPriority.HIGH)])
    executor = executor_for(store, clock, registry)
    executor.start()
    executor.submit(store.grab_ready_tasks("load-git", T0, 1, priority=True), "load.fatal", priority=True)
    wait_until(lambda: executor.completed == 1)
    wait_until(lambda: store.get_visit_stats([(url("x"), "git")]) != [])
    executor.stop()
    assert store.list_task_runs()[0].status is TaskRunStatus.PERMFAILED
    assert store.get_visit_stats([(url("x"), "git")])[0].last_visit_status is VisitOutcome.FAILED


def test_an_executor_without_report_visits_refuses_visits(store, clock):
    executor = EmbeddedExecutor(store.record_run_events, clock, node="test", registry=loaders())
    with pytest.raises(RuntimeError, match="report_visits"):
        executor.submit_visits([], "load.git")
