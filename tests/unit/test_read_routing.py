"""The read routing (``store/read_routing.py``) declares every verb of ``Store`` and sends each where its list
says: a read to the standby when it is close enough and has this store's writes (else the primary), a write
to the primary with the WAL position noted after it, any other verb to the primary. On two recording stand-ins
for the PostgreSQL stores; the real primary and standby are tests/e2e/test_read_replica.py's."""

from __future__ import annotations

import inspect
from datetime import timedelta

import pytest

from ostinato.store.interface import Store
from ostinato.store.postgresql import ReplayState
from ostinato.store.read_routing import MEASURE_EVERY, NO_POSITION, READ_VERBS, WRITE_VERBS, ReadRoutingStore, ReadSource

#: every public method of Store, abstract or not (close included)
VERBS = sorted(name for name, member in inspect.getmembers(Store, callable) if not name.startswith("_"))


class Recording:
    """A stand-in for a PostgreSQL store: each verb records its call; its replay state is what the test sets."""

    dialect = "postgresql"

    def __init__(self, name: str, calls: list[tuple[str, str]]):
        self.name, self.calls = name, calls
        self.state = ReplayState(standby=True, lag_seconds=0.0, replayed=True)
        self.position = "0/10"
        self.asked_past: list[str | None] = []

    def wal_position(self) -> str:
        return self.position

    def replay_state(self, past: str | None = None) -> ReplayState:
        self.asked_past.append(past)
        if isinstance(self.state, Exception):
            raise self.state
        return self.state

    def __getattr__(self, verb: str):
        if verb.startswith("_"):
            raise AttributeError(verb)

        def call(*args, **kwargs):
            self.calls.append((self.name, verb))
            return self.name

        return call


@pytest.fixture
def routing():
    calls: list[tuple[str, str]] = []
    ticks = [0.0]
    primary, standby = Recording("primary", calls), Recording("standby", calls)
    store = ReadRoutingStore(primary, standby, timedelta(seconds=10), monotonic=lambda: ticks[0])
    store.ticks = ticks
    return store


def later(routing: ReadRoutingStore) -> None:
    """Past the time a measure of the standby is trusted for."""
    routing.ticks[0] += MEASURE_EVERY + 0.01


def test_every_verb_of_store_is_declared_on_the_class_under_its_own_name():
    assert "__getattr__" not in vars(ReadRoutingStore)
    assert not ReadRoutingStore.__abstractmethods__
    missing = [verb for verb in VERBS if verb not in vars(ReadRoutingStore)]
    assert not missing, f"verbs of Store that ReadRoutingStore does not declare: {missing}"
    assert [verb for verb in VERBS if vars(ReadRoutingStore)[verb].__name__ != verb] == []
    assert READ_VERBS <= set(VERBS) and WRITE_VERBS <= set(VERBS) and not READ_VERBS & WRITE_VERBS
    assert isinstance(ReadRoutingStore.__new__(ReadRoutingStore), Store)


@pytest.mark.parametrize("verb", [v for v in VERBS if v != "close"])
def test_each_verb_goes_where_its_list_says(routing, verb):
    primary, standby = routing.primary, routing.standby
    assert getattr(routing, verb)() == ("standby" if verb in READ_VERBS else "primary")
    assert primary.calls == [("standby" if verb in READ_VERBS else "primary", verb)]
    if verb in READ_VERBS:  # a read after a write waits for the standby to pass the write's position
        primary.position = "0/20"
        routing.create_schedule()
        later(routing)
        getattr(routing, verb)()
        assert standby.asked_past[-1] == "0/20"
    else:
        later(routing)
        routing.get_schedule()  # a read measures the standby again, asking past the last write's position
        assert standby.asked_past[-1] == ("0/10" if verb in WRITE_VERBS else None)


def test_a_read_goes_to_the_primary_while_the_standby_lags_misses_our_write_or_is_no_standby(routing):
    standby = routing.standby
    for state, reason in [(ReplayState(True, 12.5, True), "12.5 s behind, over the bound of 10 s"),
                          (ReplayState(True, 0.0, False), "not replayed this process's last write"),
                          (ReplayState(False, 0.0, True), "read_db is not a standby")]:
        standby.state = state
        later(routing)
        assert routing.get_schedule("a") == "primary"
        assert routing.last_read.where == "primary" and reason in routing.last_read.reason
    standby.state = ReplayState(True, 3.0, True)
    later(routing)
    assert routing.get_schedule("a") == "standby"
    assert routing.last_read == ReadSource("standby", 3.0)


def test_a_standby_that_cannot_be_reached_is_left_alone_and_an_unknown_position_keeps_reads_on_the_primary(routing):
    import psycopg

    routing.standby.state = psycopg.OperationalError("connection refused")
    assert routing.list_schedules() == "primary" and "cannot be reached" in routing.last_read.reason
    routing.standby.state = ReplayState(True, 0.0, True)
    later(routing)
    assert routing.list_schedules() == "primary"  # left alone for RETRY_DOWN seconds
    routing.ticks[0] += 10
    assert routing.list_schedules() == "standby"

    def no_position():
        raise psycopg.OperationalError("gone")

    routing.primary.wal_position = no_position
    routing.create_schedule()
    later(routing)
    routing.list_schedules()
    assert routing.standby.asked_past[-1] == NO_POSITION


def test_close_closes_both(routing):
    routing.close()
    assert routing.primary.calls == [("standby", "close"), ("primary", "close")]


def test_a_read_db_needs_postgresql_on_both_sides(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from ostinato.cli import cli
    from ostinato.store.sqlite import SQLiteStore

    for name in ("db.sqlite", "standby.sqlite"):
        with SQLiteStore(tmp_path / name) as store:
            store.init_schema()
    monkeypatch.setenv("OSTINATO_READ_DB", f"sqlite:///{tmp_path}/standby.sqlite")
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path}/db.sqlite", "schedule", "list"])
    assert result.exit_code == 2 and "read_db: expected a PostgreSQL standby of a PostgreSQL db" in result.output
