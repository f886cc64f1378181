"""An operator's disable and respawn of tasks, on every store: each task changed gets its audit event
in the same transaction (over the store RPC, by the token's name), and a task left as it was gets none."""

from __future__ import annotations

from datetime import timedelta

from conftest import T0
from helpers import GIT, new

from ostinato.domain.tasks import TaskStatus


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
    events = [(e.at, e.actor, e.action, e.target, e.outcome) for e in reversed(store.list_audit())]
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
    assert store.list_audit() == []
