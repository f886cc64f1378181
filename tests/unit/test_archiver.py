"""archive_tasks on an in-memory SQLite store: what is exported, what is deleted, and in which order."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.errors import ValidationError
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskPolicy, TaskRunStatus, TaskStatus, TaskType
from ostinato.services.archiver import archive_tasks
from ostinato.store import open_store

BASE = datetime(2026, 1, 1, tzinfo=UTC)
BEFORE = BASE + timedelta(days=1)


@pytest.fixture
def store():
    store = open_store("sqlite:///:memory:")
    store.init_schema()
    store.create_task_type(TaskType("load", "load things", "m.load", default_interval=timedelta(days=1)))
    yield store
    store.close()


def new(arg, policy=TaskPolicy.ONESHOT, next_run=BASE):
    return NewTask(type="load", next_run=next_run, arguments=TaskArguments((arg,)), policy=policy)


def run_to_end(store, tasks, status, ended):
    """Grab the tasks (all ready at BASE) and end their runs with ``status`` at ``ended``."""
    runs = store.grab_ready_tasks("load", max(t.next_run for t in tasks), len(tasks))
    assert {r.task.id for r in runs} == {t.id for t in tasks}
    store.record_run_events([RunEvent(r.run.id, status, ended, backend_id="b1") for r in runs])


@pytest.fixture
def population(store):
    """5 completed one-shots, 2 disabled tasks, 1 pending recurring, 1 completed too recently."""
    done = store.create_tasks([new(f"done-{i}") for i in range(5)])
    run_to_end(store, done, TaskRunStatus.EVENTFUL, BASE + timedelta(hours=1))
    disabled = store.create_tasks([new("off-1", TaskPolicy.RECURRING), new("off-2", TaskPolicy.RECURRING)])
    store.set_task_status([t.id for t in disabled], TaskStatus.DISABLED)
    pending = store.create_tasks([new("pending", TaskPolicy.RECURRING, next_run=BASE + timedelta(days=30))])
    recent = store.create_tasks([new("recent", next_run=BASE + timedelta(days=2))])
    run_to_end(store, recent, TaskRunStatus.UNEVENTFUL, BASE + timedelta(days=2, hours=1))
    return {"done": done, "disabled": disabled, "pending": pending, "recent": recent}


def test_archives_and_deletes_in_batches(store, population):
    out = io.StringIO()
    batches = []
    count = archive_tasks(store, BEFORE, out, batch_size=2, on_batch=batches.append)
    assert count == 7
    assert batches == [2, 2, 2, 1]
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    archived_ids = [r["task"]["id"] for r in records]
    expected = sorted(t.id for t in population["done"] + population["disabled"])
    assert archived_ids == expected
    for record in records:
        assert set(record) == {"task", "runs"}
        assert set(record["task"]) == {"id", "type", "arguments", "next_run", "current_interval", "policy", "status", "retries_left", "priority"}
        if record["task"]["status"] == "completed":
            assert [run["status"] for run in record["runs"]] == ["eventful"]
            assert record["runs"][0]["task"] == record["task"]["id"]
            assert record["runs"][0]["backend_id"] == "b1"
        else:
            assert record["task"]["status"] == "disabled" and record["runs"] == []
    assert store.get_tasks(expected) == []
    for task_id in expected:
        assert store.list_task_runs(task_id=task_id) == []
    kept = [t.id for t in population["pending"] + population["recent"]]
    assert [t.id for t in store.get_tasks(kept)] == kept
    assert len(store.list_task_runs(task_id=population["recent"][0].id)) == 1
    # nothing left to archive
    assert archive_tasks(store, BEFORE, io.StringIO()) == 0


def test_keep_exports_without_deleting(store, population):
    out = io.StringIO()
    assert archive_tasks(store, BEFORE, out, batch_size=3, delete=False) == 7
    assert len(out.getvalue().splitlines()) == 7
    assert sum(store.count_tasks().values()) == 9
    assert archive_tasks(store, BEFORE, io.StringIO(), delete=False) == 7  # still there


def test_later_cutoff_archives_the_recent_task_too(store, population):
    out = io.StringIO()
    assert archive_tasks(store, BASE + timedelta(days=3), out) == 8
    assert sum(store.count_tasks().values()) == 1


def test_nothing_to_archive(store):
    out = io.StringIO()
    assert archive_tasks(store, BEFORE, out, on_batch=lambda n: pytest.fail("no batch expected")) == 0
    assert out.getvalue() == ""


class Recorder:
    """A store proxy that checks each batch was written and flushed before it is deleted."""

    def __init__(self, store, out, fail_on_delete=False):
        self.store, self.out, self.fail_on_delete = store, out, fail_on_delete
        self.deleted: list[list[int]] = []

    def archivable_tasks(self, *args, **kwargs):
        return self.store.archivable_tasks(*args, **kwargs)

    def delete_tasks(self, ids):
        ids = list(ids)
        written = {json.loads(line)["task"]["id"] for line in self.out.flushed.splitlines()}
        assert set(ids) <= written, "a batch was deleted before it was written and flushed"
        if self.fail_on_delete:
            raise RuntimeError("crash while deleting")
        self.deleted.append(ids)
        return self.store.delete_tasks(ids)


class FlushTracking(io.StringIO):
    flushed = ""

    def flush(self):
        super().flush()
        self.flushed = self.getvalue()


def test_each_batch_is_flushed_before_it_is_deleted(store, population):
    out = FlushTracking()
    proxy = Recorder(store, out)
    assert archive_tasks(proxy, BEFORE, out, batch_size=3) == 7
    assert [len(ids) for ids in proxy.deleted] == [3, 3, 1]


def test_a_crash_while_deleting_loses_nothing(store, population):
    out = FlushTracking()
    with pytest.raises(RuntimeError):
        archive_tasks(Recorder(store, out, fail_on_delete=True), BEFORE, out, batch_size=3)
    assert len(out.flushed.splitlines()) == 3
    assert sum(store.count_tasks().values()) == 9  # nothing deleted: the batch is exported and still stored


@pytest.mark.parametrize("size", [0, -1, True])
def test_bad_batch_size(store, size):
    with pytest.raises(ValidationError) as info:
        archive_tasks(store, BEFORE, io.StringIO(), batch_size=size)
    assert info.value.field == "batch_size"


def test_naive_cutoff_is_refused(store):
    with pytest.raises(ValidationError) as info:
        archive_tasks(store, datetime(2026, 1, 2), io.StringIO())
    assert info.value.field == "before"
