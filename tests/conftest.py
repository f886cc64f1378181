"""Shared fixtures: a real PostgreSQL server for the session, and a `store` fixture
that runs each test against every store (SQLite file, PostgreSQL database cloned
from a migrated template; in tests/conformance also the remote client through the
API, and the read routing of ``read_db`` over a PostgreSQL database).

Set OSTINATO_TEST_PG_DSN to use an existing server instead of starting one. A
missing PostgreSQL is an error, never a skip.
"""

from __future__ import annotations

import itertools
import logging
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from ostinato.domain.clock import ManualClock
from ostinato.store import Store, open_store
from ostinato.store.postgresql import PostgresStore, ReplayState
from ostinato.store.read_routing import READS, ReadRoutingStore, ReadSource
from ostinato.store.sqlite import SQLiteStore

TEMPLATE = "ostinato_template"
# The stores' 5 s connect timeout is for a server that does not answer; the tests' own server, on a machine
# loaded by every worker, has once taken longer to accept a connection (libpq reads this itself).
os.environ.setdefault("PGCONNECT_TIMEOUT", "30")
_counter = itertools.count()


class PostgresServer:
    """A server the tests may create databases on (ours, or one given by DSN)."""

    def __init__(self, admin_dsn: str, cluster=None):
        self.admin_dsn = admin_dsn
        self.cluster = cluster

    def dsn(self, dbname: str) -> str:
        conninfo = psycopg.conninfo.conninfo_to_dict(self.admin_dsn)
        conninfo["dbname"] = dbname
        return psycopg.conninfo.make_conninfo(**conninfo)

    def create_database(self, name: str, template: str | None = None) -> str:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            suffix = f" TEMPLATE {template}" if template else ""
            conn.execute(f'CREATE DATABASE "{name}"{suffix}')
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    given = os.environ.get("OSTINATO_TEST_PG_DSN")
    if given:
        server = PostgresServer(given)
        yield server
        return
    from test_servers.postgres import PostgresCluster

    with PostgresCluster() as cluster:
        server = PostgresServer(cluster.dsn("postgres"), cluster)
        yield server


@pytest.fixture(scope="session")
def pg_template(pg_server: PostgresServer) -> str:
    """A database with the canonical schema, cloned for each test."""
    name = f"{TEMPLATE}_{uuid.uuid4().hex[:8]}"
    dsn = pg_server.create_database(name)
    store = PostgresStore(dsn)
    try:
        store.init_schema()
    finally:
        store.close()
    yield name
    pg_server.drop_database(name)


@pytest.fixture
def pg_dsn(pg_server: PostgresServer, pg_template: str) -> Iterator[str]:
    name = f"t_{os.getpid()}_{next(_counter)}"
    dsn = pg_server.create_database(name, template=pg_template)
    yield dsn
    pg_server.drop_database(name)


@pytest.fixture
def pg_store(pg_dsn: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_dsn)
    yield store
    store.close()


class CaughtUpStandby(PostgresStore):
    """A "standby" that is the primary's own database, and says it is a standby that has replayed everything:
    the read routing then sends every read there (and every write to the primary, noting its WAL position)
    while each read sees every write. A real streaming standby is tests/e2e/test_read_replica.py's."""

    def replay_state(self, past: str | None = None) -> ReplayState:
        return ReplayState(standby=True, lag_seconds=0.0, replayed=True)


@pytest.fixture
def routed_store(pg_dsn: str) -> Iterator[ReadRoutingStore]:
    """The store of the ``read_db`` setting: a :class:`ReadRoutingStore` over a PostgreSQL database and a
    :class:`CaughtUpStandby` of it. Every read the test makes in its own thread must have been served by the
    standby's side: one served by the primary is the routing's mistake, never a silent fallback."""
    store = ReadRoutingStore(PostgresStore(pg_dsn), CaughtUpStandby(pg_dsn), timedelta(seconds=10))
    reads: list[ReadSource] = []
    collecting = READS.set(reads)
    yield store
    READS.reset(collecting)
    store.close()
    on_primary = [source for source in reads if source.where != "standby"]
    assert not on_primary, f"reads the routing served from the primary: {on_primary[:3]}"


@pytest.fixture
def sqlite_store(tmp_path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "ostinato.db")
    store.init_schema()
    yield store
    store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request) -> Store:
    """Every store, one after the other: the conformance suite's subject (which also gets the remote one and
    the read routing)."""
    return request.getfixturevalue({"sqlite": "sqlite_store", "postgresql": "pg_store", "remote": "remote_store",
                                    "read-routing": "routed_store"}[request.param])


#: the stores of the conformance suite (tests/conformance): the local ones, the remote client of ``--url`` and
#: the read routing of ``read_db``
CONFORMANCE_STORES = ["sqlite", "postgresql", "remote", "read-routing"]


def _parametrized_names(mark) -> list[str]:
    names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc) -> None:
    """In tests/conformance, ``store`` is every one of :data:`CONFORMANCE_STORES`, unless a test names
    its stores itself (``pytest.mark.parametrize("store", [...], indirect=True)``, with its reason)."""
    if "store" not in metafunc.fixturenames or "conformance" not in metafunc.definition.path.parts:
        return
    if any("store" in _parametrized_names(m) for m in metafunc.definition.iter_markers("parametrize")):
        return
    metafunc.definition.add_marker(pytest.mark.parametrize("store", CONFORMANCE_STORES, indirect=True))


@pytest.hookimpl(tryfirst=True)  # after every reordering of the items, before pytest-xdist sends their order
def pytest_collection_finish(session: pytest.Session) -> None:
    """In a parallel run (pytest-xdist's ``-n``; ``make test`` runs one), the files of the tests marked ``long``
    are sent out first, so that the run does not end waiting on one of them (``--dist loadfile`` sends each
    file's tests to one worker, which runs them one after the other, wherever they stand in this order)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        session.items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(autouse=True)
def _root_logging_as_found() -> Iterator[None]:
    """Each test leaves the root logger as it found it: a command run in-process may configure logging (the
    services' commands install a handler that writes to the standard output of the moment), and a later test
    in the same worker would read its lines in another command's output."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture(scope="session")
def api_server():
    """One real HTTP server (uvicorn in a thread, a free port) for the session; each test puts its API in place."""
    from remote_server import ThreadedServer

    with ThreadedServer() as server:
        yield server


@pytest.fixture
def remote_store(sqlite_store, api_server) -> Iterator[Store]:
    """The client of ``ostinato --url``: a RemoteStore over a real socket to the API on a SQLite store
    (with an admin token, made on the server's store: tokens are not managed through the API)."""
    from ostinato.api import create_app
    from ostinato.api.tokens import hash_secret, new_secret
    from ostinato.remote import RemoteStore

    secret = new_secret()
    sqlite_store.create_api_token("remote-store-tests", "admin", hash_secret(secret), T0, actor="tests")
    api_server.app.current = create_app(sqlite_store)
    remote = RemoteStore(api_server.url, secret)
    yield remote
    remote.close()
    api_server.app.current = None


@pytest.fixture
def store_url(request, tmp_path) -> str:
    """A database URL with the schema in place; parametrise with indirect=True."""
    kind = getattr(request, "param", "sqlite")
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path}/ostinato.db"
        with open_store(url) as s:
            s.init_schema()
        return url
    return request.getfixturevalue("pg_dsn")


T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)
