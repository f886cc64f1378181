"""The same work reaches the same workers: the Celery messages Ostinato's runner, priority runner and
orchestrator send are the ones swh-scheduler 3.6.0's ``start-runner``, ``start-runner
--with-priority`` and ``schedule-recurrent`` send for the same task types, tasks and listed origins
(docs/reference/swh-compat-celery.md).

The peer runs as it is deployed: its own commands, in its own virtual environment
(``test_servers.swh_peer``, made on first use), on a database made by ``swh db create`` and
``swh db init`` and filled through its own API (``swh_compat_peer.py``). Both publish to one
throwaway Redis, one after the other; the messages are taken off the queues with kombu, unexecuted
(``celery_capture.py``), normalised only where two sends of the same work always differ (ids, the
producer's name) and compared field by field: queue, exchange, routing key, properties, Celery's
headers, positional and keyword arguments (their order too), embedded callbacks.

The task types have no ``max_queue_length``: the peer reads a queue's length from RabbitMQ's
management API only, which neither a Redis broker nor a RabbitMQ without that plugin answers.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis as redis_client
import swh_compat_data as data
from celery_capture import Captured, capture, differences
from waiting import wait_until

from ostinato.domain.clock import ManualClock
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskType
from ostinato.integrations.celery.app import HEADER, make_celery_app
from ostinato.integrations.celery.executor import CeleryExecutor
from ostinato.services.orchestrator import Orchestrator
from ostinato.services.runner import TaskRunner
from ostinato.store.postgresql import PostgresStore
from test_servers.redis import RedisServer
from test_servers.swh_peer import create_peer_database, default_peer_venv, ensure_peer_venv, peer_env

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
pytestmark = pytest.mark.postgresql


@pytest.fixture(scope="session")
def peer_python() -> Path:
    """swh-scheduler 3.6.0's interpreter (its environment is made on first use, see test_servers.swh_peer)."""
    return ensure_peer_venv(default_peer_venv(REPO))


@pytest.fixture(scope="module")
def redis_server():
    with RedisServer(persistent=False) as server:
        yield server


@pytest.fixture
def broker(redis_server) -> str:
    client = redis_client.Redis(port=redis_server.port)
    client.flushall()
    client.close()
    return redis_server.url


# -- the peer -------------------------------------------------------------------------


def peer_config(tmp_path: Path, dsn: str, broker: str) -> Path:
    """The peer's configuration file (JSON is YAML): its database, its broker, its git policies."""
    path = tmp_path / "swh-scheduler.yml"
    path.write_text(json.dumps({"scheduler": {"cls": "postgresql", "db": dsn}, "celery": {"task_broker": broker},
                                "scheduling_policy": {"git": data.PEER_GIT_POLICY}}))
    return path


def waiting(broker: str) -> int:
    client = redis_client.Redis.from_url(broker)
    try:
        return sum(client.llen(k) for k in client.keys("*") if client.type(k) == b"list" and not k.startswith(b"_kombu"))
    finally:
        client.close()


@pytest.fixture
def peer_dsn(peer_python, pg_server):
    """A database made by the peer's own ``swh db create`` and ``swh db init``, dropped after the test."""
    name = f"swh_compat_{int(time.time() * 1000)}"
    yield create_peer_database(peer_python, pg_server.admin_dsn, name)
    pg_server.drop_database(name)


def run_peer(peer_python: Path, dsn: str, broker: str, tmp_path: Path, now: datetime) -> list[Captured]:
    """The peer's runner, priority runner and recurrent-visit scheduler, as deployed; what they sent."""
    subprocess.run([str(peer_python), str(HERE / "swh_compat_peer.py"), dsn, now.isoformat()], check=True,
                   env=peer_env(), capture_output=True, text=True)
    config = peer_config(tmp_path, dsn, broker)
    swh = [str(peer_python.parent / "swh"), "scheduler", "--config-file", str(config)]
    env = peer_env(SWH_CONFIG_FILENAME=str(config))
    log = tmp_path / "peer.log"
    with open(log, "ab") as out:
        for extra in ([], ["--with-priority"]):  # one pass each (--period 0)
            subprocess.run([*swh, "start-runner", *extra], check=True, env=env, stdout=out, stderr=subprocess.STDOUT)
        sent_by_runners = waiting(broker)
        assert sent_by_runners == len(data.tasks(now)), log.read_text()
        # schedule-recurrent loops forever, one thread per visit type: stopped once every origin was sent
        recurrent = subprocess.Popen([*swh, "schedule-recurrent"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            def sent_every_origin() -> bool:
                assert recurrent.poll() is None, log.read_text()
                return waiting(broker) >= sent_by_runners + len(data.origins(now))

            wait_until(sent_every_origin, timeout=90, interval=0.2, what="schedule-recurrent to send every origin",
                       detail=lambda: f"{waiting(broker)} messages waiting; {log.read_text()[-2000:]}")
            time.sleep(0.5)  # a window in which anything more it sent would come: the counts compared below catch it
        finally:
            recurrent.send_signal(signal.SIGTERM)
            recurrent.wait(30)
    return capture(broker)


# -- Ostinato -------------------------------------------------------------------------


def fill_ostinato(store: PostgresStore, now: datetime) -> None:
    for name, backend, retries, delay in data.TASK_TYPES:
        store.create_task_type(TaskType(name, name, backend, default_interval=timedelta(days=64),
                                        min_interval=timedelta(hours=12), max_interval=timedelta(days=64),
                                        backoff_factor=2.0, num_retries=retries,
                                        retry_delay=timedelta(seconds=delay) if delay is not None else None))
    store.create_tasks([NewTask(t["type"], datetime.fromisoformat(t["next_run"]),
                                TaskArguments(tuple(t["args"]), t["kwargs"]), policy=TaskPolicy(t["policy"]),
                                priority=TaskPriority(t["priority"]) if t["priority"] else None)
                        for t in data.tasks(now)])
    listers = {name: store.get_or_create_lister(name, instance, now) for name, instance in data.LISTERS}
    for name in listers:
        store.record_listed_origins(listers[name].id, [
            ListedOrigin(o["url"], o["visit_type"], o["extra_loader_arguments"],
                         last_update=datetime.fromisoformat(o["last_update"]) if o["last_update"] else None)
            for o in data.origins(now) if o["lister"] == name], now)


def run_ostinato(dsn: str, broker: str, now: datetime) -> list[Captured]:
    """Ostinato's runner, priority runner and orchestrator, one pass each; what they sent."""
    store = PostgresStore(dsn)
    try:
        fill_ostinato(store, now)
        clock = ManualClock(now)
        executor = CeleryExecutor(make_celery_app(broker), clock, node="compat", report=store.record_run_events,
                                  release_visits=store.release_visits)
        TaskRunner(store, executor, clock).run_once()
        TaskRunner(store, executor, clock, priority=True).run_once()
        Orchestrator(store, executor, clock).run_once()
        executor.stop()
    finally:
        store.close()
    return capture(broker)


# -- the comparison --------------------------------------------------------------------


def by_work(messages: list[Captured]) -> dict[tuple[str, str], Captured]:
    found = {m.key(): m for m in messages}
    assert len(found) == len(messages), "one piece of work was sent twice"
    return found


#: the one difference, documented in docs/reference/swh-compat-celery.md: a task whose name does not start
#: with "swh." goes to Celery's default queue from the peer (its task_routes), to its own queue from Ostinato
KNOWN_DIFFERENCES = {data.PLAIN_TASK: [f"queue: 'celery' != '{data.PLAIN_TASK}'",
                                       f"routing_key: 'celery' != '{data.PLAIN_TASK}'"]}


def ostinato_header(message: Captured) -> dict:
    """What Ostinato's own header should say of this message (the peer sends none)."""
    task_type = next(name for name, backend, *_ in data.TASK_TYPES if backend == message.task)
    if "lister_name" in message.kwargs:
        return {"kind": "visit", "visit_type": task_type.removeprefix("load-")}
    return {"kind": "run", "task_type": task_type}


def test_the_same_work_reaches_the_same_workers(peer_python, peer_dsn, pg_dsn, broker, tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    peer = by_work(run_peer(peer_python, peer_dsn, broker, tmp_path, now))
    ours = by_work(run_ostinato(pg_dsn, broker, now))
    assert len(peer) == len(data.tasks(now)) + len(data.origins(now))
    assert sorted(ours) == sorted(peer)
    report = {}
    for key in sorted(peer):
        peer[key].check_ids()
        ours[key].check_ids()
        assert HEADER not in peer[key].headers and ours[key].headers[HEADER] == ostinato_header(ours[key])
        found = differences(peer[key].normalised(), ours[key].normalised(drop_headers=(HEADER,)))
        if found:
            report[key[0]] = found
    assert report == KNOWN_DIFFERENCES, json.dumps(report, indent=1)
    # what the fields are, beyond being the same on both sides
    urgent = ours[(data.GIT_LOADER, "https://git.example.net/someone/urgent.git")]
    assert urgent.queue == urgent.routing_key == f"save_code_now:{data.GIT_LOADER}"
    opam = ours[(data.OPAM_LOADER, "opam+https://opam.example.org/packages/ocamlfind")]
    assert opam.args == [] and opam.kwargs == {"url": "opam+https://opam.example.org/packages/ocamlfind",
                                               "lister_name": "opam", "lister_instance_name": None, **data.OPAM_EXTRA}
    assert list(opam.kwargs)[:3] == ["url", "lister_name", "lister_instance_name"]
    assert {m.headers["retries"] for m in ours.values()} == {0}
