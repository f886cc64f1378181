"""``ostinato import swh-scheduler`` against a real swh-scheduler 3.6 database.

The source is made the way the archive makes its own: in the peer's virtual environment
(``test_servers.swh_peer``, made once and reused: ``.bench-venvs/swh-scheduler-3.6.0``),
``swh db create`` and ``swh db init``, then filled through the peer's own Python API by
``bench/store/swh_import_peer.py`` with a small dataset that covers every table and edge (see
``bench/store/swh_import_data.py``). Each test imports it into SQLite and into PostgreSQL and compares
every row with the mapping of docs/reference/swh-import.md, restated here from the source's
own columns.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from cli_helpers import run
from psycopg.conninfo import conninfo_to_dict

from ostinato.config import Settings
from ostinato.integrations.swh.db_import import import_swh_scheduler
from ostinato.integrations.swh.db_mapping import Cooldowns
from ostinato.integrations.swh.db_source import SwhSchedulerSource
from ostinato.store import open_store
from test_servers.swh_peer import VENV_DIR, create_peer_database, ensure_peer_venv

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "bench" / "store" / "swh_import_peer.py"
ORIGINS, TASKS = 600, 150
NOW = datetime.now(UTC).replace(microsecond=0)
SETTINGS = Settings()
COOLDOWNS = Cooldowns(SETTINGS.absolute_cooldown, SETTINGS.failed_cooldown, SETTINGS.not_found_cooldown,
                      SETTINGS.in_flight_timeout)
TABLES = ("task_type", "task", "task_run", "listers", "listed_origins", "origin_visit_stats", "scheduler_metrics")
STORES = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture(scope="session")
def peer_python() -> Path:
    """The peer's interpreter (its environment made on the first run: about 15 s with pip's cache warm)."""
    venv = Path(os.environ.get("OSTINATO_SWH_PEER_VENV") or ROOT / VENV_DIR)
    return ensure_peer_venv(venv, log=lambda line: None)


@pytest.fixture(scope="session")
def swh_source(pg_server, peer_python) -> str:
    """An swh-scheduler database made by ``swh db init`` and filled through the peer's API."""
    name = f"swh_source_{uuid.uuid4().hex[:8]}"
    dsn = create_peer_database(peer_python, pg_server.admin_dsn, name, log=lambda line: None)
    subprocess.run([str(peer_python), str(DRIVER), "--dsn", dsn, "--origins", str(ORIGINS), "--tasks", str(TASKS),
                    "--now", NOW.isoformat(), "--batch", "250"], check=True, capture_output=True, text=True)
    yield dsn
    pg_server.drop_database(name)


def source_rows(dsn: str, query: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(query).fetchall()


def source_checksums(dsn: str) -> dict[str, str]:
    """An md5 of every row of every table of the source."""
    tables = (*TABLES, "visit_scheduler_queue_position", "dbversion", "dbmodule")
    return {t: source_rows(dsn, f"SELECT md5(coalesce(string_agg(r::text, ',' ORDER BY r::text), '')) FROM {t} AS r")[0][0]
            for t in tables}


def source_counts(dsn: str) -> dict[str, int]:
    return {table: source_rows(dsn, f"SELECT count(*) FROM {table}")[0][0] for table in TABLES}


def import_json(url: str, dsn: str, *args: str) -> dict:
    import json

    result = run(url, "import", "swh-scheduler", "--from", dsn, "--with-runs", "--json", *args)
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def target_dump(url: str) -> dict[str, list[tuple]]:
    """Every row of the tables an import writes, every column, as the database holds them."""
    keys = {"task_type": "type", "task": "id", "task_run": "id", "lister": "name, instance_name",
            "listed_origin": "url, visit_type, lister_id", "origin_visit_stats": "url, visit_type",
            "origin_metrics": "lister_id, visit_type"}
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return {t: conn.execute(f"SELECT * FROM {t} ORDER BY {k}").fetchall() for t, k in keys.items()}
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY {k}").fetchall() for t, k in keys.items()}


# -- every row, as docs/reference/swh-import.md maps it ------------------------------------------
def check_tasks(dsn: str, store) -> None:
    for type_, description, backend, default, low, high, backoff, queue, retries, delay in source_rows(
            dsn, "SELECT type, description, backend_name, default_interval, min_interval, max_interval, backoff_factor, "
                 "max_queue_length, num_retries, retry_delay FROM task_type"):
        got = store.get_task_type(type_)
        assert (got.description, got.backend_name, got.default_interval, got.min_interval, got.max_interval,
                got.max_queue_length, got.num_retries) == (description, backend, default, low, high, queue, retries)
        assert got.backoff_factor == backoff  # kept as given: 1 included
        assert got.retry_delay == delay
    rows = source_rows(dsn, "SELECT id, type, arguments, next_run, current_interval, status::text, policy::text, "
                            "retries_left, priority::text FROM task ORDER BY id")
    stored = {t.id: t for t in store.get_tasks([r[0] for r in rows])}
    for id_, type_, arguments, next_run, interval, status, policy, retries_left, priority in rows:
        t = stored[id_]
        assert (t.type, t.arguments.to_dict(), t.next_run, t.current_interval, t.status.value, t.policy.value,
                t.retries_left, t.priority.value if t.priority else None) == (
            type_, {"args": arguments.get("args", []), "kwargs": arguments.get("kwargs", {})}, next_run, interval,
            status, policy, retries_left, priority)
    runs = {r.id: r for r in store.list_task_runs(limit=100_000)}
    source_runs = source_rows(dsn, "SELECT id, task, backend_id, scheduled, started, ended, metadata, status::text "
                                   "FROM task_run ORDER BY id")
    assert len(runs) == len(source_runs)
    for id_, task, backend_id, scheduled, started, ended, metadata, status in source_runs:
        r = runs[id_]
        assert (r.task, r.backend_id, r.scheduled, r.started, r.ended, dict(r.metadata), r.status.value) == (
            task, backend_id, scheduled, started, ended, metadata or {}, status)


def check_origins(dsn: str, store) -> dict[str, int]:
    listers = {(l.name, l.instance_name): l for l in store.list_listers()}
    ids = {}
    for uuid_, name, instance, state, finished, updated in source_rows(
            dsn, "SELECT id, name, instance_name, current_state, last_listing_finished_at, updated FROM listers"):
        got = listers[(name, instance)]
        assert (dict(got.current_state), got.last_listing_finished_at, got.updated) == (state, finished, updated)
        ids[uuid_] = got.id
    stored = {(o.lister_id, o.origin.url, o.origin.visit_type): o for o in store.get_listed_origins(limit=100_000)}
    source = source_rows(dsn, "SELECT lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen, last_seen, "
                              "last_update, is_fork, forked_from_url FROM listed_origins")
    assert len(stored) == len(source)
    for lister, url, visit_type, extra, enabled, first_seen, last_seen, last_update, is_fork, forked_from in source:
        got = stored[(ids[lister], url, visit_type)]
        assert (dict(got.origin.extra_loader_arguments), got.origin.enabled, got.first_seen, got.last_seen,
                got.origin.last_update, got.origin.is_fork, got.origin.forked_from_url) == (
            extra, enabled, first_seen, last_seen, last_update, is_fork, forked_from)
    metrics = {(m.lister_id, m.visit_type): m for m in store.get_origin_metrics()}
    source_metrics = source_rows(dsn, "SELECT lister_id, visit_type, last_update, origins_known, origins_enabled, "
                                      "origins_never_visited, origins_with_pending_changes FROM scheduler_metrics")
    assert len(metrics) == len(source_metrics)
    for lister, visit_type, at, known, enabled, never, pending in source_metrics:
        m = metrics[(ids[lister], visit_type)]
        assert (m.computed_at, m.origins_known, m.origins_enabled, m.origins_never_visited,
                m.origins_with_pending_changes) == (at, known, enabled, never, pending)
    return ids


def expected_cooldown(last_visit, status, last_scheduled, now):
    """docs/reference/swh-import.md, "Cooldowns": a visit grabbed after the last one is held for Ostinato's
    in-flight timeout; none once over, and none after a visit (the peer's rules apply at each grab)."""
    if last_scheduled is not None and (last_visit is None or last_scheduled > last_visit):
        until = last_scheduled + COOLDOWNS.in_flight
        return until if until > now else None
    return None


def check_visit_stats(dsn: str, store, now: datetime) -> None:
    heads = dict(source_rows(dsn, "SELECT visit_type, position FROM visit_scheduler_queue_position"))
    anchors = dict(source_rows(dsn, "SELECT visit_type, greatest(max(last_scheduled), max(last_visit)) "
                                    "FROM origin_visit_stats GROUP BY visit_type"))
    rows = source_rows(dsn, "SELECT url, visit_type, last_successful, last_visit, last_visit_status::text, last_scheduled, "
                            "last_snapshot, next_visit_queue_position, successive_visits, next_position_offset "
                            "FROM origin_visit_stats")
    stored = {(s.url, s.visit_type): s for s in store.get_visit_stats([(r[0], r[1]) for r in rows])}
    theirs = {(s.url, s.visit_type): s for s in store.get_protocol_visit_stats([(r[0], r[1]) for r in rows])}
    assert len(stored) == len(theirs) == len(rows)
    for url, visit_type, success, visit, status, scheduled, snapshot, position, in_a_row, offset in rows:
        got = stored[(url, visit_type)]
        target = None if position is None else anchors[visit_type] + timedelta(seconds=position - heads.get(visit_type, 0))
        # the peer's fields as it has them (the swh protocol's face answers them), its last visit the newest status
        assert (got.last_visit, got.last_status_date, got.last_successful, got.last_scheduled) == (
            visit, visit, success, scheduled), url
        protocol = theirs[(url, visit_type)]
        assert (protocol.queue_position, protocol.position_offset, protocol.successive_visits) == (
            position, offset, in_a_row), url
        assert (got.last_visit_status.value if got.last_visit_status else None, got.last_snapshot) == (status, snapshot)
        assert got.failure_count == (in_a_row if status in ("failed", "not_found") else 0), url
        assert got.successful_visits == (in_a_row if status == "successful" else int(success is not None)), url
        assert got.next_visit_target == target, url
        assert got.last_eventful is got.last_uneventful is got.rate_changes is got.next_optimal_visit is None
        cooldown = got.cooldown_until if got.cooldown_until is None or got.cooldown_until > now else None
        assert cooldown == expected_cooldown(visit, status, scheduled, now), url


# -- the tests ----------------------------------------------------------------------------------
@STORES
def test_every_row_is_copied_and_a_second_run_changes_nothing(store_url, swh_source):
    before = source_checksums(swh_source)
    counts = source_counts(swh_source)
    first = import_json(store_url, swh_source)
    assert {t["table"]: t["read"] for t in first["tables"]} == counts
    assert {t["table"]: t["changed"] for t in first["tables"]} == counts  # an empty store: every row is new
    assert first["source_version"] == 38
    with open_store(store_url, create=False) as store:
        check_tasks(swh_source, store)
        ids = check_origins(swh_source, store)
        check_visit_stats(swh_source, store, datetime.now(UTC))
        assert len(ids) == 4
    dump = target_dump(store_url)
    again = import_json(store_url, swh_source, "--verify")
    assert {t["table"]: t["changed"] for t in again["tables"]} == dict.fromkeys(TABLES, 0)
    assert again["verify"]["differences"] == 0 and again["verify"]["compared"] == counts
    assert target_dump(store_url) == dump  # byte for byte: nothing was written
    assert source_checksums(swh_source) == before  # the source was only read


@STORES
def test_the_edges_of_the_dataset_are_where_the_mapping_says(store_url, swh_source):
    import_json(store_url, swh_source)
    with open_store(store_url, create=False) as store:
        lister_type = store.get_task_type("list-gitlab-full")
        assert lister_type.backoff_factor == 1.0 and lister_type.num_retries is None
        assert store.get_task_type("index-mimetype").retry_delay is None  # retried after an hour, as by the peer
        statuses = {r.status.value for r in store.list_task_runs(limit=1000)}
        assert statuses == {"scheduled", "started", "eventful", "uneventful", "failed", "permfailed", "lost"}
        tasks = store.search_tasks(limit=1000)
        assert {t.status.value for t in tasks} == {"next_run_not_scheduled", "next_run_scheduled", "completed", "disabled"}
        assert {t.priority.value if t.priority else None for t in tasks} == {None, "high", "normal", "low"}
        [never] = store.get_visit_stats([("https://cran.example.org/package=pkg599", "cran")]) or [None]
        assert never is None or never.last_status_date is None  # kind 9: never visited
        three = store.get_visit_stats([("https://github/group7/project-7", "git")])  # kind 7: not found twice
        assert three[0].last_visit_status.value == "not_found" and three[0].failure_count == 2
        # the peer disabled origins that failed three times: so are their listings here
        failed_thrice = [o for o in store.get_listed_origins(url="https://github/group118/project-118")]
        assert failed_thrice and not any(o.origin.enabled for o in failed_thrice)
    # Ostinato's own policies work on what was imported: a grab finds origins and marks them
    result = run(store_url, "origin", "grab-next", "git", "--count", "5", "--dry-run", "--json")
    assert result.exit_code == 0, result.output


@STORES
def test_an_import_stopped_midway_goes_on_when_run_again(store_url, swh_source):
    with open_store(store_url, create=False) as store, SwhSchedulerSource(swh_source) as source:
        calls = []
        original = store.import_listed_origins

        def stop_at_the_third_batch(origins):
            calls.append(len(origins))
            if len(calls) == 3:
                raise KeyboardInterrupt
            return original(origins)

        store.import_listed_origins = stop_at_the_third_batch
        with pytest.raises(KeyboardInterrupt):
            import_swh_scheduler(source, store, now=NOW, cooldowns=COOLDOWNS, batch_size=100)
        del store.import_listed_origins
        written = len(store.get_listed_origins(limit=100_000))
        assert written == 200  # two batches committed, the third rolled back
    counts = source_counts(swh_source)
    report = import_json(store_url, swh_source)
    changed = {t["table"]: t["changed"] for t in report["tables"]}
    assert changed["listed_origins"] == counts["listed_origins"] - 200 and changed["task"] == 0
    assert {t["table"]: t["changed"] for t in import_json(store_url, swh_source)["tables"]} == dict.fromkeys(TABLES, 0)


@pytest.mark.parametrize("version", [37, 39])
def test_another_schema_version_is_refused_and_nothing_is_written(version, swh_source, pg_server, fresh_url):
    name = f"swh_v{version}_{uuid.uuid4().hex[:6]}"
    dsn = pg_server.create_database(name, template=conninfo_to_dict(swh_source)["dbname"])
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            if version < 38:
                conn.execute("UPDATE dbversion SET version = %s", (version,))
            else:
                conn.execute("INSERT INTO dbversion (version, release, description) VALUES (%s, now(), 'later')", (version,))
        assert run(fresh_url, "db", "init").exit_code == 0
        result = run(fresh_url, "import", "swh-scheduler", "--from", dsn)
        assert result.exit_code == 2
        assert result.stderr == (f"error: from: swh-scheduler schema version {version} found in {dsn}, version 38 "
                                 "expected (swh-scheduler 3.6, as `swh db init` makes it)\n")
        with open_store(fresh_url, create=False) as store:
            assert store.list_task_types() == [] and store.list_listers() == []
    finally:
        pg_server.drop_database(name)


@pytest.mark.parametrize("source, message", [
    ("sqlite:///swh.db", "error: from: expected a PostgreSQL URL, postgresql://USER@HOST:PORT/DBNAME (or libpq "
                         "'host=… dbname=…') (swh-scheduler keeps its database in PostgreSQL), got 'sqlite:///swh.db'"),
    ("postgresql://swh:secret@127.0.0.1:1/swh", "error: from: cannot connect to postgresql://swh:***@127.0.0.1:1/swh: "),
    ("", "error: from: expected the swh-scheduler database's URL, postgresql://"),
])
def test_a_bad_source_is_one_line_naming_from_and_nothing_is_written(source, message, fresh_url):
    result = run(fresh_url, "import", "swh-scheduler", "--from", source)
    assert result.exit_code == 2 and result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr
    assert not Path(fresh_url.removeprefix("sqlite:///")).exists()  # the store was not even opened


def test_a_database_that_is_not_swh_schedulers_is_refused(pg_server, fresh_url):
    result = run(fresh_url, "import", "swh-scheduler", "--from", pg_server.admin_dsn)
    assert result.exit_code == 2
    assert "is not an swh-scheduler database (it has no dbversion table); expected schema version 38" in result.stderr

