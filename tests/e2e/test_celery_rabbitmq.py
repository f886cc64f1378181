"""The Celery path end to end over RabbitMQ: Debian's rabbitmq-server as the broker (a private,
throwaway node), `ostinato worker` processes, PostgreSQL, and the runner, the orchestrator,
the deadline scheduler and the listener of this process dispatching to them. The same main
scenario as over Redis (test_celery_path), and queue depths read from RabbitMQ with a passive
queue declare: a real depth, an unknown queue (RabbitMQ closes the channel), a broker that is
down or unreachable."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from test_celery_path import (
    check_tasks_visits_and_a_schedule_run,
    settings_for,
    wait_for,
)
from waiting import wait_until

from ostinato.domain.clock import SystemClock
from ostinato.domain.errors import QueueUnavailable
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskType
from ostinato.integrations.celery.app import QueueDepths, make_celery_app
from ostinato.services.embedded_scheduler import EmbeddedScheduler
from ostinato.store.postgresql import PostgresStore
from test_servers.postgres import free_port
from test_servers.rabbitmq import RabbitMQServer

pytestmark = pytest.mark.postgresql


@pytest.fixture(scope="module")
def rabbitmq():
    with RabbitMQServer() as server:
        yield server


def depth_eventually(depths: QueueDepths, queue: str, timeout: float = 15.0) -> int:
    """The queue's depth once the broker answers again (the first read after a restart may fail)."""
    refusals: list[QueueUnavailable] = []

    def read() -> tuple[int] | None:  # in a tuple: a depth of 0 is an answer too
        try:
            return (depths.depth(queue),)
        except QueueUnavailable as exc:
            refusals.append(exc)
            return None

    return wait_until(read, timeout=timeout, what=f"the broker to answer the depth of {queue}", interval=0.2,
                      detail=lambda: f"last refusal: {refusals[-1]!r}")[0]


def settle(predicate, timeout: float, what: str) -> None:
    """Wait for a precondition; a timeout fails the test with pytest.fail (not an AssertionError, so that
    the xfail below, which expects an AssertionError, does not hide it)."""
    try:
        wait_for(predicate, timeout, what)
    except AssertionError as exc:
        pytest.fail(str(exc))


def test_tasks_visits_and_a_schedule_run_go_through_celery_and_come_back(pg_dsn, rabbitmq, tmp_path):
    log = check_tasks_visits_and_a_schedule_run(pg_dsn, rabbitmq.url, tmp_path)
    assert f"amqp://guest:**@127.0.0.1:{rabbitmq.port:d}//" in log.read_text()


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
    now = datetime.now(UTC)
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
