"""The store verbs of the compatibility faces (docs/reference/swh-compat.md), on every store:
runs scheduled by executor id (a grabbed task's run is completed, not doubled), found by that id,
task statuses set as told, and compat records stored, merged by key, listed and deleted."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0
from helpers import GIT, new

from ostinato.domain.errors import ValidationError
from ostinato.domain.tasks import NewTaskRun, RunEvent, TaskPolicy, TaskRunStatus, TaskStatus


@pytest.fixture(autouse=True)
def types(store):
    store.create_task_type(GIT)


def test_a_grabbed_task_gets_one_run_and_others_get_a_new_one(store):
    a, b = store.create_tasks([new("https://example.org/1"), new("https://example.org/2")])
    store.grab_ready_tasks(GIT.type, T0, 1)
    grabbed = next(t for t in store.get_tasks([a.id, b.id]) if t.status is TaskStatus.NEXT_RUN_SCHEDULED)
    other = a if grabbed.id == b.id else b
    runs = store.schedule_task_runs([NewTaskRun(grabbed.id, "exec-1", T0, {"worker": "w"}),
                                     NewTaskRun(other.id, "exec-2", T0)])
    assert [r.backend_id for r in runs] == ["exec-1", "exec-2"]
    assert len(store.list_task_runs(task_id=grabbed.id)) == 1
    assert store.list_task_runs(task_id=grabbed.id)[0].metadata == {"worker": "w"}
    store.record_run_events([RunEvent(runs[0].id, TaskRunStatus.EVENTFUL, T0)])
    found = store.get_task_runs_by_backend_id(["exec-1", "exec-2", "nobody"])
    assert [(r.backend_id, r.status) for r in found] == [("exec-1", TaskRunStatus.EVENTFUL), ("exec-2", TaskRunStatus.SCHEDULED)]


def test_runs_written_without_an_answer_are_the_same(store):
    a, b = store.create_tasks([new("https://example.org/1"), new("https://example.org/2")])
    [grab] = store.grab_ready_tasks(GIT.type, T0, 1)
    other = a if grab.task.id == b.id else b
    assert store.schedule_task_runs([NewTaskRun(grab.task.id, "exec-1", T0, {"worker": "w"}),
                                     NewTaskRun(other.id, "exec-2", T0)], answer=False) == []
    [taken] = store.list_task_runs(task_id=grab.task.id)  # the grab's run took the executor's id: one run
    assert (taken.id, taken.backend_id, taken.metadata) == (grab.run.id, "exec-1", {"worker": "w"})
    assert [r.backend_id for r in store.list_task_runs(task_id=other.id)] == ["exec-2"]
    with pytest.raises(ValidationError) as error:  # bad input refused as with an answer, nothing written
        store.schedule_task_runs([NewTaskRun(other.id, "ok", T0), NewTaskRun(other.id + 100, "bad", T0)],
                                 answer=False)
    assert error.value.field == "runs[1].task" and store.get_task_runs_by_backend_id(["ok"]) == []


def test_a_run_for_a_missing_task_writes_nothing(store):
    [task] = store.create_tasks([new()])
    with pytest.raises(ValidationError) as error:
        store.schedule_task_runs([NewTaskRun(task.id, "ok", T0), NewTaskRun(task.id + 100, "bad", T0)])
    assert error.value.field == "runs[1].task"
    assert store.get_task_runs_by_backend_id(["ok"]) == []


def test_statuses_are_set_as_told(store):
    a, b = store.create_tasks([new("https://example.org/1"), new("https://example.org/2")])
    assert store.overwrite_task_status([a.id], TaskStatus.COMPLETED) == 1
    changed = store.overwrite_task_status([a.id, b.id], TaskStatus.NEXT_RUN_SCHEDULED,
                                          except_completed_before=b.next_run + timedelta(days=1))
    assert changed == 1
    statuses = {t.id: t.status for t in store.get_tasks([a.id, b.id])}
    assert statuses == {a.id: TaskStatus.COMPLETED, b.id: TaskStatus.NEXT_RUN_SCHEDULED}


def test_compat_records(store):
    assert store.put_compat_records("ns", {"b": {"x": 1}, "a": {"y": [1, "z"]}}) == 2
    store.put_compat_records("ns", {"b": {"x": 2}})
    store.put_compat_records("other", {"a": {"n": 0}})
    assert store.get_compat_records("ns", ["a", "b", "c"]) == {"a": {"y": [1, "z"]}, "b": {"x": 2}}
    assert list(store.list_compat_records("ns", after="a")) == ["b"]
    store.put_compat_records("ns", {"a": None})
    assert store.list_compat_records("ns") == {"b": {"x": 2}}
    with pytest.raises(ValidationError):
        store.put_compat_records("ns", {"": {"x": 1}})


def test_runs_to_archive_by_their_dates_and_their_tasks_state(store):
    over, recurring_off, recurring_on, pending = store.create_tasks([
        new("https://example.org/1", policy=TaskPolicy.ONESHOT), new("https://example.org/2"),
        new("https://example.org/3"), new("https://example.org/4", policy=TaskPolicy.ONESHOT)])
    runs = store.schedule_task_runs([NewTaskRun(t.id, f"exec-{t.id}-{i}", T0 + timedelta(hours=i))
                                     for t in (over, recurring_off, recurring_on, pending) for i in range(3)])
    started = next(r for r in runs if r.backend_id == f"exec-{over.id}-0")
    store.record_run_events([RunEvent(started.id, TaskRunStatus.STARTED, T0 - timedelta(days=1))])  # started before
    store.overwrite_task_status([over.id], TaskStatus.COMPLETED)
    store.overwrite_task_status([recurring_off.id], TaskStatus.DISABLED)
    found = store.list_runs_to_archive(T0, T0 + timedelta(hours=2))  # [after, before): hours 0 and 1
    assert [(task.id, run.backend_id) for task, run in found] == [
        (over.id, f"exec-{over.id}-1"), (recurring_off.id, f"exec-{recurring_off.id}-0"),
        (recurring_off.id, f"exec-{recurring_off.id}-1")]
    assert found[0][0].status is TaskStatus.COMPLETED


def test_runs_to_archive_page_by_task_and_run(store):
    a, b = store.create_tasks([new("https://example.org/1", policy=TaskPolicy.ONESHOT),
                               new("https://example.org/2", policy=TaskPolicy.ONESHOT)])
    store.schedule_task_runs([NewTaskRun(t.id, f"exec-{t.id}-{i}", T0) for t in (a, b) for i in range(3)])
    store.overwrite_task_status([a.id, b.id], TaskStatus.DISABLED)
    seen, after_run = [], (0, 0)
    while True:  # pages of 2 rows: a's three runs straddle the first boundary
        page = store.list_runs_to_archive(T0, T0 + timedelta(days=1), after_run=after_run, limit=2)
        seen.extend(run.id for _, run in page)
        if len(page) < 2:
            break
        after_run = (page[-1][0].id, page[-1][1].id)
    assert len(seen) == 6 and len(set(seen)) == 6
    with pytest.raises(ValidationError):
        store.list_runs_to_archive(T0, T0, after_run=(1, -1))


def test_one_shot_tasks_kept_apart_by_next_run_on_request(store):
    later = T0 + timedelta(hours=6)
    one_shot = dict(policy=TaskPolicy.ONESHOT)
    [a] = store.create_tasks([new(**one_shot)])
    assert store.create_tasks([new(next_run=later, **one_shot)]) == [a]  # Ostinato's own rule: the same task
    b, a_again, c = store.create_tasks([new(next_run=later, **one_shot), new(**one_shot), new(next_run=later)],
                                       one_shot_by_next_run=True)
    assert b.id != a.id and b.next_run == later and a_again == a
    assert c.policy is TaskPolicy.RECURRING and c.next_run == later  # recurring: not kept apart
    assert store.create_tasks([new(), new(next_run=later, **one_shot)], one_shot_by_next_run=True) == [c, b]
