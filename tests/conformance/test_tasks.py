"""Tasks: creation without duplicates, listing, the runner's grab, disable and respawn."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from conftest import T0
from helpers import GIT, HG, new

from ostinato.domain.errors import ValidationError
from ostinato.domain.tasks import (
    NewTask,
    TaskArguments,
    TaskPolicy,
    TaskPriority,
    TaskRunStatus,
    TaskStatus,
)


@pytest.fixture(autouse=True)
def types(store):
    store.create_task_type(GIT)
    store.create_task_type(HG)


def test_create_fills_defaults_from_the_task_type(store):
    [task] = store.create_tasks([new("https://a", depth=1)])
    assert task.id > 0
    assert task.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED
    assert task.current_interval == GIT.default_interval
    assert task.retries_left == GIT.num_retries
    assert task.arguments == TaskArguments(("https://a",), {"depth": 1})
    assert task.next_run == T0
    assert store.get_tasks([task.id]) == [task]


def test_a_batch_gets_ids_in_the_order_given(store):
    # later next runs first, two types interleaved: the ids still follow the batch's order
    batch = [new(f"https://o/{i}", type=("load-git", "load-hg")[i % 2], next_run=T0 - timedelta(minutes=i))
             for i in range(7)]
    ids = [task.id for task in store.create_tasks(batch)]
    assert ids == sorted(ids) and len(set(ids)) == 7


def test_a_task_made_disabled_is_kept_disabled_and_never_deduplicated(store):
    pending = store.create_tasks([new("https://d")])[0]
    made = store.create_tasks([dataclasses.replace(new("https://d"), status=TaskStatus.DISABLED),
                               dataclasses.replace(new("https://d"), status=TaskStatus.DISABLED)])
    assert [t.status for t in made] == [TaskStatus.DISABLED] * 2
    assert len({pending.id, *(t.id for t in made)}) == 3
    assert {t.id: t.status for t in store.get_tasks([t.id for t in made])} == {t.id: TaskStatus.DISABLED for t in made}
    # a pending one is still found again, and is the only one a runner takes
    assert store.create_tasks([new("https://d")])[0].id == pending.id
    assert [run.task.id for run in store.grab_ready_tasks("load-git", T0, 10)] == [pending.id]


def test_oneshot_task_has_no_interval(store):
    [task] = store.create_tasks([new(policy=TaskPolicy.ONESHOT)])
    assert task.policy is TaskPolicy.ONESHOT and task.current_interval is None


def test_interval_is_clamped_to_the_type_bounds(store):
    [task] = store.create_tasks([NewTask("load-git", T0, TaskArguments(("x",)), current_interval=timedelta(minutes=1))])
    assert task.current_interval == GIT.min_interval


def test_same_pending_task_is_not_created_twice(store):
    first = store.create_tasks([new("https://a"), new("https://b"), new("https://a")])
    assert first[0].id == first[2].id != first[1].id
    again = store.create_tasks([new("https://b"), new("https://c")])
    assert again[0].id == first[1].id
    assert len({t.id for t in first + again}) == 3
    # keyword order does not matter; a different policy or priority is another task
    [x] = store.create_tasks([NewTask("load-git", T0, TaskArguments(("k",), {"a": 1, "b": 2}))])
    [y] = store.create_tasks([NewTask("load-git", T0, TaskArguments(("k",), {"b": 2, "a": 1}))])
    assert x.id == y.id
    [z] = store.create_tasks([new("https://a", policy=TaskPolicy.ONESHOT)])
    [w] = store.create_tasks([new("https://a", priority=TaskPriority.HIGH)])
    assert len({first[0].id, z.id, w.id}) == 3


def test_a_scheduled_task_does_not_block_a_new_identical_one(store):
    [task] = store.create_tasks([new("https://a")])
    store.grab_ready_tasks("load-git", T0, 10)
    [again] = store.create_tasks([new("https://a")])
    assert again.id != task.id


def test_bad_task_in_a_batch_writes_nothing(store):
    with pytest.raises(ValidationError) as info:
        store.create_tasks([new("https://a"), new("https://b", type="load-nothing")])
    assert info.value.field == "type" and info.value.record == "task 1"
    assert store.search_tasks() == []


def test_recurring_task_needs_an_interval(store):
    store.create_task_type(GIT.__class__(type="bare", description="", backend_name="x:y"))
    with pytest.raises(ValidationError) as info:
        store.create_tasks([new(type="bare")])
    assert info.value.field == "current_interval"
    assert store.search_tasks() == []


def test_naive_next_run_is_refused(store):
    with pytest.raises(ValidationError) as info:
        store.create_tasks([new(next_run=T0.replace(tzinfo=None))])
    assert info.value.field == "next_run"


def test_large_batches_cross_chunk_boundaries(store):
    urls = [f"https://example.org/{i}" for i in range(12_500)]
    created = store.create_tasks([new(u) for u in urls] + [new(urls[0])])
    assert len({t.id for t in created}) == 12_500
    assert created[-1].id == created[0].id
    grabbed = store.grab_ready_tasks("load-git", T0, 20_000)
    assert len(grabbed) == 12_500


def test_grab_takes_ready_tasks_oldest_first_and_records_runs(store):
    tasks = store.create_tasks([new(f"u{i}", next_run=T0 - timedelta(minutes=i)) for i in range(5)]
                               + [new("future", next_run=T0 + timedelta(seconds=1)), new("hg", type="load-hg")])
    peek = store.peek_ready_tasks("load-git", T0, 3)
    assert [t.arguments.args[0] for t in peek] == ["u4", "u3", "u2"]
    grabbed = store.grab_ready_tasks("load-git", T0, 3, backend_id="embedded@node:1")
    assert [g.task.arguments.args[0] for g in grabbed] == ["u4", "u3", "u2"]
    for g in grabbed:
        assert g.task.status is TaskStatus.NEXT_RUN_SCHEDULED
        assert g.run.task == g.task.id and g.run.status is TaskRunStatus.SCHEDULED
        assert g.run.scheduled == T0 and g.run.backend_id == "embedded@node:1"
    rest = store.grab_ready_tasks("load-git", T0, 10)
    assert [g.task.arguments.args[0] for g in rest] == ["u1", "u0"]
    assert store.grab_ready_tasks("load-git", T0, 10) == []
    assert [g.task.arguments.args[0] for g in store.grab_ready_tasks("load-git", T0 + timedelta(seconds=1), 10)] == ["future"]
    assert len(store.list_task_runs()) == 6
    assert tasks[-1].status is TaskStatus.NEXT_RUN_NOT_SCHEDULED


def test_peek_changes_nothing(store):
    store.create_tasks([new("a")])
    store.peek_ready_tasks("load-git", T0, 10)
    store.peek_ready_tasks("load-git", T0, 10, priority=True)
    assert store.list_task_runs() == []
    assert store.search_tasks(status=[TaskStatus.NEXT_RUN_NOT_SCHEDULED])[0].arguments.args == ("a",)


def test_priority_tasks_go_to_the_priority_runner_high_first(store):
    store.create_tasks([
        new("low", priority=TaskPriority.LOW, next_run=T0 - timedelta(hours=3)),
        new("normal", priority=TaskPriority.NORMAL, next_run=T0 - timedelta(hours=2)),
        new("high", priority=TaskPriority.HIGH, next_run=T0 - timedelta(hours=1)),
        new("plain"),
    ])
    assert [g.task.arguments.args[0] for g in store.grab_ready_tasks("load-git", T0, 10)] == ["plain"]
    peek = store.peek_ready_tasks("load-git", T0, 2, priority=True)
    assert [t.arguments.args[0] for t in peek] == ["high", "normal"]
    grabbed = store.grab_ready_tasks("load-git", T0, 2, priority=True)
    assert [g.task.arguments.args[0] for g in grabbed] == ["high", "normal"]
    assert [g.task.arguments.args[0] for g in store.grab_ready_tasks("load-git", T0, 2, priority=True)] == ["low"]


def test_grab_of_zero_takes_nothing(store):
    store.create_tasks([new("a")])
    assert store.grab_ready_tasks("load-git", T0, 0) == []


def test_disable_and_respawn(store):
    [a, b] = store.create_tasks([new("a"), new("b", policy=TaskPolicy.ONESHOT)])
    assert store.set_task_status([a.id, b.id], TaskStatus.DISABLED) == 2
    assert store.set_task_status([a.id], TaskStatus.DISABLED) == 0
    assert store.grab_ready_tasks("load-git", T0, 10) == []
    later = T0 + timedelta(days=3)
    assert store.set_task_status([a.id], TaskStatus.NEXT_RUN_NOT_SCHEDULED, next_run=later) == 1
    [a2] = store.get_tasks([a.id])
    assert a2.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED and a2.next_run == later and a2.retries_left == GIT.num_retries
    # respawn of a pending task changes nothing
    assert store.set_task_status([a.id], TaskStatus.NEXT_RUN_NOT_SCHEDULED) == 0
    with pytest.raises(ValidationError):
        store.set_task_status([a.id], TaskStatus.COMPLETED)


def test_search_filters_and_pages(store):
    store.create_tasks([new(f"g{i}") for i in range(5)] + [new("h", type="load-hg", policy=TaskPolicy.ONESHOT),
                                                          new("p", priority=TaskPriority.HIGH, next_run=T0 + timedelta(days=1))])
    assert len(store.search_tasks()) == 7
    assert [t.arguments.args[0] for t in store.search_tasks(task_type="load-hg")] == ["h"]
    assert [t.arguments.args[0] for t in store.search_tasks(policy=TaskPolicy.ONESHOT)] == ["h"]
    assert [t.arguments.args[0] for t in store.search_tasks(priority=[TaskPriority.HIGH])] == ["p"]
    assert len(store.search_tasks(priority=[None])) == 6
    assert len(store.search_tasks(before=T0)) == 6
    page1 = store.search_tasks(limit=4)
    page2 = store.search_tasks(limit=4, after_id=page1[-1].id)
    assert len(page1) == 4 and len(page2) == 3 and page1[-1].id < page2[0].id
    store.grab_ready_tasks("load-git", T0, 2)
    assert len(store.search_tasks(status=[TaskStatus.NEXT_RUN_SCHEDULED])) == 2
    counts = store.count_tasks()
    assert counts[("load-git", "next_run_scheduled")] == 2
    assert counts[("load-git", "next_run_not_scheduled")] == 4
    assert counts[("load-hg", "next_run_not_scheduled")] == 1


def test_one_types_search_pages_by_id_with_every_filter(store):
    """A type's search (the console's task type page, swh's search by type) walks that type's tasks by id from
    after_id, the other filters checked on the way, whatever the other types' tasks between them."""
    made = store.create_tasks([new(f"t{i}", type="load-hg" if i % 3 == 0 else "load-git",
                                   policy=TaskPolicy.ONESHOT if i % 2 else TaskPolicy.RECURRING,
                                   priority=TaskPriority.LOW if i % 5 == 0 else None,
                                   next_run=T0 + timedelta(hours=i)) for i in range(30)])
    hg = [t.id for t in made if t.type == "load-hg"]
    store.set_task_status(hg[1::2], TaskStatus.DISABLED)

    def ids(**filters) -> list[int]:
        return [t.id for t in store.search_tasks(task_type="load-hg", **filters)]

    assert ids() == hg
    page1 = ids(limit=4)
    assert page1 == hg[:4] and ids(after_id=page1[-1], limit=4) == hg[4:8] and ids(after_id=hg[-1]) == []
    assert ids(status=[TaskStatus.DISABLED]) == hg[1::2]
    assert ids(status=[TaskStatus.DISABLED], after_id=hg[1], limit=2) == hg[3::2][:2]
    assert ids(status=[TaskStatus.DISABLED, TaskStatus.NEXT_RUN_NOT_SCHEDULED]) == hg
    by_task = {t.id: t for t in made}
    assert ids(policy=TaskPolicy.ONESHOT) == [i for i in hg if by_task[i].policy is TaskPolicy.ONESHOT]
    assert ids(priority=[TaskPriority.LOW]) == [i for i in hg if by_task[i].priority is TaskPriority.LOW]
    assert ids(priority=[None], before=T0 + timedelta(hours=12)) == [
        i for i in hg if by_task[i].priority is None and by_task[i].next_run <= T0 + timedelta(hours=12)]
    assert store.search_tasks(task_type="load-none") == []


def test_priority_tasks_by_next_run_whatever_their_level(store):
    # the swh protocol's runner takes prioritised tasks oldest first, whatever their priority
    made = store.create_tasks([new(f"https://p/{i}", priority=level, next_run=T0 - timedelta(minutes=m))
                               for i, (level, m) in enumerate([(TaskPriority.LOW, 50), (TaskPriority.HIGH, 10),
                                                              (TaskPriority.NORMAL, 40), (TaskPriority.HIGH, 5)])])
    ids = [t.id for t in made]
    oldest_first = [ids[0], ids[2], ids[1]]  # 50, 40 and 10 minutes ago (low, normal, high)
    assert [t.id for t in store.peek_ready_tasks("load-git", T0, 3, priority=True, by_next_run=True)] == oldest_first
    assert [t.id for t in store.peek_ready_tasks("load-git", T0, 3, priority=True)] == [ids[1], ids[3], ids[2]]
    taken = [r.task.id for r in store.grab_ready_tasks("load-git", T0, 3, priority=True, by_next_run=True)]
    assert taken == oldest_first
    assert [r.task.id for r in store.grab_ready_tasks("load-git", T0, 3, priority=True, by_next_run=True)] == [ids[3]]
