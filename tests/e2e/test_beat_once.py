"""Each fire time published once on a Redis broker (``ostinato.integrations.celery.beat_once``), with
Debian's redis-server: a beat that dies after the broker took its message and before it recorded
the send leaves a claim another beat takes over when the lease ends; that beat finds the fire
time's marker, publishes nothing, and records it sent. Messages without a fire time, and other
producers, publish as kombu does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import redis as redis_client
from celery import Celery

from ostinato.config import Settings
from ostinato.domain.clock import ManualClock
from ostinato.domain.firings import FiringStatus
from ostinato.integrations.celery.beat import OstinatoScheduler, send_task_id
from ostinato.integrations.celery.beat_once import (
    FIRE_TIME_HEADER,
    MARKER_TTL,
    RECORDED_TTL,
    OnceChannel,
    marker_key,
    once_connection,
)
from test_servers.redis import RedisServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)


@pytest.fixture(scope="module")
def redis_server():
    with RedisServer(persistent=False) as server:
        yield server


@pytest.fixture
def broker(redis_server):
    client = redis_client.Redis(port=redis_server.port)
    client.flushall()
    yield client
    client.close()


def app_on(url: str) -> Celery:
    app = Celery("once", broker=url, set_as_current=False)
    app.conf.beat_schedule = {"every-10s": {"task": "once.record", "schedule": 10.0, "args": ("tick",)}}
    return app


def queued(broker) -> list[bytes]:
    return broker.lrange("celery", 0, -1)


def test_a_fire_time_is_pushed_once_and_other_messages_as_before(broker, redis_server):
    app = app_on(redis_server.url)
    fire = {"schedule": "every-10s", "fire_time": T0.isoformat(), "sender": "node/beat-1"}
    with once_connection(app.connection_for_write()) as connection:
        producer = app.amqp.Producer(connection)
        assert isinstance(producer.channel, OnceChannel)
        for _ in range(2):
            app.send_task("once.record", ("tick",), producer=producer, task_id="fire-1", headers={FIRE_TIME_HEADER: fire})
        assert len(queued(broker)) == 1 and producer.channel.already_published == 1
        assert MARKER_TTL - 5 < broker.ttl(marker_key("fire-1")) <= MARKER_TTL
        producer.channel.recorded(["fire-1"])
        assert 0 < broker.ttl(marker_key("fire-1")) <= RECORDED_TTL
        for _ in range(2):  # not a fire time: as kombu publishes
            app.send_task("once.record", ("other",), producer=producer, task_id="plain")
        assert len(queued(broker)) == 3
    with app.connection_for_write() as plain:  # the app's own connections are not changed
        assert not isinstance(app.amqp.Producer(plain).channel, OnceChannel)


def test_a_beat_killed_before_recording_its_send_is_not_sent_again(broker, redis_server, sqlite_store):
    clock, ticks = ManualClock(T0), [0.0]
    settings = Settings().with_values({"beat_lease": "30s"})

    def beat() -> OstinatoScheduler:
        return OstinatoScheduler(app_on(redis_server.url), clock=clock, store=sqlite_store, settings=settings,
                                 monotonic=lambda: ticks[0], lazy=True)

    dying, survivor = beat(), beat()
    dying.setup_schedule()
    clock.advance(timedelta(seconds=10))
    ticks[0] += 10
    [claim] = sqlite_store.claim_firings(sender=dying.sender, tag="dying", now=clock.now(), lease=LEASE)
    dying.send(claim, dying.producer)  # the broker took it; the beat dies before recording it
    assert sqlite_store.list_firings("every-10s")[0].status is FiringStatus.CLAIMED

    clock.advance(LEASE + timedelta(seconds=1))  # the lease ended: the survivor takes the claim over
    ticks[0] += 31 + 30
    survivor.tick()
    records = {r.nominal_at: r.status for r in sqlite_store.list_firings("every-10s")}
    assert records[claim.nominal_at] is FiringStatus.SENT
    assert survivor.producer.channel.already_published == 1
    task_ids = [m for m in queued(broker) if send_task_id("every-10s", claim.nominal_at).encode() in m]
    assert len(task_ids) == 1  # published once, by the beat that died
    sent = [at for at, status in records.items() if status is FiringStatus.SENT]
    assert len(sent) == 2 and len(queued(broker)) == 2  # and the one due now, sent once by the survivor
    dying.close()
    survivor.close()
