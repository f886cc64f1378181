"""Dispatch to Celery against a real Redis (Debian's redis-server), on both stores, no worker:
what a message looks like (queue, task id = run id, header, arguments), queue depths read
from the broker and cached, and what happens when the broker cannot be reached — runs
marked lost (and retried), visits handed back, schedule runs counted as failures,
dispatch paused without a crash."""

from __future__ import annotations

import base64
import json
import logging
import socket
from datetime import UTC, datetime, timedelta

import pytest
import redis as redis_client

from ostinato.domain.clock import ManualClock
from ostinato.domain.errors import QueueUnavailable
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind, ScheduleTiming
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskRunStatus, TaskStatus, TaskType
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.integrations.celery.app import QueueDepths, make_celery_app
from ostinato.integrations.celery.executor import CeleryExecutor
from ostinato.services.deadline_scheduler import DeadlineScheduler
from ostinato.services.orchestrator import Orchestrator
from ostinato.services.runner import TaskRunner
from test_servers.postgres import free_port
from test_servers.redis import RedisServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def redis_server():
    with RedisServer(persistent=False) as server:
        yield server


@pytest.fixture
def broker(redis_server):
    client = redis_client.Redis(port=redis_server.port)
    client.flushall()
    yield redis_server.url
    client.close()


@pytest.fixture
def clock():
    return ManualClock(T0)


def messages(broker_url: str, queue: str) -> list[dict]:
    """The messages waiting in a Redis queue, oldest first: headers, and the decoded body."""
    client = redis_client.Redis.from_url(broker_url)
    found = []
    for raw in reversed(client.lrange(queue, 0, -1)):  # kombu LPUSHes, consumers BRPOP
        envelope = json.loads(raw)
        body = json.loads(base64.b64decode(envelope["body"])) if envelope["properties"].get("body_encoding") == "base64" \
            else json.loads(envelope["body"])
        found.append({"headers": envelope["headers"], "body": body})
    return found


def closed_port_url() -> str:
    port = free_port()
    with socket.socket() as probe:  # nothing listens there
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    return f"redis://127.0.0.1:{port}/0"


def executor_for(store, clock, broker_url: str, **kw) -> CeleryExecutor:
    return CeleryExecutor(make_celery_app(broker_url), clock, node="n1", report=store.record_run_events,
                          release_visits=store.release_visits, **kw)


def seed_tasks(store, n: int, *, priority: TaskPriority | None = None, retries: int | None = None) -> list:
    if store.get_task_type("rec") is None:
        store.create_task_type(TaskType("rec", "record", "callables:record", max_queue_length=10, num_retries=retries,
                                        retry_delay=timedelta(minutes=5)))
    return store.create_tasks([NewTask("rec", T0, TaskArguments(("out.txt", f"k{i}"), {"delay": 0}), policy=TaskPolicy.ONESHOT,
                                       priority=priority) for i in range(n)])


def test_a_run_is_sent_to_its_backends_queue_with_the_run_id_as_task_id(store, clock, broker):
    seed_tasks(store, 3)
    [urgent] = seed_tasks(store, 1, priority=TaskPriority.HIGH)
    executor = executor_for(store, clock, broker)
    assert TaskRunner(store, executor, clock).run_once() == 3
    assert TaskRunner(store, executor, clock, priority=True).run_once() == 1

    sent = messages(broker, "callables:record")
    runs = {r.task: r for r in store.list_task_runs(limit=100)}
    assert [m["headers"]["id"] for m in sent] == [str(runs[t].id) for t in sorted(runs) if t != urgent.id]
    first = sent[0]
    assert first["headers"]["task"] == "callables:record"
    assert first["headers"]["ostinato"] == {"kind": "run", "task_type": "rec"}
    assert first["body"][0] == ["out.txt", "k0"] and first["body"][1] == {"delay": 0}
    [priority] = messages(broker, "save_code_now:callables:record")
    assert priority["headers"]["id"] == str(runs[urgent.id].id)
    # the run was recorded before the send, by the dispatcher; a worker's start will name itself
    assert {r.status for r in runs.values()} == {TaskRunStatus.SCHEDULED}
    assert {r.backend_id for r in runs.values()} == {"celery:sent-by-n1"}


def test_the_room_comes_from_the_brokers_queue_length(store, clock, broker):
    seed_tasks(store, 25)
    executor = executor_for(store, clock, broker, queue_depth_cache=0.0)
    runner = TaskRunner(store, executor, clock)
    assert runner.run_once() == 10  # max_queue_length 10
    assert runner.run_once() == 0  # the queue is full: nothing is consumed
    task_type = store.get_task_type("rec")
    assert executor.waiting(task_type) == 10
    assert executor.waiting(task_type, priority=True) == 0
    redis_client.Redis.from_url(broker).rpop("callables:record", 4)  # a worker takes four
    assert executor.waiting(task_type) == 6
    assert runner.run_once() == 4


def test_queue_depths_are_cached_briefly_and_an_unknown_queue_is_empty(broker):
    now = [0.0]
    depths = QueueDepths(make_celery_app(broker), cache_seconds=2.0, monotonic=lambda: now[0])
    client = redis_client.Redis.from_url(broker)
    assert depths.depth("nobody-sends-here") == 0
    client.lpush("q", "a", "b")
    assert depths.depth("q") == 2
    client.lpush("q", "c")
    assert depths.depth("q") == 2  # cached
    depths.forget("q", added=5)  # what this process sent since counts at once
    assert depths.depth("q") == 7
    now[0] = 2.5
    assert depths.depth("q") == 3
    depths.close()


def test_visits_go_to_their_loader_with_the_loader_keywords(store, clock, broker):
    store.create_task_type(TaskType("load-git", "loader", "callables:load_hashed", max_queue_length=100))
    lister = store.get_or_create_lister("forge", "forge.example", T0)
    store.record_listed_origins(lister.id, [ListedOrigin(f"https://forge.example/r{i}", "git", {"depth": 1},
                                                         last_update=T0 - timedelta(days=1)) for i in range(3)], T0)
    executor = executor_for(store, clock, broker)
    done = Orchestrator(store, executor, clock).run_once()
    assert sum(done["git"].visits.values()) == 3
    sent = messages(broker, "callables:load_hashed")
    assert sorted(m["body"][1]["url"] for m in sent) == [f"https://forge.example/r{i}" for i in range(3)]
    assert sent[0]["body"][1] == {"depth": 1, "url": sent[0]["body"][1]["url"], "lister_name": "forge",
                                  "lister_instance_name": "forge.example"}
    assert all(m["headers"]["id"].startswith("visit:git:") for m in sent)
    assert sent[0]["headers"]["ostinato"] == {"kind": "visit", "visit_type": "git"}


def test_an_unreachable_broker_pauses_dispatch_and_loses_nothing(store, clock, caplog):
    seed_tasks(store, 5, retries=2)
    url = closed_port_url()
    executor = executor_for(store, clock, url)
    task_type = store.get_task_type("rec")
    with pytest.raises(QueueUnavailable, match="queue 'callables:record'"):
        executor.waiting(task_type)
    with caplog.at_level(logging.ERROR, logger="ostinato"):
        assert TaskRunner(store, executor, clock).run_once() == 0
    assert "rec not dispatched" in caplog.text
    assert store.list_task_runs(limit=100) == []  # nothing grabbed while the depth is unknown
    assert {t.status for t in store.search_tasks(limit=100)} == {TaskStatus.NEXT_RUN_NOT_SCHEDULED}


def test_runs_whose_send_fails_are_lost_and_retried(store, clock, caplog):
    tasks = seed_tasks(store, 4, retries=2)
    executor = executor_for(store, clock, closed_port_url())
    grabbed = store.grab_ready_tasks("rec", T0, 10, backend_id=executor.executor_id)
    with caplog.at_level(logging.ERROR, logger="ostinato"):
        executor.submit(grabbed, "callables:record")
    assert "could not send 4 runs" in caplog.text
    runs = store.list_task_runs(limit=100)
    assert {r.status for r in runs} == {TaskRunStatus.LOST}
    assert all("could not send to the broker" in r.metadata["lost"] for r in runs)
    after = store.get_tasks([t.id for t in tasks])
    assert {t.status for t in after} == {TaskStatus.NEXT_RUN_NOT_SCHEDULED}  # retried: a retry consumed
    assert {t.retries_left for t in after} == {1}
    assert {t.next_run for t in after} == {T0 + timedelta(minutes=5)}
    assert executor.send_failures == 4 and executor.sent == 0


def test_visits_whose_send_fails_are_handed_back(store, clock):
    store.create_task_type(TaskType("load-git", "loader", "callables:load_hashed"))
    lister = store.get_or_create_lister("forge", "forge.example", T0)
    store.record_listed_origins(lister.id, [ListedOrigin(f"https://forge.example/r{i}", "git") for i in range(2)], T0)
    executor = executor_for(store, clock, closed_port_url())
    visits = store.grab_next_visits("git", [GrabRequest(VisitPolicy.ORIGINS_WITHOUT_LAST_UPDATE, 10)], T0)
    assert len(visits) == 2
    assert store.grab_next_visits("git", [GrabRequest(VisitPolicy.ORIGINS_WITHOUT_LAST_UPDATE, 10)], T0) == []
    executor.submit_visits(visits, "callables:load_hashed")
    again = store.grab_next_visits("git", [GrabRequest(VisitPolicy.ORIGINS_WITHOUT_LAST_UPDATE, 10)], T0)
    assert sorted(v.url for v in again) == sorted(v.url for v in visits)  # free at once, not after a day


def test_a_schedule_run_whose_send_fails_counts_as_a_failure(store, clock):
    store.create_task_type(TaskType("job", "a job", "callables:interval"))
    timing = ScheduleTiming()
    store.create_schedule(Schedule("hourly", ScheduleKind.PERIODIC, "job", T0 - timedelta(hours=2),
                                   scheduling_period=timedelta(hours=1), cooldown_duration=timedelta(minutes=30)), T0, timing)
    executor = executor_for(store, clock, closed_port_url())
    scheduler = DeadlineScheduler(store, clock, node="n1", remote=executor, timing=timing)
    assert scheduler.start() == []
    assert scheduler.run_once() == 1
    [run] = store.list_schedule_runs("hourly")
    assert run.status is RunStatus.FAILED and "not sent to a worker" in run.detail["error"]
    schedule = store.get_schedule("hourly")
    assert schedule.owner_tag is None and schedule.failure_count == 1
