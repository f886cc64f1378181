"""Fuzzing the text people write for times: calendar rules (cron, systemd ``OnCalendar``, RRULE),
time zones, durations and times.

Each property: the text is accepted, or refused with a ValidationError naming the field;
nothing else escapes (no OverflowError, OSError, TypeError from the libraries underneath), and
an accepted rule gives its next firings from any moment within the supported range.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fuzz_helpers import BAD_VALUES, LONG_TEXT, NUL_TEXT, ODD_TIMES, SURROGATES, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from ostinato.domain.calendars import CalendarRule, parse_zone
from ostinato.domain.durations import parse_duration, parse_iso_time, parse_time
from ostinato.domain.errors import ValidationError
from ostinato.domain.limits import MAX_TIME, MIN_TIME

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
NUMBER = st.one_of(st.integers(-3, 70).map(str), st.sampled_from(["99999999999999999999", "-0", "00", "1.5", "", "L", "W", "#"]))
CRON_FIELD = st.one_of(st.just("*"), NUMBER, st.builds("{}/{}".format, st.sampled_from(["*", "0", "5"]), NUMBER),
                       st.builds("{}-{}".format, NUMBER, NUMBER), st.builds("{},{}".format, NUMBER, NUMBER),
                       st.sampled_from(["MON", "mon-fri", "SUN#5", "5L", "L", "?", "JAN", "W", "15W", "LW"]))
CRON = st.one_of(st.lists(CRON_FIELD, min_size=4, max_size=6).map(" ".join),
                 st.sampled_from(["@hourly", "@daily", "@reboot", "@yearly", "@every 5m"]))
SYSTEMD = st.one_of(
    st.builds("{} {}-{}-{} {}:{}:{}".format, st.sampled_from(["", "Mon", "Mon..Fri", "Sat,Sun", "Xyz"]),
              st.sampled_from(["*", "2026", "1970", "9999", "0001", "2026..2030"]), st.sampled_from(["*", "02", "13", "1/3"]),
              st.sampled_from(["*", "29", "30", "31", "1..7", "~1", "~32", "1/0"]), st.sampled_from(["*", "0", "25", "0/15"]),
              st.sampled_from(["*", "0", "60", "0/0"]), st.sampled_from(["00", "*", "60", "59.999999", "0/1"])),
    st.sampled_from(["daily", "quarterly", "*:0/15", "*-*-* 00:00 Europe/Paris", "*-*-* 00:00 Europe", "*-*-* 00:00 " + "a" * 300,
                     "minutely", "semiannually", "Mon *-02-29", "*-02-30 00:00"]),
)
RRULE_PARTS = st.sampled_from([
    "FREQ=DAILY", "FREQ=SECONDLY", "FREQ=MINUTELY", "FREQ=WEEKLY", "FREQ=MONTHLY", "FREQ=YEARLY", "FREQ=NEVER",
    "INTERVAL=0", "INTERVAL=-1", "INTERVAL=2", "INTERVAL=99999999999", "COUNT=0", "COUNT=-1", "COUNT=3", "UNTIL=00010101",
    "UNTIL=99991231T235959", "UNTIL=20200101", "BYHOUR=2", "BYHOUR=24", "BYMINUTE=61", "BYSECOND=61", "BYSECOND=60",
    "BYMONTHDAY=-32", "BYMONTHDAY=31", "BYMONTHDAY=30", "BYMONTH=2", "BYMONTH=13", "BYDAY=MO", "BYDAY=5MO", "BYDAY=-1FR",
    "BYDAY=53MO", "BYYEARDAY=366", "BYYEARDAY=-367", "BYWEEKNO=53", "BYWEEKNO=0", "BYSETPOS=5", "BYSETPOS=0", "BYEASTER=1",
    "WKST=SU", "WKST=XX", "BYHOUR=1,,2", "X-FOO=1", "",
])
RRULE = st.one_of(
    st.lists(RRULE_PARTS, min_size=1, max_size=5).map(";".join),
    st.builds("DTSTART:{}\nRRULE:{}".format, st.sampled_from(["20200101T000000", "00010101T000000", "99991231T235959",
                                                              "20200101T000000Z", "2020", "20200230T000000"]),
              st.lists(RRULE_PARTS, min_size=1, max_size=4).map(";".join)),
)
CALENDAR_TEXT = st.one_of(CRON, SYSTEMD, RRULE, st.text(max_size=40), SURROGATES, NUL_TEXT, LONG_TEXT,
                          st.builds("{}:{}".format, st.sampled_from(["cron", "systemd", "rrule", "CRON"]), st.text(max_size=20)))
ZONES = st.one_of(st.timezone_keys(), st.sampled_from(["Europe", "Nope/Nope", "../../etc/passwd", "/etc/localtime", "a" * 300,
                                                       "UTC\x00", "\ud800", "", " ", "Europe/Paris ", "posixrules"]),
                  st.text(max_size=20))


@fuzz_settings(250)
@given(CALENDAR_TEXT, st.one_of(st.just("UTC"), ZONES),
       st.datetimes(min_value=MIN_TIME.replace(tzinfo=None), max_value=(MAX_TIME - timedelta(days=1)).replace(tzinfo=None),
                    timezones=st.just(UTC)))
def test_calendar_rules_parse_or_name_the_field(text, tz, after):
    try:
        rule = CalendarRule.parse(text, tz, field="cron_schedule")
    except ValidationError as exc:
        assert exc.field in ("cron_schedule", "tz"), exc
        return
    times = rule.next_fire_times(after, 3)
    assert all(t.at > after for t in times)
    assert [t.at for t in times] == sorted({t.at for t in times})


@fuzz_settings(120)
@given(ZONES)
def test_time_zones_are_read_or_refused_by_field(name):
    try:
        parse_zone(name, "tz")
    except ValidationError as exc:
        assert exc.field == "tz"


@fuzz_settings(120)
@given(st.one_of(BAD_VALUES, st.builds("{}{}".format, st.sampled_from(["", "P", "PT", "-", "1", "99999999999999999999"]),
                                       st.sampled_from(["s", "m", "h", "d", "w", "ms", "D", "W", "H", "1d12h", "e9", ""]))),
       st.booleans())
def test_durations_parse_or_name_the_field(text, allow_zero):
    try:
        value = parse_duration(text, "scheduling_period", allow_zero=allow_zero)
    except ValidationError as exc:
        assert exc.field == "scheduling_period"
        return
    assert T0 + value < MAX_TIME + (T0 - MIN_TIME)  # room for arithmetic


@fuzz_settings(120)
@given(st.one_of(BAD_VALUES, ODD_TIMES, st.builds("{}{}".format, st.sampled_from(["+", "-", "+ ", ""]),
                                                   st.sampled_from(["740000d", "36525d", "1d", "now", "P1D", "99999999999w"]))),
       st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)))
def test_times_parse_or_name_the_field(text, now):
    for call in (lambda: parse_time(text, now, "next_run"), lambda: parse_iso_time(text, "next_run")):
        try:
            call()
        except ValidationError as exc:
            assert exc.field == "next_run"
