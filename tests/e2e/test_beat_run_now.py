"""Run now a schedule the beats send, with no beat running, on Debian's redis-server: ``ostinato schedule
run-now`` loads the beat's Celery app, claims a fire time of its own (with its audit event), publishes the
task once as a beat would (its task id from the schedule and that fire time, the beat's headers) and records
it sent. A send that fails is released to the beats, which send it at their next tick."""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import UTC, datetime, timedelta

import pytest
import redis as redis_client
from cli_helpers import ok, run

from ostinato.domain.clock import ManualClock
from ostinato.domain.firings import FiringStatus
from ostinato.domain.schedules import RunMode
from ostinato.integrations.celery.beat import OstinatoScheduler, send_task_id
from ostinato.integrations.celery.beat_once import FIRE_TIME_HEADER
from ostinato.integrations.celery.run_now import load_app, send_now
from ostinato.store import open_store
from test_servers.redis import RedisServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def redis_server():
    with RedisServer(persistent=False) as server:
        yield server


@pytest.fixture
def project(tmp_path, redis_server, fresh_url, request):
    """A Celery project importable from the current directory, its beat_schedule declared in the store."""
    module = f"proj_{request.node.name.replace('[', '_').replace(']', '_').replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(f"""
        from celery import Celery
        app = Celery({module!r}, broker={redis_server.url!r}, set_as_current=False)
        app.conf.beat_schedule = {{"nightly": {{"task": "{module}.report", "schedule": 86400.0,
                                               "args": ("all",), "options": {{"priority": 3}}}}}}
    """))
    ok(fresh_url, "db", "init")
    store = open_store(fresh_url)
    beat = OstinatoScheduler(load_app(module), clock=ManualClock(T0), store=store, lazy=True)
    beat.setup_schedule()  # its declarations, as a beat's start-up writes them; no beat runs after it
    client = redis_client.Redis(port=redis_server.port)
    client.flushall()
    yield module, store, client
    client.close()
    store.close()
    sys.modules.pop(module, None)


def messages(client) -> list[dict]:
    """Every message queued, whichever priority list holds it."""
    lists = [key for key in client.keys("celery*") if client.type(key) == b"list"]
    return [json.loads(raw) for key in lists for raw in client.lrange(key, 0, -1)]


def test_run_now_sends_a_beat_schedule_once_through_its_app_with_no_beat_running(project, fresh_url):
    module, store, client = project
    assert store.get_schedule("nightly").mode is RunMode.SEND
    out = ok(fresh_url, "schedule", "run-now", "nightly").output
    assert out.startswith(f"Sent nightly once now through Celery ({module}): task {module}.report, fire time ")
    [firing] = store.list_firings("nightly")
    assert firing.status is FiringStatus.SENT and "run-now" in firing.sender
    [message] = messages(client)
    headers = message["headers"]
    assert headers["task"] == f"{module}.report" and headers["id"] == send_task_id("nightly", firing.nominal_at)
    assert headers["celery_beat_task"] is True
    assert headers[FIRE_TIME_HEADER]["fire_time"] == firing.nominal_at.isoformat()
    [event] = store.list_audit(target="schedule:nightly")
    assert event.action == "schedule.run-now" and "a fire time of its own" in event.outcome and "@" in event.actor
    ok(fresh_url, "schedule", "run-now", "nightly", "--app", module)  # again: another fire time of its own
    assert len(messages(client)) == 2 and [f.status for f in store.list_firings("nightly")] == [FiringStatus.SENT] * 2


def test_run_now_of_a_paused_or_unknown_app_schedule_says_why_and_sends_nothing(project, fresh_url):
    module, store, client = project
    ok(fresh_url, "schedule", "pause", "nightly")
    paused = run(fresh_url, "schedule", "run-now", "nightly")
    assert paused.exit_code == 1 and "paused" in paused.output and "Traceback" not in paused.output
    ok(fresh_url, "schedule", "resume", "nightly")
    missing = run(fresh_url, "schedule", "run-now", "nightly", "--app", "no_such_project")
    assert missing.exit_code == 2 and missing.output.startswith("error: app:") and "no_such_project" in missing.output
    assert messages(client) == [] and store.list_firings("nightly") == []


def test_a_send_that_fails_is_handed_to_the_beats(project, fresh_url):
    module, store, client = project
    app = load_app(module)
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens there
    app.conf.broker_connection_max_retries = 0
    clock = ManualClock(T0 + timedelta(days=1))
    with pytest.raises(Exception):  # noqa: B017 -- the broker's own error, whichever it is
        send_now(store, app, "nightly", clock, actor="ana", sender="n/run-now", lease=timedelta(seconds=30))
    [firing] = store.list_firings("nightly")
    assert firing.status is FiringStatus.CLAIMED and firing.lease_until == clock.now()  # released
    taken = store.claim_firings(sender="n/beat-1", tag="b1", now=clock.now(), lease=timedelta(seconds=30))
    assert ("nightly", firing.nominal_at) in {(c.schedule, c.nominal_at) for c in taken}  # a beat sends it next
