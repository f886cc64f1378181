"""An operator's disable and respawn of tasks, on every store: each task changed gets its audit event
in the same transaction (over the store RPC, by the token's name), and a task left as it was gets none."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0
from helpers import GIT, new, trail

from ostinato.domain.errors import ConflictError, NotFoundError
from ostinato.domain.tasks import RunEvent, TaskPolicy, TaskRunStatus, TaskStatus


def actor_seen(store, actor: str) -> str:
    return "remote-store-tests" if type(store).__name__ == "RemoteStore" else actor


def test_disable_and_respawn_write_an_event_for_each_task_changed(store):
    store.create_task_type(GIT)
    a, b = store.create_tasks([new("https://a"), new("https://b")])
    assert store.disable_tasks([b.id, a.id, b.id, 999_999], T0, actor="ana") == [b.id, a.id]
    assert store.disable_tasks([a.id], T0 + timedelta(minutes=1), actor="ana") == []
    assert [t.status for t in store.get_tasks([a.id, b.id])] == [TaskStatus.DISABLED, TaskStatus.DISABLED]
    later = T0 + timedelta(days=2)
    assert store.respawn_tasks([a.id], T0 + timedelta(minutes=2), next_run=later, actor="bo") == [a.id]
    assert store.respawn_tasks([a.id], T0 + timedelta(minutes=3), actor="bo") == []
    [task] = store.get_tasks([a.id])
    assert task.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED and task.next_run == later
    events = [(e.at, e.actor, e.action, e.target, e.outcome) for e in reversed(trail(store))]
    assert events == [
        (T0, actor_seen(store, "ana"), "task.disable", f"task:{b.id}", "done: disabled"),
        (T0, actor_seen(store, "ana"), "task.disable", f"task:{a.id}", "done: disabled"),
        (T0 + timedelta(minutes=2), actor_seen(store, "bo"), "task.enable", f"task:{a.id}",
         f"done: pending again at its next run ({later.isoformat()}), retries refilled"),
    ]


def test_a_program_s_status_change_is_not_audited(store):
    store.create_task_type(GIT)
    [a] = store.create_tasks([new("https://a")])
    assert store.set_task_status([a.id], TaskStatus.DISABLED) == 1
    assert store.set_task_status([a.id], TaskStatus.DISABLED) == 0
    assert trail(store) == []


def failed_run(store, url: str = "https://a"):
    """A one-shot task whose run failed for good: its task disabled."""
    store.create_task_type(GIT)
    [task] = store.create_tasks([new(url, policy=TaskPolicy.ONESHOT)])
    [grabbed] = store.grab_ready_tasks(GIT.type, T0 + timedelta(days=1), 1)
    store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.PERMFAILED, T0 + timedelta(days=1, minutes=1))])
    return task, grabbed.run.id


def test_a_retry_makes_the_task_pending_now_with_its_event(store):
    task, run = failed_run(store)
    now = T0 + timedelta(days=2)
    retried = store.retry_task_run(run, now, actor="ana")
    assert retried.id == task.id and retried.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED and retried.next_run == now
    [event] = store.list_audit(target=f"task:{task.id}")
    assert (event.actor, event.action, event.outcome) == (
        actor_seen(store, "ana"), "task.retry", f"done: pending again now, retries refilled (after run #{run}, permfailed)")


def test_a_retry_refused_says_why_and_changes_nothing(store):
    task, run = failed_run(store)
    store.retry_task_run(run, T0 + timedelta(days=2), actor="ana")
    with pytest.raises(ConflictError, match="already pending"):
        store.retry_task_run(run, T0 + timedelta(days=3), actor="ana")
    with pytest.raises(NotFoundError):
        store.retry_task_run(run + 1000, T0 + timedelta(days=3), actor="ana")
    [grabbed] = store.grab_ready_tasks(GIT.type, T0 + timedelta(days=3), 1)
    with pytest.raises(ConflictError, match=f"run #{grabbed.run.id} is scheduled"):
        store.retry_task_run(grabbed.run.id, T0 + timedelta(days=3), actor="ana")
    assert len(store.list_audit(target=f"task:{task.id}")) == 1
    assert store.get_tasks([task.id])[0].status is TaskStatus.NEXT_RUN_SCHEDULED


def test_a_task_disabled_while_it_runs_is_not_enabled_beside_its_run(store):
    store.create_task_type(GIT)
    [task] = store.create_tasks([new("https://a")])
    [grabbed] = store.grab_ready_tasks(GIT.type, T0 + timedelta(days=1), 1)
    assert store.disable_tasks([task.id], T0 + timedelta(days=1), actor="ana") == [task.id]
    assert store.respawn_tasks([task.id], T0 + timedelta(days=1, minutes=1), actor="ana") == []
    assert store.grab_ready_tasks(GIT.type, T0 + timedelta(days=9), 1) == []  # no second copy
    store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.EVENTFUL, T0 + timedelta(days=1, minutes=2))])
    assert store.get_tasks([task.id])[0].status is TaskStatus.DISABLED  # its run's end left it disabled
    assert store.respawn_tasks([task.id], T0 + timedelta(days=1, minutes=3), actor="ana") == [task.id]
    assert [e.action for e in store.list_audit(target=f"task:{task.id}")] == ["task.enable", "task.disable"]
