"""The Celery path end to end, with real parts: Debian's redis-server as the broker,
`ostinato worker` processes (real Celery workers), PostgreSQL, and the runner, the
orchestrator, the deadline scheduler and the listener of this process dispatching
to them. Tasks, origin visits and a schedule run come back with correct outcomes;
a worker killed mid-run yields a lost task run and a stolen schedule run, both
retried; a broker restart and a listener that was down lose nothing."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from waiting import wait_until

from ostinato.config import Settings
from ostinato.domain.clock import SystemClock
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskRunStatus, TaskType
from ostinato.domain.visits import VisitOutcome
from ostinato.services.embedded_scheduler import EmbeddedScheduler
from ostinato.store.postgresql import PostgresStore
from test_servers.redis import RedisServer

HERE = Path(__file__).parent
pytestmark = pytest.mark.postgresql


@pytest.fixture(scope="module")
def redis():
    with RedisServer() as server:
        yield server


def settings_for(dsn: str, broker: str, **extra) -> Settings:
    values = {"db": dsn, "executor": "celery", "broker_url": broker, "poll_interval": "0.2s", "workers": 4,
              "queue_depth_cache": "0.2s", "lost_run_timeout": "1h", "worker_lost_after": "6s",
              "schedule_ping_interval": "0.3s", "schedule_ping_timeout": "1.5s", "schedule_steal_grace": "1s",
              "schedule_retry_backoff": "0.5s,1s,2s", **extra}
    return Settings().with_values(values)


def start_worker(dsn: str, broker: str, log: Path, *extra: str,
                 command: tuple[str, ...] = (sys.executable, "-m", "ostinato", "worker", "-c", "4")) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(HERE), "OSTINATO_DB": dsn, "OSTINATO_BROKER_URL": broker,
           "OSTINATO_SCHEDULE_PING_INTERVAL": "0.3s", "OSTINATO_SCHEDULE_PING_TIMEOUT": "1.5s",
           "OSTINATO_SCHEDULE_STEAL_GRACE": "1s"}
    handle = open(log, "ab")
    try:
        proc = subprocess.Popen([*command, *extra], env=env,
                                stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        handle.close()
    # ready before anything is dispatched: a schedule run must reach a worker within the ping timeout
    wait_for(lambda: proc.poll() is not None or " ready." in log.read_text(errors="replace"), 60, "the worker to be ready")
    assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
    return proc


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    wait_until(predicate, timeout=timeout, what=what, interval=0.1)


class Services:
    """The dispatching side in this process: runner, priority runner, orchestrator, scheduler, listener."""

    def __init__(self, store, settings: Settings, *, listen: bool = True):
        self.scheduler = EmbeddedScheduler(store, settings, SystemClock(), orchestrate=True, schedules=True, listen=listen)
        self.scheduler.summary_every = 3600
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.scheduler.start()
        self.scheduler.run_until(self.stop_event)

    def __enter__(self) -> Services:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_event.set()
        self.thread.join(30)
        self.scheduler.stop(5)




def final_runs(store) -> list:
    return [r for r in store.list_task_runs(limit=10_000) if r.status.is_final]


def test_tasks_visits_and_a_schedule_run_go_through_celery_and_come_back(pg_dsn, redis, tmp_path):
    check_tasks_visits_and_a_schedule_run(pg_dsn, redis.url, tmp_path)


def check_tasks_visits_and_a_schedule_run(pg_dsn: str, broker_url: str, tmp_path: Path) -> Path:
    """Tasks (one prioritised), origin visits (one not found) and a schedule run through a worker over
    ``broker_url``, checked; returns the worker's log (the same scenario runs on every broker)."""
    out, intervals = tmp_path / "out.txt", tmp_path / "intervals.txt"
    now = datetime.now(UTC)
    settings = settings_for(pg_dsn, broker_url)
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
        worker = start_worker(pg_dsn, broker_url, tmp_path / "worker.log")
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

        runs = final_runs(store)
        assert {r.status for r in runs} == {TaskRunStatus.EVENTFUL}
        assert {r.backend_id for r in runs} == {f"celery:ostinato-{worker_pid}@{settings.node}"}
        assert all(r.started is not None for r in runs)  # task-started events were recorded
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
    return tmp_path / "worker.log"


def test_a_killed_worker_loses_its_runs_and_they_are_retried_elsewhere(pg_dsn, redis, tmp_path):
    marker_task, marker_schedule = tmp_path / "task.txt", tmp_path / "schedule.txt"
    now = datetime.now(UTC)
    settings = settings_for(pg_dsn, redis.url)
    with PostgresStore(pg_dsn) as store:
        store.create_task_type(TaskType("slow", "slow the first time", "callables:slow_once", num_retries=2,
                                        retry_delay=timedelta(seconds=1)))
        [task] = store.create_tasks([NewTask("slow", now, TaskArguments((str(marker_task), "again")),
                                             policy=TaskPolicy.ONESHOT)])
        store.create_schedule(Schedule("nightly", ScheduleKind.PERIODIC, "slow", now,
                                       arguments=TaskArguments((str(marker_schedule), "again")),
                                       scheduling_period=timedelta(hours=1), cooldown_duration=timedelta(minutes=30)),
                              now, settings.schedule_timing())
        first = start_worker(pg_dsn, redis.url, tmp_path / "first.log")
        second = None
        try:
            with Services(store, settings):
                wait_for(lambda: marker_task.exists() and marker_schedule.exists(), 60, "both slow runs to start")
                wait_for(lambda: store.list_task_runs(task_id=task.id)[0].status is TaskRunStatus.STARTED, 30,
                         "the task run to be marked started")
                first.send_signal(signal.SIGKILL)
                first.wait(10)
                # the listener hears no heartbeat: the run is lost (a failure), retried after retry_delay
                wait_for(lambda: store.list_task_runs(task_id=task.id)[0].status is TaskRunStatus.LOST, 30,
                         "the killed worker's run to be marked lost")
                # the schedule's owner stopped pinging: the steal protocol ends the run, a retry follows
                wait_for(lambda: any(r.status is RunStatus.LOST for r in store.list_schedule_runs("nightly")), 30,
                         "the schedule's run to be ended as lost")
                second = start_worker(pg_dsn, redis.url, tmp_path / "second.log")
                wait_for(lambda: any(r.status is TaskRunStatus.EVENTFUL for r in store.list_task_runs(task_id=task.id)),
                         60, "the retried task run to succeed")
                wait_for(lambda: any(r.status is RunStatus.SUCCEEDED for r in store.list_schedule_runs("nightly")), 60,
                         "the retried schedule run to succeed")
        finally:
            stop_process(first, signal.SIGKILL)
            if second is not None:
                stop_process(second)
        task_runs = sorted(store.list_task_runs(task_id=task.id), key=lambda r: r.id)
        assert [r.status for r in task_runs] == [TaskRunStatus.LOST, TaskRunStatus.EVENTFUL]
        assert task_runs[0].backend_id == f"celery:ostinato-{first.pid}@{settings.node}"
        assert task_runs[1].backend_id == f"celery:ostinato-{second.pid}@{settings.node}"
        assert store.get_tasks([task.id])[0].retries_left == 1
        schedule_runs = sorted(store.list_schedule_runs("nightly"), key=lambda r: r.id)
        # retries sent while no worker was up waited past the ping timeout and were ended lost as well;
        # the second worker dropped those stale messages without running them
        statuses = [r.status for r in schedule_runs]
        assert statuses[0] is RunStatus.LOST and statuses[-1] is RunStatus.SUCCEEDED
        assert set(statuses[1:-1]) <= {RunStatus.LOST}
        assert [line.split()[0] for line in marker_task.read_text().splitlines()] == ["again"]
        assert [line.split()[0] for line in marker_schedule.read_text().splitlines()] == ["again"]


def test_a_broker_restart_and_a_listener_down_lose_nothing(pg_dsn, redis, tmp_path, caplog):
    out = tmp_path / "out.txt"
    now = datetime.now(UTC)
    settings = settings_for(pg_dsn, redis.url)
    with PostgresStore(pg_dsn) as store:
        store.create_task_type(TaskType("rec", "record a key", "callables:record", max_queue_length=1000))
        tasks = store.create_tasks([NewTask("rec", now, TaskArguments((str(out), f"k{i}")), policy=TaskPolicy.ONESHOT)
                                    for i in range(50)])
        # dispatch with no worker and no listener: the messages wait in the broker
        dispatcher = EmbeddedScheduler(store, settings, SystemClock())
        dispatcher.start()
        assert sum(r.run_once() for r in dispatcher.runners) == 50
        assert dispatcher.executor.waiting(store.get_task_type("rec")) == 50
        redis.restart(pause=0.5)  # the broker restarts: the queue is in its append-only file
        wait_for(lambda: dispatcher.executor.depths.depth("callables:record") == 50, 10, "the queue to come back")

        # a broker that is down stops dispatch for its queues, without crashing and without losing the tasks
        late = store.create_tasks([NewTask("rec", now, TaskArguments((str(out), f"late{i}")), policy=TaskPolicy.ONESHOT)
                                   for i in range(5)])
        redis.kill()
        time.sleep(0.3)  # past the cached depth (queue_depth_cache 0.2 s): time that must pass before the broker is read
        assert sum(r.run_once() for r in dispatcher.runners) == 0
        assert all(not store.list_task_runs(task_id=t.id) for t in late)
        redis.start()
        wait_for(lambda: sum(r.run_once() for r in dispatcher.runners) == 5, 20, "dispatch to resume")
        dispatcher.stop()

        # the worker runs everything while no listener is up: outcomes wait in their durable queue
        worker = start_worker(pg_dsn, redis.url, tmp_path / "worker.log")
        try:
            wait_for(lambda: out.exists() and len(out.read_text().splitlines()) == 55, 60, "the worker to run all 55")
            assert not final_runs(store)
            with Services(store, settings_for(pg_dsn, redis.url)):
                wait_for(lambda: len(final_runs(store)) == 55, 30, "the listener to record the 55 outcomes")
        finally:
            stop_process(worker)
        runs = final_runs(store)
        assert sorted(r.task for r in runs) == sorted(t.id for t in tasks + late)  # one outcome per run, none twice
        assert {r.status for r in runs} == {TaskRunStatus.EVENTFUL}


def test_ostinato_run_once_dispatches_to_a_worker_and_records_what_it_reports(pg_dsn, redis, tmp_path):
    out = tmp_path / "out.txt"
    now = datetime.now(UTC)
    with PostgresStore(pg_dsn) as store:
        store.create_task_type(TaskType("rec", "record a key", "callables:record"))
        tasks = store.create_tasks([NewTask("rec", now, TaskArguments((str(out), f"k{i}")), policy=TaskPolicy.ONESHOT)
                                    for i in range(5)])
        worker = start_worker(pg_dsn, redis.url, tmp_path / "worker.log")
        try:
            env = {**os.environ, "OSTINATO_DB": pg_dsn, "OSTINATO_EXECUTOR": "celery", "OSTINATO_BROKER_URL": redis.url}
            done = subprocess.run([sys.executable, "-m", "ostinato", "run", "--once"], env=env, capture_output=True,
                                  text=True, timeout=120)
        finally:
            stop_process(worker)
        assert done.returncode == 0, done.stderr
        assert "5 runs dispatched, 5 ended" in done.stdout
        runs = final_runs(store)
        assert sorted(r.task for r in runs) == sorted(t.id for t in tasks)
        assert {r.status for r in runs} == {TaskRunStatus.EVENTFUL}


def test_celerys_own_command_line_runs_the_same_worker(pg_dsn, redis, tmp_path):
    out = tmp_path / "out.txt"
    now = datetime.now(UTC)
    with PostgresStore(pg_dsn) as store:
        store.create_task_type(TaskType("rec", "record a key", "callables:record"))
        tasks = store.create_tasks([NewTask("rec", now, TaskArguments((str(out), f"k{i}")), policy=TaskPolicy.ONESHOT)
                                    for i in range(3)])
        celery = (str(Path(sys.executable).parent / "celery"), "-A", "ostinato.celery", "worker", "-Q",
                  "callables:record,save_code_now:callables:record", "-P", "threads", "-c", "2", "-E", "-n", "plain@node-9",
                  "--without-mingle", "--without-gossip", "-l", "INFO")
        worker = start_worker(pg_dsn, redis.url, tmp_path / "worker.log", command=celery)
        try:
            with Services(store, settings_for(pg_dsn, redis.url)):
                wait_for(lambda: len(final_runs(store)) == 3, 60, "the three runs to end")
        finally:
            stop_process(worker)
        runs = final_runs(store)
        assert sorted(r.task for r in runs) == sorted(t.id for t in tasks)
        assert {(r.status, r.backend_id) for r in runs} == {(TaskRunStatus.EVENTFUL, "celery:plain@node-9")}
