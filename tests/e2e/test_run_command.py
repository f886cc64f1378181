"""`ostinato run` and `ostinato runner` as real processes on the embedded default."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from waiting import wait_until

from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskRunStatus, TaskType
from ostinato.store import open_store

HERE = Path(__file__).parent


def ostinato(*args: str, db: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(HERE), "OSTINATO_POLL_INTERVAL": "0.1s"}
    return subprocess.Popen([sys.executable, "-m", "ostinato", "--db", db, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def wait_for(predicate, timeout: float = 30.0) -> None:
    wait_until(predicate, timeout=timeout, what="the condition", interval=0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_run_creates_the_schema_runs_tasks_and_stops_cleanly(tmp_path, sig):
    db = f"sqlite:///{tmp_path}/fresh.db"
    out = tmp_path / "out.txt"
    proc = ostinato("run", "--workers", "2", db=db)
    try:
        wait_until(lambda: (tmp_path / "fresh.db").exists(), timeout=30, what="the database file")
        store = open_store(db)
        wait_until(lambda: store.schema_state().current is not None, timeout=30, what="the schema")
        store.create_task_type(TaskType("rec", "record", "callables:record", default_interval=timedelta(hours=1)))
        now = datetime.now(UTC)
        store.create_tasks([NewTask("rec", now, TaskArguments((str(out), "quick"))),
                            NewTask("rec", now, TaskArguments((str(out), "slow", 1.5)), policy=TaskPolicy.ONESHOT)])
        wait_until(lambda: out.exists() and "quick" in out.read_text(), timeout=30, what="the quick task to run")
        wait_until(lambda: TaskRunStatus.STARTED in {r.status for r in store.list_task_runs()}, timeout=30,
                   what="the slow task to start")  # it runs when the signal comes
        proc.send_signal(sig)
        output = proc.communicate(timeout=60)[0]
    finally:
        proc.kill()
    assert proc.returncode == 0, output
    assert "stopped: 2 runs dispatched, 2 ended" in output
    lines = out.read_text().split()
    assert lines[0::2] == ["quick", "slow"]  # the running task finished before the exit
    assert [r.status for r in store.list_task_runs()] == [TaskRunStatus.EVENTFUL] * 2
    store.close()


def test_runner_once_dispatches_what_is_ready_and_exits(tmp_path):
    db = f"sqlite:///{tmp_path}/o.db"
    out = tmp_path / "out.txt"
    with open_store(db) as store:
        store.init_schema()
        store.create_task_type(TaskType("rec", "record", "callables:record", default_interval=timedelta(hours=1)))
        now = datetime.now(UTC)
        store.create_tasks([NewTask("rec", now, TaskArguments((str(out), f"k{i}"))) for i in range(5)]
                           + [NewTask("rec", now + timedelta(hours=1), TaskArguments((str(out), "later")))])
    proc = ostinato("runner", "--once", db=db)
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, output
    assert "stopped: 5 runs dispatched, 5 ended" in output
    assert sorted(out.read_text().split()[0::2]) == [f"k{i}" for i in range(5)]


def test_runner_refuses_a_database_without_schema(tmp_path):
    proc = ostinato("runner", "--once", db=f"sqlite:///{tmp_path}/none.db")
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == 3
    assert "ostinato db init" in output


def test_run_upgrades_an_older_embedded_database(tmp_path):
    import sqlite3

    from ostinato.store.sqlite.dialect import MIGRATIONS, role_queries
    from ostinato.store.sqlite.dialect import statements as _statements

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(role_queries("schema").create_schema_version)
    for statement in _statements(MIGRATIONS[0].sql):
        conn.execute(statement)
    conn.execute("INSERT INTO schema_version VALUES (1, 'generic tasks', '2026-01-01T00:00:00.000000+00:00')")
    conn.commit()
    conn.close()
    proc = ostinato("run", "--once", db=f"sqlite:///{path}")
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, output
    assert "upgraded the schema" in output
    with open_store(f"sqlite:///{path}") as store:
        assert store.schema_state().up_to_date
