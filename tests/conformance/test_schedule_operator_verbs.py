"""Pause and resume as verbs of their own, on every store: the state changes under the schedule's
lock, so a run's end committed between an operator's look and the change is kept, and each change
writes its audit event in the same transaction (over the store RPC, by the token's name)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from conftest import T0
from helpers import trail

from ostinato.domain.errors import ConflictError, NotFoundError, ValidationError
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind

H = timedelta(hours=1)
M = timedelta(minutes=1)


def hourly(name: str) -> Schedule:
    return Schedule(name=name, kind=ScheduleKind.PERIODIC, task_type="scrape", created_at=T0 - 10 * H,
                    scheduling_period=H, failure_count=0)


def actor_seen(store, actor: str) -> str:
    """The actor the trail keeps: over the store RPC, the token's name, whatever the client sent."""
    return "remote-store-tests" if type(store).__name__ == "RemoteStore" else actor


def test_a_pause_keeps_the_end_of_a_run_that_ended_after_the_operator_looked(store):
    store.create_schedule(hourly("job"), T0)
    assert store.pick_schedule(node="n1", owner_name="a", tag="t1", now=T0)
    looked = store.get_schedule("job")  # the page the operator pressed "pause" on: running
    assert looked.owner_tag == "t1"
    assert store.end_schedule_run("job", "t1", status=RunStatus.SUCCEEDED, ended=T0 + M)
    paused = store.pause_schedule("job", T0 + 2 * M, actor="ana")
    after = store.get_schedule("job")
    assert paused.enabled is False and after.enabled is False
    assert after.owner_tag is None and after.last_end_at == T0 + M and after.last_good_end_at == T0 + M
    resumed = store.resume_schedule("job", T0 + 3 * M, actor="ana")
    assert resumed.enabled is True and store.get_schedule("job").last_good_end_at == T0 + M


def test_a_pause_while_running_lets_the_run_end_as_usual(store):
    store.create_schedule(hourly("job"), T0)
    assert store.pick_schedule(node="n1", owner_name="a", tag="t1", now=T0)
    store.pause_schedule("job", T0 + M, actor="ana")
    assert store.get_schedule("job").owner_tag == "t1"
    assert store.end_schedule_run("job", "t1", status=RunStatus.FAILED, ended=T0 + 2 * M)
    after = store.get_schedule("job")
    assert after.enabled is False and after.owner_tag is None and after.failure_count == 1
    assert store.pick_schedule(node="n1", owner_name="a", tag="t2", now=T0 + 5 * H) is None


def test_each_change_writes_its_audit_event(store):
    store.create_schedule(hourly("job"), T0)
    store.pause_schedule("job", T0 + M, actor="ana@host")
    store.pause_schedule("job", T0 + 2 * M, actor="ana@host")
    store.resume_schedule("job", T0 + 3 * M, actor="bo")
    store.resume_schedule("job", T0 + 4 * M, actor="bo")
    events = list(reversed(store.list_audit(target="schedule:job")))
    assert [(e.at, e.actor, e.action, e.outcome) for e in events] == [
        (T0 + M, actor_seen(store, "ana@host"), "schedule.pause", "done: paused"),
        (T0 + 2 * M, actor_seen(store, "ana@host"), "schedule.pause", "done: unchanged, it was already paused"),
        (T0 + 3 * M, actor_seen(store, "bo"), "schedule.resume", "done: resumed"),
        (T0 + 4 * M, actor_seen(store, "bo"), "schedule.resume", "done: unchanged, it was not paused"),
    ]


@pytest.mark.parametrize("verb", ["pause_schedule", "resume_schedule"])
def test_an_unknown_schedule_is_refused_and_nothing_is_written(store, verb):
    with pytest.raises(NotFoundError):
        getattr(store, verb)("ghost", T0, actor="ana")
    assert trail(store) == []
    assert store.get_schedule("ghost") is None


def test_an_actor_that_cannot_be_kept_is_refused_and_nothing_changes(store):
    store.create_schedule(hourly("job"), T0)
    if type(store).__name__ == "RemoteStore":  # the client's actor is never read: the token's name is kept
        store.pause_schedule("job", T0 + M, actor="")
        assert [e.actor for e in trail(store)] == ["remote-store-tests"]
        return
    with pytest.raises(ValidationError, match="actor"):
        store.pause_schedule("job", T0 + M, actor="")
    assert store.get_schedule("job").enabled is True
    assert trail(store) == []


def test_run_now_and_delete_write_their_audit_events_and_a_refusal_writes_none(store):
    store.create_schedule(hourly("job"), T0)
    store.create_schedule(hourly("paused"), T0)
    store.pause_schedule("paused", T0, actor="ana")
    store.request_schedule_run("job", T0 + M, actor="ana")
    with pytest.raises(ConflictError):
        store.request_schedule_run("paused", T0 + M, actor="ana")
    with pytest.raises(NotFoundError):
        store.request_schedule_run("ghost", T0 + M, actor="ana")
    assert store.delete_schedule("job", T0 + 2 * M, actor="bo") is True
    assert store.delete_schedule("job", T0 + 3 * M, actor="bo") is False
    events = [(e.at, e.actor, e.action, e.target, e.outcome) for e in reversed(trail(store))]
    assert events == [
        (T0, actor_seen(store, "ana"), "schedule.pause", "schedule:paused", "done: paused"),
        (T0 + M, actor_seen(store, "ana"), "schedule.run-now", "schedule:job", "done: a run asked for now"),
        (T0 + 2 * M, actor_seen(store, "bo"), "schedule.delete", "schedule:job", "done: deleted"),
    ]
    assert store.get_schedule("paused").run_requested_at is None


def test_an_update_changes_the_definition_and_keeps_the_state_the_row_holds(store):
    store.create_schedule(hourly("job"), T0)
    assert store.pick_schedule(node="n1", owner_name="a", tag="t1", now=T0)
    looked = store.get_schedule("job")  # the operator's form, filled while the run was in progress
    assert store.end_schedule_run("job", "t1", status=RunStatus.SUCCEEDED, ended=T0 + M)
    store.pause_schedule("job", T0 + M, actor="bo")
    wanted = dataclasses.replace(looked, scheduling_period=2 * H, cooldown_duration=10 * M, enabled=True)
    updated = store.update_schedule(wanted, T0 + 2 * M, actor="ana")
    after = store.get_schedule("job")
    assert after.scheduling_period == 2 * H and after.cooldown_duration == 10 * M
    assert after.enabled is False  # paused: an update changes the definition, not the state
    assert after.owner_tag is None and after.last_good_end_at == T0 + M
    assert updated == after
    again = store.update_schedule(wanted, T0 + 3 * M, actor="ana")
    assert again == after
    events = [(e.action, e.outcome) for e in store.list_audit(target="schedule:job", limit=2)]
    assert events == [("schedule.update", "done: unchanged"),
                      ("schedule.update", "done: changed cooldown_duration, scheduling_period")]


def test_an_update_that_cannot_be_made_writes_nothing(store):
    store.create_schedule(hourly("job"), T0)
    store.create_schedule(dataclasses.replace(hourly("declared"), declared_by="python:reports"), T0)
    with pytest.raises(NotFoundError):
        store.update_schedule(hourly("ghost"), T0 + M, actor="ana")
    with pytest.raises(ConflictError, match="declared by python:reports"):
        store.update_schedule(dataclasses.replace(hourly("declared"), scheduling_period=2 * H), T0 + M, actor="ana")
    with pytest.raises(ValidationError):
        store.update_schedule(dataclasses.replace(hourly("job"), scheduling_period=-H), T0 + M, actor="ana")
    assert store.get_schedule("job").scheduling_period == H
    assert store.get_schedule("declared").scheduling_period == H
    assert trail(store) == []


def test_an_update_of_some_fields_keeps_another_operator_s_change_of_the_others(store):
    store.create_schedule(hourly("job"), T0)
    seen_by_ana = store.get_schedule("job")
    store.update_schedule(dataclasses.replace(seen_by_ana, scheduling_period=2 * H), T0 + M,
                          fields=["scheduling_period"], actor="bo")
    store.update_schedule(dataclasses.replace(seen_by_ana, max_expected_duration=10 * M), T0 + 2 * M,
                          fields=["max_expected_duration"], actor="ana")
    kept = store.get_schedule("job")
    assert kept.scheduling_period == 2 * H and kept.max_expected_duration == 10 * M
    with pytest.raises(ValidationError) as bad:
        store.update_schedule(seen_by_ana, T0 + 3 * M, fields=["owner_tag"], actor="ana")
    assert bad.value.field == "fields"
