"""The Celery path end to end over RabbitMQ: Debian's rabbitmq-server as the broker (a private,
throwaway node), `ostinato worker` processes, PostgreSQL, and the runner, the orchestrator,
the deadline scheduler and the listener of this process dispatching to them. The same main
scenario as over Redis (test_celery_path), and queue depths read from RabbitMQ with a passive
queue declare: a real depth, an unknown queue (RabbitMQ closes the channel), a broker that is
down or unreachable."""

from __future__ import annotations

import hashlib
import os
import time
from datetime import datetime, timedelta, timezone

import pytest
from test_celery_path import Services, final_runs, settings_for, start_worker, stop_process, wait_for

from ostinato.domain.clock import SystemClock
from ostinato.domain.errors import QueueUnavailable
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskRunStatus, TaskType
from ostinato.domain.visits import VisitOutcome
from ostinato.execution.celery_app import QueueDepths, make_celery_app
from ostinato.services.embedded import EmbeddedScheduler
from ostinato.store.postgresql import PostgresStore
from ostinato.testing.postgres import free_port
from ostinato.testing.rabbitmq import RabbitMQServer

pytestmark = pytest.mark.postgresql


@pytest.fixture(scope="module")
def rabbitmq():
    with RabbitMQServer() as server:
        yield server


def depth_eventually(depths: QueueDepths, queue: str, timeout: float = 15.0) -> int:
    """The queue's depth once the broker answers again (the first read after a restart may fail)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return depths.depth(queue)
        except QueueUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def settle(predicate, timeout: float, what: str) -> None:
    """Wait for a precondition; a timeout fails the test with pytest.fail (not an AssertionError, so that
    the xfail below, which expects an AssertionError, does not hide it)."""
    try:
        wait_for(predicate, timeout, what)
    except AssertionError as exc:
        pytest.fail(str(exc))


def test_tasks_visits_and_a_schedule_run_go_through_celery_and_come_back(pg_dsn, rabbitmq, tmp_path):
    out, intervals = tmp_path / "out.txt", tmp_path / "intervals.txt"
    now = datetime.now(timezone.utc)
    settings = settings_for(pg_dsn, rabbitmq.url)
    with PostgresStore(pg_dsn) as store:
        store.create_task_type(TaskType("rec", "record a key", "callables:record", max_queue_length=100))
        store.create_task_type(TaskType("load-git", "a loader", "callables:load_hashed", max_queue_length=100))
        store.create_task_type(TaskType("job", "a schedule's job", "callables:interval"))
        tasks = store.create_tasks([NewTask("rec", now, TaskArguments((str(out), f"k{i}")), policy=TaskPolicy.ONESHOT)
                                    for i in range(20)])
        [urgent] = store.create_tasks([NewTask("rec", now, TaskArguments((str(out), "urgent")), policy=TaskPolicy.ONESHOT,
                                               priority=TaskPriority.HIGH)])
        lister = store.get_or_create_lister("forge", "forge.example", now)
        urls = [f"https://forge.example/r{i}" for i in range(8)] + ["https://forge.example/gone"]
        store.record_listed_origins(lister.id, [ListedOrigin(u, "git", {"depth": 1}, last_update=now - timedelta(days=1))
                                                for u in urls], now)
        store.create_schedule(Schedule("every-minute", ScheduleKind.PERIODIC, "job", now,
                                       arguments=TaskArguments((str(intervals), "every-minute", 0.5)),
                                       scheduling_period=timedelta(minutes=1), cooldown_duration=timedelta(seconds=30)),
                              now, settings.schedule_timing())
        worker = start_worker(pg_dsn, rabbitmq.url, tmp_path / "worker.log")
        try:
            with Services(store, settings):
                ids = [t.id for t in tasks] + [urgent.id]
                wait_for(lambda: len(final_runs(store)) == len(ids), 60, "every task run to end")
                wait_for(lambda: all(s.last_visit_status is not None
                                     for s in store.get_visit_stats([(u, "git") for u in urls])),
                         60, "every origin to be visited")
                wait_for(lambda: any(r.status is RunStatus.SUCCEEDED for r in store.list_schedule_runs("every-minute")),
                         60, "the schedule's run to succeed")
        finally:
            stop_process(worker)
        worker_pid = worker.pid
        assert "amqp://guest:**@127.0.0.1:%d//" % rabbitmq.port in (tmp_path / "worker.log").read_text()

        runs = final_runs(store)
        assert {r.status for r in runs} == {TaskRunStatus.EVENTFUL}
        assert {r.backend_id for r in runs} == {f"celery:ostinato-{worker_pid}@{settings.node}"}
        assert all(r.started is not None for r in runs)  # the start was recorded
        keys = [line.split()[0] for line in out.read_text().splitlines()]
        assert sorted(keys) == sorted([f"k{i}" for i in range(20)] + ["urgent"])  # each ran exactly once
        assert {int(line.split()[1]) for line in out.read_text().splitlines()} != {os.getpid()}

        stats = {s.url: s for s in store.get_visit_stats([(u, "git") for u in urls])}
        for u in urls[:-1]:
            assert stats[u].last_visit_status is VisitOutcome.SUCCESSFUL
            assert stats[u].last_snapshot == hashlib.sha1(u.encode()).digest()
        assert stats[urls[-1]].last_visit_status is VisitOutcome.NOT_FOUND

        [run] = [r for r in store.list_schedule_runs("every-minute") if r.status is RunStatus.SUCCEEDED]
        [line] = intervals.read_text().splitlines()
        assert int(line.split()[3]) == worker_pid  # it ran in the worker, not here
        schedule = store.get_schedule("every-minute")
        assert schedule.owner_tag is None and schedule.last_good_start_at is not None


def test_queue_depths_are_read_from_rabbitmq(rabbitmq):
    app = make_celery_app(rabbitmq.url)
    queue = "ostinato.test-depth"
    with app.producer_or_acquire() as producer:
        for i in range(25):  # no worker consumes this queue
            app.send_task("ostinato.test-nothing", args=[i], queue=queue, producer=producer)
    depths = QueueDepths(app, cache_seconds=0)
    try:
        # without publisher confirms a send returns before RabbitMQ has routed the message: wait for it
        wait_for(lambda: depths.depth(queue) == 25, 10, "the 25 messages to be in the queue")
        assert depths.depth(queue) == 25
        # an unknown queue is empty; RabbitMQ closes the channel after the failed passive declare...
        assert depths.depth("ostinato.no-such-queue") == 0
        # ...and the next read on the same object still works
        assert depths.depth(queue) == 25
        assert depths.depth("ostinato.no-such-queue-either") == 0
        assert depths.depth("ostinato.no-such-queue") == 0
        assert depths.depth(queue) == 25

        # a broker that goes down: the depth is unavailable (dispatch waits), then comes back
        rabbitmq.kill()
        with pytest.raises(QueueUnavailable):
            depths.depth(queue)
        with pytest.raises(QueueUnavailable):
            depths.depth(queue)
        rabbitmq.start()
        # the same object reads real depths again (how many of the 25 survived the crash is
        # test_runs_sent_just_before_a_broker_crash_survive_it's business)
        survived = depth_eventually(depths, queue)
        with app.producer_or_acquire() as producer:
            for i in range(5):
                app.send_task("ostinato.test-nothing", args=[i], queue=queue, producer=producer)
        wait_for(lambda: depths.depth(queue) == survived + 5, 10, "the 5 more messages to be in the queue")
        assert depths.depth("ostinato.no-such-queue") == 0
        assert depths.depth(queue) == survived + 5
    finally:
        depths.close()

    # a broker that cannot be reached at all
    unreachable = QueueDepths(make_celery_app(f"amqp://guest:guest@127.0.0.1:{free_port()}//"), cache_seconds=0)
    began = time.monotonic()
    with pytest.raises(QueueUnavailable, match="ostinato.test-depth"):
        unreachable.depth(queue)
    assert time.monotonic() - began < 10
    unreachable.close()


def test_runs_sent_just_before_a_broker_crash_survive_it(pg_dsn, rabbitmq, tmp_path):
    out = tmp_path / "out.txt"
    now = datetime.now(timezone.utc)
    settings = settings_for(pg_dsn, rabbitmq.url)
    with PostgresStore(pg_dsn) as store:
        store.create_task_type(TaskType("rec-crash", "record a key", "callables:record", max_queue_length=1000))
        store.create_tasks([NewTask("rec-crash", now, TaskArguments((str(out), f"k{i}")), policy=TaskPolicy.ONESHOT)
                            for i in range(50)])
        dispatcher = EmbeddedScheduler(store, settings, SystemClock())
        dispatcher.start()
        depths = None
        try:
            sent = sum(r.run_once() for r in dispatcher.runners)
            if sent != 50:
                pytest.fail(f"{sent} runs sent instead of 50")
            depths = QueueDepths(dispatcher.executor.app, cache_seconds=0)
            settle(lambda: depths.depth("callables:record") == 50, 10, "the 50 messages to be in the queue")
            rabbitmq.restart()  # send_task returned for all 50, and the broker counted them
            assert depth_eventually(depths, "callables:record") == 50
        finally:
            if depths is not None:
                depths.close()
            dispatcher.stop()
            _purge(rabbitmq.url, "callables:record")  # nothing left for a later test's worker


def _purge(url: str, queue: str) -> None:
    app = make_celery_app(url)
    with app.connection_for_write() as connection:
        try:
            connection.default_channel.queue_purge(queue)
        except Exception:  # the queue does not exist
            pass
