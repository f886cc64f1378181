"""Reads from a PostgreSQL streaming standby (the ``read_db`` setting), on a real primary and a standby built
by ``pg_basebackup``: reads are served by the standby (shown by pausing its replay: they see its older rows),
a write is never sent there and this process's own writes are read from the primary until the standby has
them, a standby further behind than the bound sends reads back to the primary, and so does a standby that
stops. The API says where each answer's reads were served, and ``ostinato --read-db`` commands use it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from fastapi.testclient import TestClient
from waiting import wait_until

from ostinato.api import create_app
from ostinato.api.tokens import hash_secret, new_secret
from ostinato.config import Settings
from ostinato.domain.clock import ManualClock
from ostinato.domain.schedules import Schedule, ScheduleKind
from ostinato.store.postgresql import PostgresStore
from ostinato.store.read_routing import MEASURE_EVERY, READ_VERBS, WRITE_VERBS, ReadRoutingStore
from test_servers.postgres import PostgresCluster, PostgresStandby

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
H = timedelta(hours=1)


@pytest.fixture(scope="module")
def primary():
    with PostgresCluster() as cluster:
        cluster.create_database("ostinato")
        store = PostgresStore(cluster.dsn("ostinato"))
        store.init_schema()
        store.close()
        yield cluster


@pytest.fixture
def standby(primary):
    with PostgresStandby(primary) as replica:
        yield replica


def schedule(name: str) -> Schedule:
    return Schedule(name, ScheduleKind.PERIODIC, "scrape", T0, scheduling_period=H)


def replayed(standby: PostgresStandby, name: str, timeout: float = 30) -> None:
    """Wait until the standby has the schedule ``name``."""
    with psycopg.connect(standby.dsn("ostinato"), autocommit=True) as conn:
        wait_until(lambda: conn.execute("SELECT 1 FROM schedule WHERE name = %s", (name,)).fetchone(), timeout=timeout,
                   what=f"the standby to replay {name}")


def behind(standby: PostgresStandby, seconds: float, timeout: float = 30) -> None:
    """Wait until the standby has received WAL it has not replayed, and its last replayed transaction is more
    than ``seconds`` old: the lag the routing measures (``PostgresStore.replay_state``)."""
    with psycopg.connect(standby.dsn("ostinato"), autocommit=True) as conn:
        wait_until(lambda: conn.execute(
            "SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn() "
            "AND now() - pg_last_xact_replay_timestamp() > make_interval(secs => %s)", (seconds,)).fetchone()[0],
            timeout=timeout, what=f"the standby to be {seconds} s behind")


def replay(standby: PostgresStandby, paused: bool) -> None:
    with psycopg.connect(standby.dsn("ostinato"), autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()" if paused else "SELECT pg_wal_replay_resume()")


@pytest.fixture
def stores(primary, standby):
    writer = PostgresStore(primary.dsn("ostinato"))  # another process's writes
    with psycopg.connect(primary.dsn("ostinato"), autocommit=True) as conn:
        conn.execute("TRUNCATE schedule, api_token, console_session")
    routing = ReadRoutingStore(PostgresStore(primary.dsn("ostinato")), PostgresStore(standby.dsn("ostinato")),
                               timedelta(seconds=30))
    yield writer, routing
    routing.close()
    writer.close()


def test_reads_are_served_by_the_standby_and_writes_never_go_there(stores, standby):
    writer, routing = stores
    writer.create_schedule(schedule("first"), T0)
    replayed(standby, "first")
    assert routing.get_schedule("first") is not None and routing.last_read.where == "standby"
    replay(standby, paused=True)
    writer.create_schedule(schedule("second"), T0)  # on the primary, not replayed
    assert [s.name for s in routing.list_schedules()] == ["first"]  # the standby's older rows: it served them
    assert routing.last_read.where == "standby"
    # a write goes to the primary (the standby refuses writes), and this store's reads then wait for it there
    routing.create_schedule(schedule("mine"), T0)
    assert routing.get_schedule("mine") is not None
    assert routing.last_read.where == "primary" and "last write" in routing.last_read.reason
    replay(standby, paused=False)
    replayed(standby, "mine")
    wait_until(lambda: routing.get_schedule("mine") is not None and routing.last_read.where == "standby", timeout=10,
               interval=0.1, what="this store to read its own write from the standby")
    # every verb that writes is routed to the primary; the reads are the verbs a read token is served
    assert not READ_VERBS & WRITE_VERBS
    assert {"create_schedule", "grab_next_visits", "record_visit_statuses", "request_schedule_run"} <= WRITE_VERBS
    assert {"get_schedule", "list_schedules", "get_visit_stats", "get_origin_metrics"} <= READ_VERBS


def test_a_standby_too_far_behind_or_stopped_sends_reads_to_the_primary(primary, standby, stores, caplog):
    writer, _ = stores
    ticks = [1000.0]  # the routing's monotonic clock: a measure is trusted until MEASURE_EVERY has passed on it
    routing = ReadRoutingStore(PostgresStore(primary.dsn("ostinato")), PostgresStore(standby.dsn("ostinato")),
                               timedelta(seconds=1), monotonic=lambda: ticks[0])
    try:
        writer.create_schedule(schedule("old"), T0)
        replayed(standby, "old")
        replay(standby, paused=True)
        writer.create_schedule(schedule("new"), T0)
        behind(standby, 1)  # it has received it, not replayed it: more than the bound behind
        assert {s.name for s in routing.list_schedules()} == {"old", "new"}
        source = routing.last_read
        assert source.where == "primary" and source.lag_seconds > 1 and "over the bound of 1 s" in source.reason
        said = [r.getMessage() for r in caplog.records if "behind, over read_max_lag" in r.getMessage()]
        assert len(said) == 1 and "reading from the primary until it catches up" in said[0]
        routing.list_schedules()
        ticks[0] += MEASURE_EVERY + 0.05
        routing.list_schedules()  # measured again, still behind: not said again
        assert sum("behind, over read_max_lag" in r.getMessage() for r in caplog.records) == 1
        replay(standby, paused=False)
        replayed(standby, "new")
        ticks[0] += MEASURE_EVERY + 0.05
        routing.list_schedules()
        assert routing.last_read.where == "standby"
        assert any("back within read_max_lag" in r.getMessage() for r in caplog.records)
        standby.stop()
        ticks[0] += MEASURE_EVERY + 0.05  # past the time a measure of the standby is trusted for
        assert {s.name for s in routing.list_schedules()} == {"old", "new"}  # no error: the primary answers
        assert routing.last_read.where == "primary" and "cannot be reached" in routing.last_read.reason
    finally:
        routing.close()


def test_the_api_says_where_each_answer_was_read(stores, standby):
    writer, routing = stores
    secret = new_secret()
    writer.create_api_token("reader", "read", hash_secret(secret), T0, actor="tests")
    writer.create_schedule(schedule("shown"), T0)
    replayed(standby, "shown")
    client = TestClient(create_app(routing, Settings(), ManualClock(T0)))
    answer = client.get("/api/v1/schedules", headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 200 and [s["name"] for s in answer.json()["items"]] == ["shown"]
    assert answer.headers["x-ostinato-read-from"] == "standby"
    assert float(answer.headers["x-ostinato-read-lag"]) < 30
    page = client.get("/", headers={"Authorization": f"Bearer {secret}"})
    assert page.status_code == 200 and "read from the standby" in page.text
    assert "x-ostinato-read-from" not in client.get("/health").headers  # no read through the routing


def test_commands_that_only_read_use_the_standby_the_others_the_primary(stores, primary, standby, monkeypatch):
    from click.testing import CliRunner

    from ostinato.cli import cli

    writer, _ = stores
    writer.create_schedule(schedule("listed"), T0)
    replayed(standby, "listed")
    replay(standby, paused=True)
    writer.create_schedule(schedule("unseen"), T0)
    monkeypatch.setenv("OSTINATO_READ_DB", standby.dsn("ostinato"))

    def run(*args):
        result = CliRunner().invoke(cli, ["--db", primary.dsn("ostinato"), *args])
        assert result.exit_code in (0, 1), result.output
        return result.output

    assert "unseen" not in run("schedule", "list") and "listed" in run("schedule", "list")  # the standby's rows
    assert "unseen" in run("schedule", "export")  # a backup reads the primary
    assert "Paused listed" in run("schedule", "pause", "listed")  # a write: the primary
    replay(standby, paused=False)


def test_a_read_db_that_is_no_standby_is_never_read(primary, stores, caplog):
    """A misconfigured read_db naming a primary (this one, or another's): its rows may not be db's."""
    writer, _ = stores
    writer.create_schedule(schedule("only-here"), T0)
    other = PostgresCluster()
    other.start()
    try:
        other.create_database("ostinato")
        PostgresStore(other.dsn("ostinato")).init_schema()
        routing = ReadRoutingStore(PostgresStore(primary.dsn("ostinato")), PostgresStore(other.dsn("ostinato")),
                                   timedelta(seconds=30))
        try:
            assert [s.name for s in routing.list_schedules()] == ["only-here"]  # db's rows, not the other's
            assert routing.last_read.where == "primary" and "not a standby" in routing.last_read.reason
            assert "read_db is not a standby" in caplog.text
        finally:
            routing.close()
    finally:
        other.stop()
