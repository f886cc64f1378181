"""The runner and the embedded executor together, on every store: outcomes come
back through the store, queues are never flooded, priorities come first, nothing
is lost when the executor stops or dies."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from waiting import wait_until

from ostinato.domain.tasks import NewTask, TaskArguments, TaskPriority, TaskRunStatus, TaskStatus, TaskType
from ostinato.execution.registry import PermanentFailure, TaskRegistry, TaskResult
from ostinato.execution.worker_pool import EmbeddedExecutor
from ostinato.services.runner import TaskRunner, recover_dead_executors

S = TaskRunStatus


@pytest.fixture
def registry():
    reg = TaskRegistry()
    reg.register("t.eventful", lambda *a, **k: True)
    reg.register("t.quiet", lambda *a, **k: None)
    reg.register("t.result", lambda x: TaskResult(eventful=x > 1, metadata={"x": x}))

    def boom():
        raise RuntimeError("boom")

    def fatal():
        raise PermanentFailure("gone")

    reg.register("t.boom", boom)
    reg.register("t.fatal", fatal)
    return reg


def task_type(name: str, backend: str, **kw) -> TaskType:
    defaults = dict(default_interval=timedelta(hours=1), min_interval=timedelta(minutes=10),
                    max_interval=timedelta(days=1), backoff_factor=2.0, num_retries=1, retry_delay=timedelta(minutes=5))
    defaults.update(kw)
    return TaskType(name, name, backend, **defaults)


def run_pass(store, clock, registry, *, priority=False, workers=2, **runner_kw):
    executor = EmbeddedExecutor(store.record_run_events, clock, node="test", workers=workers, registry=registry,
                                flush_interval=0.02)
    executor.start()
    runner = TaskRunner(store, executor, clock, priority=priority, **runner_kw)
    dispatched = runner.run_once()
    wait_until(lambda: executor.completed >= dispatched, timeout=30, interval=0.01, what=f"{dispatched} runs to end")
    executor.stop()
    return dispatched, executor


def test_outcomes_come_back_through_the_store(store, clock, registry):
    for name, backend in [("ev", "t.eventful"), ("quiet", "t.quiet"), ("res", "t.result"), ("boom", "t.boom"),
                          ("fatal", "t.fatal"), ("missing", "t.not_registered")]:
        store.create_task_type(task_type(name, backend))
    now = clock.now()
    store.create_tasks([NewTask(n, now, TaskArguments((2,) if n == "res" else ()))
                        for n in ("ev", "quiet", "res", "boom", "fatal", "missing")])
    dispatched, executor = run_pass(store, clock, registry)
    assert dispatched == 6 and executor.completed == 6
    runs = {store.get_tasks([r.task])[0].type: r for r in store.list_task_runs()}
    assert runs["ev"].status is S.EVENTFUL and runs["quiet"].status is S.UNEVENTFUL
    assert runs["res"].status is S.EVENTFUL and runs["res"].metadata == {"x": 2}
    assert runs["boom"].status is S.FAILED and "boom" in runs["boom"].metadata["error"]
    assert runs["fatal"].status is S.PERMFAILED
    assert runs["missing"].status is S.FAILED and "t.not_registered" in runs["missing"].metadata["error"]
    for run in runs.values():
        assert run.started is not None and run.ended is not None and run.backend_id == executor.executor_id
    tasks = {t.type: t for t in store.search_tasks()}
    assert tasks["ev"].current_interval == timedelta(minutes=30)
    assert tasks["quiet"].current_interval == timedelta(hours=2)
    assert tasks["boom"].retries_left == 0 and tasks["boom"].next_run == runs["boom"].ended + timedelta(minutes=5)
    assert tasks["fatal"].status is TaskStatus.DISABLED


def test_never_more_than_the_free_room_of_the_queue(store, clock, registry):
    release = threading.Event()
    registry.register("t.slow", lambda i: release.wait(10))
    store.create_task_type(task_type("slow", "t.slow", max_queue_length=3))
    store.create_tasks([NewTask("slow", clock.now(), TaskArguments((i,))) for i in range(20)])
    executor = EmbeddedExecutor(store.record_run_events, clock, node="test", workers=1, registry=registry, flush_interval=0.02)
    executor.start()
    runner = TaskRunner(store, executor, clock)
    try:
        assert runner.run_once() == 3
        wait_until(lambda: executor.waiting("slow") == 2, timeout=5, interval=0.01, what="one to start, two to wait")
        assert executor.waiting("slow") == 2
        assert runner.run_once() == 1  # room for one more
        assert runner.run_once() == 0
        assert executor.waiting("slow") == 3
    finally:
        release.set()
        executor.stop()
    assert len(store.list_task_runs(limit=100)) == 4


def test_priority_runner_serves_only_priority_tasks(store, clock, registry):
    store.create_task_type(task_type("ev", "t.eventful"))
    now = clock.now()
    store.create_tasks([NewTask("ev", now, TaskArguments(("plain",))),
                        NewTask("ev", now, TaskArguments(("urgent",)), priority=TaskPriority.HIGH)])
    dispatched, _ = run_pass(store, clock, registry, priority=True)
    assert dispatched == 1
    [run] = store.list_task_runs()
    assert store.get_tasks([run.task])[0].arguments.args == ("urgent",)


def test_task_type_filter(store, clock, registry):
    store.create_task_type(task_type("a", "t.quiet"))
    store.create_task_type(task_type("b", "t.quiet"))
    store.create_tasks([NewTask("a", clock.now()), NewTask("b", clock.now())])
    dispatched, _ = run_pass(store, clock, registry, task_types=["b"])
    assert dispatched == 1
    assert store.get_tasks([store.list_task_runs()[0].task])[0].type == "b"


def test_stopping_reports_queued_runs_as_lost(store, clock, registry):
    release = threading.Event()
    registry.register("t.block", lambda i: release.wait(10) and None)
    store.create_task_type(task_type("block", "t.block"))
    store.create_tasks([NewTask("block", clock.now(), TaskArguments((i,))) for i in range(5)])
    executor = EmbeddedExecutor(store.record_run_events, clock, node="test", workers=1, registry=registry, flush_interval=0.02)
    executor.start()
    assert TaskRunner(store, executor, clock).run_once() == 5
    wait_until(lambda: executor.waiting("block") == 4, timeout=5, interval=0.01, what="one to start, four to wait")
    threading.Timer(0.3, release.set).start()  # the running one ends while the executor stops
    executor.stop(grace=5)
    statuses = sorted(r.status.value for r in store.list_task_runs())
    assert statuses == ["lost"] * 4 + ["uneventful"]
    assert all(t.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED for t in store.search_tasks())


def test_runs_of_a_dead_executor_are_recovered_at_start(store, clock):
    store.create_task_type(task_type("a", "t.quiet"))
    store.create_tasks([NewTask("a", clock.now(), TaskArguments((i,))) for i in range(3)])
    store.grab_ready_tasks("a", clock.now(), 1, backend_id="embedded@test:999999999")  # no such pid
    store.grab_ready_tasks("a", clock.now(), 1, backend_id="embedded@test:1")  # pid 1 is alive
    store.grab_ready_tasks("a", clock.now(), 1, backend_id="embedded@other:999999999")  # another node
    lost = recover_dead_executors(store, clock, "test", own_id="embedded@test:12345")
    assert len(lost) == 1
    by_backend = {r.backend_id: r.status for r in store.list_task_runs()}
    assert by_backend == {"embedded@test:999999999": S.LOST, "embedded@test:1": S.SCHEDULED,
                          "embedded@other:999999999": S.SCHEDULED}


def test_runner_reaps_runs_that_never_reported(store, clock, registry):
    store.create_task_type(task_type("a", "t.quiet"))
    store.create_tasks([NewTask("a", clock.now())])
    store.grab_ready_tasks("a", clock.now(), 1, backend_id="celery-somewhere")
    executor = EmbeddedExecutor(store.record_run_events, clock, node="test", registry=registry)
    runner = TaskRunner(store, executor, clock, lost_run_timeout=timedelta(minutes=30))
    assert runner.reap_lost_runs() == []
    clock.advance(timedelta(minutes=31))
    assert len(runner.reap_lost_runs(force=True)) == 1
    assert store.list_task_runs()[0].status is S.LOST
