"""Solar calendar rules (``solar:sunrise 48.8566 2.3522``): their fire times are the instants
Celery's own ``solar`` schedules compute (within the second Ostinato rounds to), through the polar
night too; a bad rule names the field; without ``ephem`` a solar rule is refused, naming the field."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

import pytest
from celery.schedules import solar

from ostinato.domain.calendars import CalendarRule, RuleKind
from ostinato.domain.errors import ValidationError
from ostinato.domain.solar import EVENTS

UTC = UTC
PLACES = {"paris": (48.8566, 2.3522), "sydney": (-33.87, 151.21), "longyearbyen": (78.22, 15.65),
          "quito": (-0.18, -78.47), "anchorage": (61.22, -149.9)}
STARTS = [datetime(2026, 3, 29, 0, 30, tzinfo=UTC), datetime(2026, 6, 21, 12, tzinfo=UTC),
          datetime(2026, 12, 1, tzinfo=UTC), datetime(2026, 10, 25, 1, 15, tzinfo=UTC)]


def celerys_next(event: str, lat: float, lon: float, after: datetime) -> datetime:
    """The next event after ``after`` by Celery's own solar schedule (its clock set to ``after``)."""
    return after + solar(event, lat, lon, nowfun=lambda: after).remaining_estimate(after)


@pytest.mark.parametrize("event", list(EVENTS))
@pytest.mark.parametrize("place", list(PLACES))
def test_fire_times_are_celerys_solar_events(event, place):
    lat, lon = PLACES[place]
    rule = CalendarRule.parse(f"solar:{event} {lat} {lon}", "Europe/Paris")
    assert rule.kind is RuleKind.SOLAR and not rule.repeats_through_the_hours
    for start in STARTS:
        ours = [f.at for f in rule.next_fire_times(start, 3)]
        theirs, at = [], start
        for _ in range(3):
            at = celerys_next(event, lat, lon, at + timedelta(seconds=1))
            theirs.append(at)
        assert len(ours) == 3 and all(abs((a - b).total_seconds()) <= 1 for a, b in zip(ours, theirs, strict=True)), (
            event, place, start, ours, theirs)


def test_the_polar_night_has_no_sunrise_until_february():
    rule = CalendarRule.parse("solar:sunrise 78.22 15.65")
    first = rule.next_fire_time(datetime(2026, 11, 20, tzinfo=UTC))
    assert datetime(2027, 2, 10, tzinfo=UTC) < first < datetime(2027, 2, 25, tzinfo=UTC)


@pytest.mark.parametrize("text", ["solar:moonrise 48.8 2.3", "solar:sunrise 91 2.3", "solar:sunrise 48.8 -181",
                                  "solar:sunrise 48.8", "solar:sunrise north east", "solar:sunrise nan 2.3"])
def test_a_bad_solar_rule_names_the_field(text):
    with pytest.raises(ValidationError) as refused:
        CalendarRule.parse(text, field="cron_schedule")
    assert refused.value.field == "cron_schedule" and "LATITUDE LONGITUDE" in str(refused.value)


def test_without_ephem_a_solar_rule_is_refused_naming_the_field(monkeypatch):
    monkeypatch.setitem(sys.modules, "ephem", None)  # import ephem now fails
    with pytest.raises(ValidationError, match=r"pip install 'ostinato\[solar\]'") as refused:
        CalendarRule.parse("solar:sunset 48.8 2.3", field="cron_schedule")
    assert refused.value.field == "cron_schedule"
    assert CalendarRule.parse("0 2 * * *").kind is RuleKind.CRON  # the other kinds need nothing


def daybreak():
    """Declared below on a solar rule."""


def test_a_schedule_declared_in_python_on_a_solar_rule():
    import ostinato

    jobs = ostinato.Schedules("solar")
    jobs.calendar("solar:dawn_civil 48.8566 2.3522", max_duration="30m")(daybreak)
    [declared] = jobs.schedules
    assert declared.rule.kind is RuleKind.SOLAR
    after = datetime(2026, 6, 21, tzinfo=UTC)
    assert declared.rule.next_fire_time(after) == CalendarRule.parse("solar:dawn_civil 48.8566 2.3522").next_fire_time(after)
