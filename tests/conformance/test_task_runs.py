"""Task runs: outcomes move the task by the task model's rules; reports are idempotent;
lost runs are noticed; archival exports and deletes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0
from helpers import GIT, HG, new

from ostinato.domain.tasks import RunEvent, TaskPolicy, TaskRunStatus, TaskStatus

S = TaskRunStatus


@pytest.fixture(autouse=True)
def types(store):
    store.create_task_type(GIT)
    store.create_task_type(HG)


def dispatch(store, *tasks, at=T0):
    store.create_tasks(list(tasks))
    return store.grab_ready_tasks(tasks[0].type, at, 100, priority=tasks[0].priority is not None)


def task_of(store, scheduled):
    [task] = store.get_tasks([scheduled.task.id])
    return task


def test_eventful_run_divides_the_interval(store):
    [g] = dispatch(store, new("a"))
    end = T0 + timedelta(minutes=5)
    assert store.record_run_events([RunEvent(g.run.id, S.STARTED, T0, backend_id="w1"), RunEvent(g.run.id, S.EVENTFUL, end)]) == 1
    task = task_of(store, g)
    assert task.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED
    assert task.current_interval == timedelta(hours=12)  # 1 day / 2
    assert task.next_run == end + timedelta(hours=12)
    [run] = store.list_task_runs(task_id=task.id)
    assert run.status is S.EVENTFUL and run.started == T0 and run.ended == end and run.backend_id == "w1"


def test_uneventful_run_multiplies_the_interval_within_bounds(store):
    [g] = dispatch(store, new("a"))
    store.record_run_events([RunEvent(g.run.id, S.UNEVENTFUL, T0)])
    assert task_of(store, g).current_interval == timedelta(days=2)
    # climb to the ceiling: 2, 4, 8, 16, 32, 64, 64
    at = T0
    for _ in range(6):
        at = task_of(store, g).next_run
        [g2] = store.grab_ready_tasks("load-git", at, 10)
        store.record_run_events([RunEvent(g2.run.id, S.UNEVENTFUL, at)])
    task = task_of(store, g)
    assert task.current_interval == GIT.max_interval


def test_eventful_interval_never_goes_below_min(store):
    [g] = dispatch(store, new("a"))
    store.record_run_events([RunEvent(g.run.id, S.EVENTFUL, T0)])
    [g2] = store.grab_ready_tasks("load-git", T0 + timedelta(days=1), 10)
    store.record_run_events([RunEvent(g2.run.id, S.EVENTFUL, T0 + timedelta(days=1))])
    assert task_of(store, g).current_interval == GIT.min_interval


def test_failures_consume_retries_then_fall_back_to_the_interval(store):
    [g] = dispatch(store, new("a"))
    at = T0 + timedelta(minutes=1)
    store.record_run_events([RunEvent(g.run.id, S.FAILED, at, metadata={"error": "boom"})])
    task = task_of(store, g)
    assert task.retries_left == 1 and task.next_run == at + GIT.retry_delay
    assert task.current_interval == GIT.default_interval
    [run] = store.list_task_runs(task_id=task.id)
    assert run.metadata == {"error": "boom"}
    for expected_retries in (0, GIT.num_retries):
        at = task_of(store, g).next_run
        [g2] = store.grab_ready_tasks("load-git", at, 10)
        store.record_run_events([RunEvent(g2.run.id, S.FAILED, at)])
        assert task_of(store, g).retries_left == expected_retries
    task = task_of(store, g)
    assert task.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED and task.next_run == at + GIT.default_interval


def test_oneshot_success_completes_and_exhausted_failure_disables(store):
    ok, bad = dispatch(store, new("ok", policy=TaskPolicy.ONESHOT), new("bad", type="load-git", policy=TaskPolicy.ONESHOT))
    store.record_run_events([RunEvent(ok.run.id, S.UNEVENTFUL, T0), RunEvent(bad.run.id, S.FAILED, T0)])
    assert task_of(store, ok).status is TaskStatus.COMPLETED
    assert task_of(store, bad).retries_left == 1
    for _ in range(2):
        at = task_of(store, bad).next_run
        [g] = store.grab_ready_tasks("load-git", at, 10)
        store.record_run_events([RunEvent(g.run.id, S.FAILED, at)])
    assert task_of(store, bad).status is TaskStatus.DISABLED


def test_permfailed_disables(store):
    [g] = dispatch(store, new("a"))
    store.record_run_events([RunEvent(g.run.id, S.PERMFAILED, T0)])
    assert task_of(store, g).status is TaskStatus.DISABLED


def test_reports_are_idempotent_and_order_tolerant(store):
    a, b = dispatch(store, new("a"), new("b"))
    events = [RunEvent(a.run.id, S.EVENTFUL, T0 + timedelta(minutes=2)), RunEvent(a.run.id, S.STARTED, T0, backend_id="w")]
    assert store.record_run_events(events) == 1
    after_first = task_of(store, a)
    # the same reports again, a late 'started', and a contradicting late outcome: nothing changes
    assert store.record_run_events(events + [RunEvent(a.run.id, S.FAILED, T0 + timedelta(hours=1))]) == 0
    assert task_of(store, a) == after_first
    [run] = store.list_task_runs(task_id=a.task.id)
    assert run.status is S.EVENTFUL and run.started == T0
    # a final report with no 'started' is fine; unknown runs are ignored
    assert store.record_run_events([RunEvent(b.run.id, S.UNEVENTFUL, T0), RunEvent(999_999, S.EVENTFUL, T0)]) == 1


def test_a_task_disabled_while_running_stays_disabled(store):
    [g] = dispatch(store, new("a"))
    store.set_task_status([g.task.id], TaskStatus.DISABLED)
    store.record_run_events([RunEvent(g.run.id, S.EVENTFUL, T0)])
    assert task_of(store, g).status is TaskStatus.DISABLED
    assert store.list_task_runs(task_id=g.task.id)[0].status is S.EVENTFUL


def test_runs_without_report_are_marked_lost_and_count_as_failures(store):
    a, b = dispatch(store, new("a"), new("b"), at=T0)
    store.record_run_events([RunEvent(b.run.id, S.STARTED, T0 + timedelta(minutes=50))])
    assert store.mark_lost_runs(T0 + timedelta(minutes=59), timedelta(hours=1)) == []
    lost = store.mark_lost_runs(T0 + timedelta(minutes=61), timedelta(hours=1))
    assert lost == [a.run.id]  # b showed a sign of life at +50 min
    [run] = store.list_task_runs(task_id=a.task.id)
    assert run.status is S.LOST
    task = task_of(store, a)
    assert task.retries_left == GIT.num_retries - 1 and task.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED
    assert store.mark_lost_runs(T0 + timedelta(hours=2), timedelta(hours=1)) == [b.run.id]
    # a late success after being declared lost changes nothing
    assert store.record_run_events([RunEvent(a.run.id, S.EVENTFUL, T0 + timedelta(hours=3))]) == 0


def test_runs_of_a_dead_executor_are_lost_at_once(store):
    store.create_tasks([new("a"), new("b")])
    [a] = store.grab_ready_tasks("load-git", T0, 1, backend_id="embedded@n1:100")
    [b] = store.grab_ready_tasks("load-git", T0, 1, backend_id="embedded@n1:200")
    assert store.in_flight_backend_ids("embedded@n1:") == ["embedded@n1:100", "embedded@n1:200"] or \
        sorted(store.in_flight_backend_ids("embedded@n1:")) == ["embedded@n1:100", "embedded@n1:200"]
    assert store.in_flight_backend_ids("embedded@n2:") == []
    assert store.mark_lost_runs(T0, timedelta(hours=1), backend_ids=["embedded@n1:100"]) == [a.run.id]
    assert store.in_flight_backend_ids("embedded@n1:") == ["embedded@n1:200"]


def test_list_task_runs_filters(store):
    a, b = dispatch(store, new("a"), new("b"))
    store.record_run_events([RunEvent(a.run.id, S.FAILED, T0)])
    assert [r.id for r in store.list_task_runs(status=[S.FAILED])] == [a.run.id]
    assert [r.id for r in store.list_task_runs(status=[S.SCHEDULED, S.STARTED])] == [b.run.id]
    assert [r.id for r in store.list_task_runs(after_id=a.run.id)] == [b.run.id]


def test_archival_selects_old_final_tasks_with_their_runs(store):
    done, disabled, recurring, recent = dispatch(
        store, new("done", policy=TaskPolicy.ONESHOT), new("off"), new("live"), new("recent", policy=TaskPolicy.ONESHOT))
    store.record_run_events([
        RunEvent(done.run.id, S.EVENTFUL, T0 + timedelta(hours=1)),
        RunEvent(disabled.run.id, S.PERMFAILED, T0 + timedelta(hours=1)),
        RunEvent(recurring.run.id, S.EVENTFUL, T0 + timedelta(hours=1)),
        RunEvent(recent.run.id, S.EVENTFUL, T0 + timedelta(days=5)),
    ])
    archivable = store.archivable_tasks(T0 + timedelta(days=2))
    assert [a.task.arguments.args[0] for a in archivable] == ["done", "off"]
    assert [r.id for r in archivable[0].runs] == [done.run.id]
    assert store.archivable_tasks(T0 + timedelta(days=2), after_id=archivable[0].task.id, limit=10)[0].task.id == archivable[1].task.id
    assert store.delete_tasks([a.task.id for a in archivable]) == 2
    assert store.archivable_tasks(T0 + timedelta(days=2)) == []
    assert len(store.search_tasks()) == 2
    assert {r.task for r in store.list_task_runs()} == {recurring.task.id, recent.task.id}


def test_ids_are_never_reused_after_deletion(store):
    a, b = dispatch(store, new("a", policy=TaskPolicy.ONESHOT), new("b", policy=TaskPolicy.ONESHOT))
    store.delete_tasks([a.task.id, b.task.id])
    [c] = dispatch(store, new("c", policy=TaskPolicy.ONESHOT))
    assert c.task.id > b.task.id and c.run.id > max(a.run.id, b.run.id)
