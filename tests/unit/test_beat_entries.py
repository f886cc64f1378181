"""A Celery app's beat_schedule read into schedules the beats send: intervals, crontabs in the app's
zone or their own, written as cron or (both days restricted) as a systemd event, names Ostinato
cannot store, the catch-up option, solar schedules where ephem is installed, and every refusal
naming the entry and the field."""

from __future__ import annotations

import sys
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from celery import Celery
from celery.beat import BeatLazyFunc
from celery.schedules import crontab, schedule, solar

from ostinato.domain.errors import ValidationError
from ostinato.domain.firings import CatchUp
from ostinato.domain.schedules import RunMode, ScheduleKind
from ostinato.integrations.celery.beat_entries import beat_schedules, crontab_rule, schedule_name


@pytest.fixture
def app() -> Celery:
    app = Celery("proj", set_as_current=False)
    app.conf.timezone = "Europe/Paris"
    return app


def test_intervals_and_crontabs_become_schedules_the_beats_send(app):
    new_york = crontab(minute=30, hour=2)
    new_york.tz = ZoneInfo("America/New_York")
    read = {s.name: s for s in beat_schedules(app, {
        "add": {"task": "proj.add", "schedule": 10, "args": (2, 2), "kwargs": {"x": 1},
                "options": {"queue": "q", "ostinato_catch_up": "all:3"}},
        "daily": {"task": "proj.d", "schedule": schedule(timedelta(days=1))},
        "paris": {"task": "proj.p", "schedule": crontab(minute="*/15")},
        "ny": {"task": "proj.n", "schedule": new_york},
    })}
    add = read["add"]
    assert (add.kind, add.mode, add.scheduling_period, add.task_type) == (ScheduleKind.PERIODIC, RunMode.SEND,
                                                                          timedelta(seconds=10), "proj.add")
    assert add.arguments.args == (2, 2) and add.options == {"queue": "q"} and add.catch_up == CatchUp.all(3)
    assert read["daily"].scheduling_period == timedelta(days=1)
    assert (read["paris"].cron_schedule, read["paris"].tz) == ("*/15 * * * *", "Europe/Paris")
    assert (read["ny"].cron_schedule, read["ny"].tz) == ("30 2 * * *", "America/New_York")
    assert read["paris"].rule.repeats_through_the_hours and not read["ny"].rule.repeats_through_the_hours


@pytest.mark.parametrize("fields, rule", [
    ({}, "* * * * *"),
    ({"minute": "0-59/10", "hour": "9-17"}, "*/10 9-17 * * *"),
    ({"minute": 0, "hour": "22-2"}, "0 0-2,22-23 * * *"),  # Celery's ranges wrap around midnight
    ({"minute": 0, "hour": 9, "day_of_week": "mon-fri"}, "0 9 * * 1-5"),
    ({"minute": 0, "hour": 9, "day_of_month": "1-7", "day_of_week": "mon"}, "Mon *-*-01..07 09:00:00"),
])
def test_crontab_rules(fields, rule):
    assert crontab_rule(crontab(**fields)) == rule


def test_names_ostinato_cannot_store_keep_apart():
    assert schedule_name("add-every-10") == "add-every-10"
    spaced = schedule_name("add every 10")
    assert spaced.startswith("add-every-10-") and spaced != schedule_name("add  every 10")


def _solar(event: str = "sunrise", lat: float = 48.8, lon: float = 2.3) -> solar:  # made as Celery would without ephem
    value = solar.__new__(solar)
    value.nowfun, value.event, value.lat, value.lon = None, event, lat, lon
    return value


def test_a_solar_schedule_is_a_solar_rule_where_ephem_is_installed(app, monkeypatch):
    [read] = beat_schedules(app, {"dawn": {"task": "proj.d", "schedule": solar("dawn_civil", 48.8566, 2.3522)}})
    assert (read.kind, read.cron_schedule, read.tz) == (ScheduleKind.CALENDAR, "solar:dawn_civil 48.8566 2.3522", "UTC")
    assert read.rule.next_fire_time(read.created_at) is not None
    monkeypatch.setitem(sys.modules, "ephem", None)  # where it is not installed: refused, naming entry and field
    with pytest.raises(ValidationError, match=r"pip install 'ostinato\[solar\]'") as refused:
        beat_schedules(app, {"fine": {"task": "ok", "schedule": 5}, "dawn": {"task": "x", "schedule": _solar()}})
    assert refused.value.field == "schedule" and refused.value.record == "beat_schedule entry 'dawn'"


def _out_of_range() -> crontab:
    value = crontab(minute=0)
    value.hour = {24}
    return value


@pytest.mark.parametrize("entry, field", [
    ({"task": "x", "schedule": _solar("moonrise")}, "schedule"),
    ({"task": "x", "schedule": _solar(lat=95)}, "schedule"),
    ({"task": "x", "schedule": 0.5}, "schedule"),
    ({"task": "x", "schedule": "*/5 * * * *"}, "schedule"),
    ({"task": "x", "schedule": schedule(10, relative=True)}, "schedule.relative"),
    ({"task": "x", "schedule": crontab(nowfun=lambda: None)}, "schedule.nowfun"),
    ({"task": "x", "schedule": _out_of_range()}, "schedule.hour"),
    ({"task": "x", "schedule": 10, "args": [BeatLazyFunc(len, "abc")]}, "args"),
    ({"task": "x", "schedule": 10, "kwargs": {"at": object()}}, "kwargs"),
    ({"task": "x", "schedule": 10, "options": {"ostinato_catch_up": "often"}}, "options.ostinato_catch_up"),
    ({"task": "x", "schedule": 10, "colour": "blue"}, "colour"),
    ({"schedule": 10}, "task"),
])
def test_an_entry_ostinato_cannot_honour_is_refused_naming_entry_and_field(app, entry, field):
    with pytest.raises(ValidationError) as refused:
        beat_schedules(app, {"fine": {"task": "ok", "schedule": 5}, "wrong one": entry})
    assert refused.value.field == field and refused.value.record == "beat_schedule entry 'wrong one'"


def test_unknown_zones_are_refused_with_the_closest_names(app):
    wrong = crontab(minute=0)
    wrong.tz = "Europe/Pariss"
    with pytest.raises(ValidationError, match="did you mean Europe/Paris") as refused:
        beat_schedules(app, {"z": {"task": "x", "schedule": wrong}})
    assert refused.value.field == "schedule.tz"
    app.conf.timezone = "Mars/Olympus"
    with pytest.raises(ValidationError) as refused:
        beat_schedules(app, {"z": {"task": "x", "schedule": crontab(minute=0)}})
    assert refused.value.field == "timezone"
