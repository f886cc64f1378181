"""Schedules declared in code, on every store: applied in one transaction (created, updated, the
removed ones paused with their history), the newest declaration of a source winning over an
older process, a roll back by force, and bad declarations refused with nothing written."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.declarations import Declaration
from ostinato.domain.errors import ConflictError, ValidationError
from ostinato.domain.firings import CatchUp
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind

H = timedelta(hours=1)
SOURCE = "python:reports"


def declared(name: str, **kw) -> Schedule:
    base = dict(name=name, kind=ScheduleKind.PERIODIC, task_type="jobs:cleanup", created_at=T0,
                scheduling_period=H, cooldown_duration=timedelta(minutes=10))
    return Schedule(**{**base, **kw})


def nightly(**kw) -> Schedule:
    return declared("nightly", **{**dict(kind=ScheduleKind.CALENDAR, scheduling_period=None, cooldown_duration=None,
                                         cron_schedule="0 2 * * *", cron_max_schedule_duration=4 * H,
                                         tz="Europe/Paris", catch_up=CatchUp.all(3)), **kw})


def apply(store, schedules, at=T0, *, force=False):
    return store.apply_declarations(Declaration(SOURCE, tuple(schedules), force), at)


def test_declarations_create_update_and_pause_the_removed_ones(store):
    first = apply(store, [declared("cleanup"), nightly()])
    assert first.applied and sorted(first.created) == ["cleanup", "nightly"] and first.newest == first.fingerprint
    got = store.get_schedule("nightly")
    assert got.declared_by == SOURCE and got.declaration == first.fingerprint and got.catch_up == CatchUp.all(3)
    again = apply(store, [declared("cleanup"), nightly()], T0 + H)
    assert again.applied and again.fingerprint == first.fingerprint and sorted(again.unchanged) == ["cleanup", "nightly"]
    # a run leaves history; the next version drops cleanup and changes nightly
    [(schedule, run)] = store.pick_schedules(node="n", owner_name="a", tags=["t1"], now=T0 + H)
    store.end_schedule_run("cleanup", "t1", status=RunStatus.SUCCEEDED, ended=T0 + H + timedelta(minutes=1))
    second = apply(store, [nightly(cron_schedule="0 3 * * *")], T0 + 2 * H)
    assert second.applied and second.updated == ("nightly",) and second.paused == ("cleanup",)
    kept = store.get_schedule("cleanup")
    assert kept.enabled is False and kept.last_good_start_at == T0 + H  # paused, its state kept
    assert [r.status for r in store.list_schedule_runs("cleanup")] == [RunStatus.SUCCEEDED]
    assert store.get_schedule("nightly").cron_schedule == "0 3 * * *"
    # declared again: resumed
    third = apply(store, [declared("cleanup"), nightly(cron_schedule="0 3 * * *")], T0 + 3 * H)
    assert third.updated == ("cleanup",) and store.get_schedule("cleanup").enabled is True


def test_the_newest_declaration_wins_and_an_older_process_writes_nothing(store):
    old = apply(store, [declared("cleanup", scheduling_period=H)], T0)
    new = apply(store, [declared("cleanup", scheduling_period=2 * H), nightly()], T0 + H)
    assert new.applied and new.newest == new.fingerprint != old.fingerprint
    # the old code's process restarts: it applies nothing
    restarted = apply(store, [declared("cleanup", scheduling_period=H)], T0 + 2 * H)
    assert not restarted.applied and restarted.newest == new.fingerprint and restarted.newest_seen_at == T0 + H
    assert store.get_schedule("cleanup").scheduling_period == 2 * H and store.get_schedule("nightly").enabled
    # nor does the new one, restarting, fight: unchanged
    assert apply(store, [declared("cleanup", scheduling_period=2 * H), nightly()], T0 + 3 * H).unchanged
    # a deliberate roll back: force makes the old set the newest
    rolled = apply(store, [declared("cleanup", scheduling_period=H)], T0 + 4 * H, force=True)
    assert rolled.applied and rolled.paused == ("nightly",)
    assert store.get_schedule("cleanup").scheduling_period == H
    assert not apply(store, [declared("cleanup", scheduling_period=2 * H), nightly()], T0 + 5 * H).applied


def test_an_operators_pause_holds_until_the_declarations_change(store):
    apply(store, [declared("cleanup")])
    store.save_schedule(replace(store.get_schedule("cleanup"), enabled=False), T0)
    assert apply(store, [declared("cleanup")], T0 + H).unchanged == ("cleanup",)
    assert store.get_schedule("cleanup").enabled is False
    apply(store, [declared("cleanup", scheduling_period=2 * H)], T0 + 2 * H)
    assert store.get_schedule("cleanup").enabled is True


def test_bad_declarations_are_refused_naming_the_field_and_nothing_is_written(store):
    apply(store, [declared("cleanup")])
    with pytest.raises(ValidationError) as refused:
        apply(store, [declared("cleanup", scheduling_period=2 * H), nightly(cron_schedule="0 25 * * *")], T0 + H)
    assert refused.value.field == "cron_schedule" and refused.value.record == "schedule nightly"
    with pytest.raises(ValidationError, match="catch_up"):
        apply(store, [declared("other", catch_up=CatchUp.skip())], T0 + H)  # a periodic run has no fire times
    with pytest.raises(ValidationError, match="source"):
        store.apply_declarations(Declaration("no source", ()), T0)
    assert store.get_schedule("cleanup").scheduling_period == H and store.get_schedule("nightly") is None


def test_a_name_taken_by_a_schedule_added_by_hand_is_a_conflict(store):
    store.create_schedule(declared("cleanup"), T0)
    with pytest.raises(ConflictError, match="added by hand"):
        apply(store, [declared("cleanup"), nightly()])
    assert store.get_schedule("nightly") is None and store.get_schedule("cleanup").declared_by is None
