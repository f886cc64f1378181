"""Task types: stored with every knob of the task model; bad ones refused, nothing written."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from conftest import T0
from helpers import GIT, HG, new

from ostinato.domain.errors import ConflictError, NotFoundError, ValidationError
from ostinato.domain.schedules import Schedule, ScheduleKind


def test_create_get_list(store):
    store.create_task_type(GIT)
    store.create_task_type(HG)
    assert store.get_task_type("load-git") == GIT
    assert store.get_task_type("load-hg") == HG
    assert store.get_task_type("nope") is None
    assert [t.type for t in store.list_task_types()] == ["load-git", "load-hg"]


def test_duplicate_name_conflicts(store):
    store.create_task_type(GIT)
    with pytest.raises(ConflictError):
        store.create_task_type(dataclasses.replace(GIT, description="other"))
    assert store.get_task_type("load-git").description == GIT.description


@pytest.mark.parametrize(
    "change, field",
    [
        ({"default_interval": timedelta(seconds=-5)}, "default_interval"),
        ({"min_interval": timedelta(0)}, "min_interval"),
        ({"min_interval": timedelta(days=70)}, "min_interval"),
        ({"backoff_factor": 0.99}, "backoff_factor"),
        ({"backoff_factor": float("inf")}, "backoff_factor"),
        ({"max_queue_length": 0}, "max_queue_length"),
        ({"num_retries": -1}, "num_retries"),
        ({"num_retries": 3, "retry_delay": None}, "retry_delay"),
        ({"backend_name": ""}, "backend_name"),
        ({"type": " "}, "type"),
    ],
)
def test_invalid_task_type_is_refused_and_nothing_is_stored(store, change, field):
    with pytest.raises(ValidationError) as info:
        store.create_task_type(dataclasses.replace(GIT, **change))
    assert info.value.field == field
    assert store.list_task_types() == []


def test_a_fixed_interval_is_a_backoff_factor_of_one(store):
    assert store.create_task_type(dataclasses.replace(GIT, backoff_factor=1.0)).backoff_factor == 1.0
    assert store.get_task_type("load-git").backoff_factor == 1.0


@pytest.mark.parametrize(
    "change",
    [
        {"num_retries": 3, "retry_delay": None},
        {"default_interval": timedelta(days=100)},
        {"default_interval": timedelta(minutes=1)},
        {"default_interval": timedelta(0)},
        {"max_queue_length": 0},
    ],
)
def test_a_type_is_kept_as_given_when_not_strict(store, change):
    # what the swh protocol's store keeps (its own `task-type add` makes some of these): refused by the
    # strict rule of Ostinato's own interfaces, kept as given otherwise
    given = dataclasses.replace(GIT, **change)
    with pytest.raises(ValidationError):
        store.create_task_type(given)
    store.create_task_type(given, strict=False)
    assert store.get_task_type("load-git") == given


@pytest.mark.parametrize(
    "change, field",
    [
        ({"default_interval": timedelta(seconds=-5)}, "default_interval"),
        ({"min_interval": timedelta(0)}, "min_interval"),
        ({"backoff_factor": 0.0}, "backoff_factor"),
        ({"backoff_factor": -2.0}, "backoff_factor"),
        ({"max_queue_length": -1}, "max_queue_length"),
        ({"num_retries": -1}, "num_retries"),
    ],
)
def test_what_cannot_be_used_is_refused_even_when_not_strict(store, change, field):
    with pytest.raises(ValidationError) as info:
        store.create_task_type(dataclasses.replace(GIT, **change), strict=False)
    assert info.value.field == field
    assert store.list_task_types() == []


def actor_seen(store, actor: str) -> str:
    return "remote-store-tests" if type(store).__name__ == "RemoteStore" else actor


def test_an_operator_adds_updates_and_deletes_a_type_each_with_its_event(store):
    store.add_task_type(GIT, T0, actor="ana")
    stale = dataclasses.replace(GIT, description="an old form", max_interval=timedelta(days=32))
    updated = store.update_task_type(stale, T0 + timedelta(minutes=1), fields=["max_interval"], actor="ana")
    assert updated == dataclasses.replace(GIT, max_interval=timedelta(days=32)) == store.get_task_type(GIT.type)
    assert store.update_task_type(updated, T0 + timedelta(minutes=2), actor="bo") == updated  # unchanged
    store.delete_task_type(GIT.type, T0 + timedelta(minutes=3), actor="bo")
    assert store.get_task_type(GIT.type) is None
    events = [(e.actor, e.action, e.outcome) for e in reversed(store.list_audit(target="task-type:load-git"))]
    assert events == [(actor_seen(store, "ana"), "task-type.add", "done: added"),
                      (actor_seen(store, "ana"), "task-type.update", "done: changed max_interval"),
                      (actor_seen(store, "bo"), "task-type.update", "done: unchanged"),
                      (actor_seen(store, "bo"), "task-type.delete", "done: deleted")]


def test_a_type_in_use_is_not_deleted_and_its_users_are_named(store):
    store.create_task_type(GIT)
    tasks = store.create_tasks([new(f"https://{i}") for i in range(7)])
    store.create_schedule(Schedule(name="nightly", kind=ScheduleKind.PERIODIC, task_type=GIT.type, created_at=T0,
                                   scheduling_period=timedelta(days=1)), T0)
    with pytest.raises(ConflictError) as refused:
        store.delete_task_type(GIT.type, T0, actor="ana")
    assert "in use by tasks" in str(refused.value) and "and more" in str(refused.value)
    assert "schedules nightly" in str(refused.value)
    named = str(refused.value).split("in use by tasks ")[1].split(" and more")[0]
    assert len(named.split(", ")) == 5 and {int(i) for i in named.split(", ")} <= {t.id for t in tasks}
    assert store.get_task_type(GIT.type) == GIT and store.list_audit(target="task-type:load-git") == []
    with pytest.raises(NotFoundError):
        store.delete_task_type("load-gti", T0, actor="ana")
    with pytest.raises(NotFoundError):
        store.update_task_type(dataclasses.replace(GIT, type="load-gti"), T0, actor="ana")
    with pytest.raises(ValidationError) as bad:
        store.update_task_type(dataclasses.replace(GIT, min_interval=timedelta(days=99)), T0, actor="ana")
    assert bad.value.field == "min_interval" and store.get_task_type(GIT.type) == GIT
