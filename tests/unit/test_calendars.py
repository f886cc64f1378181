"""Calendar rules: cron, systemd calendar events and RRULE, in a zone, across
daylight-saving changes; and agreement with ``systemd-analyze calendar``."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostinato.domain.calendars import CalendarRule, RuleKind, detect_kind, parse_zone, zone_suggestions
from ostinato.domain.durations import parse_time
from ostinato.domain.errors import ValidationError

UTC = UTC


def t(text: str) -> datetime:
    return datetime.fromisoformat(text)


def fires(rule: CalendarRule, after: str, count: int = 3) -> list[str]:
    return [f.at.isoformat() for f in rule.next_fire_times(t(after), count)]


@pytest.mark.parametrize("text, kind", [
    ("0 0 * * *", RuleKind.CRON), ("@daily", RuleKind.CRON), ("*/5 9-17 * * 1-5", RuleKind.CRON),
    ("Mon..Fri *-*-* 02:00", RuleKind.SYSTEMD), ("*:0/15", RuleKind.SYSTEMD), ("quarterly", RuleKind.SYSTEMD),
    ("FREQ=DAILY;BYHOUR=2", RuleKind.RRULE), ("DTSTART:20260101T000000\nRRULE:FREQ=WEEKLY", RuleKind.RRULE),
    ("systemd: daily", RuleKind.SYSTEMD), ("cron: 0 0 * * *", RuleKind.CRON),
])
def test_the_kind_is_read_from_the_text(text, kind):
    assert detect_kind(text) is kind
    assert CalendarRule.parse(text).kind is kind


def test_cron_in_a_zone_and_its_nicknames():
    assert fires(CalendarRule.parse("0 9 * * 1-5", "Europe/Paris"), "2026-01-02T10:00:00+00:00") == [
        "2026-01-05T09:00:00+01:00", "2026-01-06T09:00:00+01:00", "2026-01-07T09:00:00+01:00"]
    assert fires(CalendarRule.parse("@monthly"), "2026-01-15T00:00:00+00:00", 2) == [
        "2026-02-01T00:00:00+00:00", "2026-03-01T00:00:00+00:00"]
    assert fires(CalendarRule.parse("@hourly"), "2026-01-01T00:00:00+00:00", 2) == [
        "2026-01-01T01:00:00+00:00", "2026-01-01T02:00:00+00:00"]  # strictly after


def test_systemd_events():
    assert fires(CalendarRule.parse("*-*~01"), "2026-01-01T00:00:00+00:00", 2) == [
        "2026-01-31T00:00:00+00:00", "2026-02-28T00:00:00+00:00"]  # the last day of the month
    assert fires(CalendarRule.parse("quarterly"), "2026-01-01T00:00:00+00:00", 2) == [
        "2026-04-01T00:00:00+00:00", "2026-07-01T00:00:00+00:00"]
    # a zone at the end of the expression wins over the schedule's
    rule = CalendarRule.parse("Mon..Fri *-*-* 02:00 America/New_York", "Europe/Paris")
    assert fires(rule, "2026-01-02T08:00:00+00:00", 2) == ["2026-01-05T02:00:00-05:00", "2026-01-06T02:00:00-05:00"]


def test_rrule_with_and_without_dtstart():
    assert fires(CalendarRule.parse("FREQ=DAILY;BYHOUR=6;BYMINUTE=0;BYSECOND=0", "Asia/Tokyo"),
                 "2026-01-01T00:00:00+00:00", 2) == ["2026-01-02T06:00:00+09:00", "2026-01-03T06:00:00+09:00"]
    every_other_day = CalendarRule.parse("DTSTART:20260101T120000\nRRULE:FREQ=DAILY;INTERVAL=2", "UTC")
    assert fires(every_other_day, "2026-03-01T00:00:00+00:00", 2) == [  # Jan 1 + 2k days
        "2026-03-02T12:00:00+00:00", "2026-03-04T12:00:00+00:00"]
    minutely = CalendarRule.parse("DTSTART:20000101T000000\nRRULE:FREQ=MINUTELY;INTERVAL=7", "UTC")
    [first] = minutely.next_fire_times(t("2026-06-01T00:00:00+00:00"))  # fast: does not walk from 2000
    assert (first.at - datetime(2000, 1, 1, tzinfo=UTC)) % timedelta(minutes=7) == timedelta(0)


@pytest.mark.parametrize("text", ["30 2 * * *", "*-*-* 02:30", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0"])
def test_a_time_in_the_spring_gap_runs_once_at_the_gap_end(text):
    rule = CalendarRule.parse(text, "Europe/Paris")
    first, second = rule.next_fire_times(t("2026-03-28T12:00:00+00:00"), 2)
    assert first.at.isoformat() == "2026-03-29T03:00:00+02:00" and "does not exist" in first.note and first.moved
    assert second.at.isoformat() == "2026-03-30T02:30:00+02:00" and second.note is None


@pytest.mark.parametrize("text", ["30 2 * * *", "*-*-* 02:30", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0"])
def test_a_time_repeated_in_autumn_runs_once(text):
    rule = CalendarRule.parse(text, "Europe/Paris")
    first, second = rule.next_fire_times(t("2026-10-24T12:00:00+00:00"), 2)
    assert first.at.isoformat() == "2026-10-25T02:30:00+02:00" and "happens twice" in first.note
    assert second.at.isoformat() == "2026-10-26T02:30:00+01:00"
    # asked again from inside the repeated hour, it does not fire a second time
    assert rule.next_fire_time(t("2026-10-25T01:10:00+00:00")) == t("2026-10-26T01:30:00+00:00")
    assert not rule.repeats_through_the_hours


def test_fixed_times_in_the_gap_collapse_into_one_firing():
    rule = CalendarRule.parse("0,30 2 * * *", "Europe/Paris")
    first, second = rule.next_fire_times(t("2026-03-28T12:00:00+00:00"), 2)
    assert first.at.isoformat() == "2026-03-29T03:00:00+02:00" and first.moved
    assert first.note == "02:00:00, 02:30:00 do not exist (daylight-saving gap): runs once, at the gap's end, 03:00:00"
    assert second.at.isoformat() == "2026-03-30T02:00:00+02:00"


@pytest.mark.parametrize("text", ["*:0/15", "*/15 * * * *", "FREQ=MINUTELY;INTERVAL=15;BYSECOND=0"])
def test_a_repeating_rule_skips_the_gap_and_says_so(text):
    rule = CalendarRule.parse(text, "Europe/Paris") if "FREQ" not in text else \
        CalendarRule.parse(f"DTSTART:20260101T000000\nRRULE:{text}", "Europe/Paris")
    times = rule.next_fire_times(t("2026-03-29T00:40:00+00:00"), 3)
    assert [f.at.isoformat() for f in times] == [
        "2026-03-29T01:45:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:15:00+02:00"]
    assert times[1].note.startswith("02:00:00, 02:15:00, 02:30:00, 02:45:00 do not exist") and not times[1].moved
    assert "skipped, the rule repeats through the hours" in times[1].note and rule.repeats_through_the_hours


@pytest.mark.parametrize("text", ["*/15 * * * *", "*:0/15", "DTSTART:20260101T000000\nRRULE:FREQ=MINUTELY;INTERVAL=15"])
def test_a_repeating_rule_runs_through_the_repeated_hour_on_elapsed_time(text):
    """America/New_York, 2026-11-01: 01:00 to 02:00 happens twice (EDT, then EST); a rule firing every
    15 minutes keeps firing every 15 minutes (04:45Z to 07:15Z), at both passes."""
    times = CalendarRule.parse(text, "America/New_York").next_fire_times(t("2026-11-01T04:40:00+00:00"), 11)
    assert [f.at.astimezone(UTC).strftime("%H:%M") for f in times] == [
        "04:45", "05:00", "05:15", "05:30", "05:45", "06:00", "06:15", "06:30", "06:45", "07:00", "07:15"]
    assert [f.second_pass for f in times] == [False] * 5 + [True] * 4 + [False] * 2
    assert times[1].note == ("01:00:00 happens twice (UTC-04:00 then UTC-05:00): the rule repeats through the hours, "
                             "so it runs at both; this is the first")
    assert times[5].note.endswith("runs at both; this is the second")
    assert times[5].at.isoformat() == "2026-11-01T01:00:00-05:00"


def test_hourly_cron_runs_every_hour_through_the_repeated_hour():
    rule = CalendarRule.parse("0 * * * *", "America/New_York")
    times = rule.next_fire_times(t("2026-11-01T04:30:00+00:00"), 4)
    assert [f.at.isoformat() for f in times] == [
        "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00",
        "2026-11-01T03:00:00-05:00"]
    # chaining from each firing, as a scheduler does, gives the same sequence
    assert rule.next_fire_time(times[0].at) == times[1].at.astimezone(UTC)
    assert rule.next_fire_time(times[1].at) == times[2].at.astimezone(UTC)


@pytest.mark.parametrize("text, repeats", [
    ("30 1 * * *", False), ("*/15 * * * *", True), ("0 * * * *", True), ("@hourly", True), ("@daily", False),
    ("0-59/15 0-23 * * *", True), ("0 0-23 * * *", True), ("0 1-3 * * *", False), ("*/15 1 * * *", True),
    ("0,15,30,45 1 * * *", False), ("*:0/15", True), ("hourly", True), ("minutely", True), ("daily", False),
    ("*-*-* 00/2:00", True), ("*-*-* 01:30", False), ("*-*-* 01:*:00", True), ("Mon..Fri 02:00 Europe/Paris", False),
    ("FREQ=HOURLY", True), ("FREQ=DAILY;BYHOUR=2", False), ("FREQ=MINUTELY;BYMINUTE=0,20,40;BYHOUR=9", True),
])
def test_which_rules_repeat_through_the_hours(text, repeats):
    assert CalendarRule.parse(text, "UTC").repeats_through_the_hours is repeats


def test_lord_howe_half_hour_shift():
    """Australia/Lord_Howe moves its clock by 30 minutes: 02:00 (UTC+11) becomes 01:30 (UTC+10:30)
    on 2026-04-05, and 02:00 (UTC+10:30) becomes 02:30 (UTC+11) on 2026-10-04."""
    every_quarter = CalendarRule.parse("*/15 * * * *", "Australia/Lord_Howe")
    autumn = every_quarter.next_fire_times(t("2026-04-04T14:40:00+00:00"), 5)
    assert [f.at.astimezone(UTC).strftime("%H:%M") for f in autumn] == ["14:45", "15:00", "15:15", "15:30", "15:45"]
    fixed = CalendarRule.parse("45 1 * * *", "Australia/Lord_Howe").next_fire_times(t("2026-04-04T12:00:00+00:00"), 2)
    assert [f.at.isoformat() for f in fixed] == ["2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"]
    spring = CalendarRule.parse("15 2 * * *", "Australia/Lord_Howe").next_fire_times(t("2026-10-03T12:00:00+00:00"), 1)
    assert spring[0].at.isoformat() == "2026-10-04T02:30:00+11:00" and spring[0].moved


def test_kathmandu_quarter_hour_shift():
    """Asia/Kathmandu went from UTC+05:30 to UTC+05:45 at the start of 1986: 00:00 to 00:15 never was."""
    midnight = CalendarRule.parse("0 0 * * *", "Asia/Kathmandu").next_fire_times(t("1985-12-31T12:00:00+00:00"), 2)
    assert [f.at.isoformat() for f in midnight] == ["1986-01-01T00:15:00+05:45", "1986-01-02T00:00:00+05:45"]
    assert midnight[0].moved
    quarter = CalendarRule.parse("*/5 * * * *", "Asia/Kathmandu").next_fire_times(t("1985-12-31T18:20:00+00:00"), 3)
    assert [f.at.isoformat() for f in quarter] == [
        "1985-12-31T23:55:00+05:30", "1986-01-01T00:15:00+05:45", "1986-01-01T00:20:00+05:45"]


@pytest.mark.parametrize("text, field_text", [
    ("61 * * * *", "as cron: five fields"), ("* * *", "as cron: five fields"), ("0 0 * * * *", "as cron: five fields"),
    ("Mon..Fri *-*-* 25:00", "as systemd OnCalendar:"), ("FREQ=SOMETIMES", "RRULE"), ("@fortnightly", "cron expression"),
    ("systemd:Mon..Fri *-*-* 25:00", "systemd calendar event"),
    ("FREQ=DAILY;INTERVAL=3", "DTSTART"), ("FREQ=WEEKLY", "DTSTART"), ("", "cron, systemd calendar or RRULE"),
])
def test_bad_rules_name_the_field(text, field_text):
    with pytest.raises(ValidationError) as caught:
        CalendarRule.parse(text, "UTC", field="cron_schedule")
    assert caught.value.field == "cron_schedule" and field_text in str(caught.value)


def test_unknown_zone():
    with pytest.raises(ValidationError, match="tz"):
        CalendarRule.parse("0 0 * * *", "Mars/Olympus_Mons")


def test_a_guessed_kind_says_what_each_kind_made_of_the_text():
    with pytest.raises(ValidationError) as caught:
        CalendarRule.parse("0 0 12 * * *", "UTC", field="cron_schedule")
    expected = caught.value.expected
    assert expected.startswith("a cron, systemd OnCalendar or RRULE expression; as cron: five fields")
    assert "not 6 (a leading seconds field is not cron's: '0 12 * * *' without it)" in expected
    assert "as systemd OnCalendar: Bad day-of-week" in expected and "as RRULE: it starts with FREQ=" in expected
    assert caught.value.got == "0 0 12 * * *"


@pytest.mark.parametrize("text, said", [
    ("rrule:0 0 12 * * *", "RFC 5545 RRULE"),       # a prefix names the kind: only its complaint
    ("FREQ=SOMETIMES", "RFC 5545 RRULE"),           # so do RRULE words
    ("@dailly", "did you mean @daily?"),            # and an @nickname
])
def test_a_named_kind_reports_only_that_kind(text, said):
    with pytest.raises(ValidationError) as caught:
        CalendarRule.parse(text)
    assert said in caught.value.expected and "as cron" not in caught.value.expected


@pytest.mark.parametrize("typed, suggested", [
    ("Europe/Pariss", ["Europe/Paris"]), ("europe/paris", ["Europe/Paris"]), ("Paris", ["Europe/Paris"]),
    ("new york", ["America/New_York"]), ("US/pacific", ["US/Pacific"]), ("Amrica/Chicago", ["America/Chicago"]),
    ("Nowhere/Land", []), ("\x00" * 3, []),
])
def test_zone_suggestions(typed, suggested):
    assert zone_suggestions(typed) == suggested
    with pytest.raises(ValidationError) as caught:
        parse_zone(typed, "tz")
    assert caught.value.field == "tz"
    assert ("did you mean " + " or ".join(suggested) + "?" in caught.value.expected) if suggested \
        else "did you mean" not in caught.value.expected


def test_a_mistyped_zone_ending_a_systemd_event_is_named():
    with pytest.raises(ValidationError, match=r"not 'Europe/Pariss' \(did you mean Europe/Paris\?\)"):
        CalendarRule.parse("systemd:Mon *-*-* 02:00 Europe/Pariss")


@pytest.mark.parametrize("text, utc", [
    ("2026-11-27", "2026-11-26T23:00:00+00:00"),
    ("2026-03-29T02:30", "2026-03-29T01:00:00+00:00"),   # skipped in spring: the end of the gap (03:00 CEST)
    ("2026-10-25T02:30", "2026-10-25T00:30:00+00:00"),   # repeated in autumn: its first occurrence (CEST)
    ("2026-11-27T10:00:00-05:00", "2026-11-27T15:00:00+00:00"),
])
def test_a_time_without_a_zone_is_a_wall_time_of_the_zone_given(text, utc):
    assert parse_time(text, T_NOW, "after", zone=ZoneInfo("Europe/Paris")).isoformat() == utc
    if "-05:00" not in text:
        with pytest.raises(ValidationError, match="with a zone"):
            parse_time(text, T_NOW, "after")


T_NOW = datetime(2026, 1, 1, tzinfo=UTC)


RULES = ["0 0 * * *", "*/7 * * * *", "*/15 * * * *", "0 * * * *", "*:0/15", "30 2 * * *", "0 1-3 * * *", "*-*-* 02:30", "*:0/20", "Sat *-*-* 01:30",
         "FREQ=HOURLY;BYMINUTE=30;BYSECOND=0", "FREQ=DAILY;BYHOUR=2,3;BYMINUTE=15;BYSECOND=0", "@weekly"]
ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Santiago",
         "Asia/Kathmandu"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(RULES), st.sampled_from(ZONES),
       st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 12, 31), timezones=st.just(UTC)))
def test_firings_are_strictly_increasing_after_the_start_and_chain(text, zone, after):
    rule = CalendarRule.parse(text, zone)
    times = rule.next_fire_times(after, 6)
    assert len(times) == 6
    # compared in UTC: Python never finds a time of a repeated hour equal to a time of another zone
    instants = [f.at.astimezone(UTC) for f in times]
    assert instants[0] > after and all(a < b for a, b in zip(instants, instants[1:], strict=False))
    # asking from each firing gives the next: no firing is lost or repeated by the chaining
    assert [rule.next_fire_time(instant) for instant in instants[:-1]] == instants[1:]
    # a firing is at a wall time the rule names, unless a note says DST moved it
    for firing in times:
        assert firing.note is None or "daylight-saving" in firing.note or "happens twice" in firing.note


SYSTEMD_EXPRESSIONS = [
    "daily", "hourly", "weekly", "monthly", "quarterly", "semiannually", "yearly",
    "Mon..Fri *-*-* 02:00", "Sat,Sun *-*-* 10:30", "*:0/15", "*-*~01", "*-*~07/1 03:00", "*-02-29 12:00",
    "*-*-1,15 06:00", "Mon *-*-1..7 00:00", "*-*-* 00/6:00", "2027-*-* 00:00", "*:*:30", "Fri *-*-13 13:13",
]
SYSTEMD_ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Sao_Paulo"]
SYSTEMD_BASES = ["2026-01-15T08:00:00+00:00", "2026-06-30T23:59:59+00:00", "2027-02-27T00:00:00+00:00",
                 # just before daylight-saving changes: Paris and New York in spring and autumn, Sydney in October
                 "2026-03-29T00:30:00+00:00", "2026-10-25T00:10:00+00:00", "2026-03-08T06:30:00+00:00",
                 "2026-11-01T05:20:00+00:00", "2026-10-03T15:40:00+00:00"]


def systemd_analyze(expression: str, zone: str, base: datetime, count: int) -> list[datetime]:
    out = subprocess.run(
        ["systemd-analyze", "calendar", f"--iterations={count}", f"--base-time=@{int(base.timestamp())}",
         f"{expression} {zone}"],
        env={"TZ": "UTC", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True).stdout
    found = re.findall(r"(?:Next elapse|Iter\. #\d+): \w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", out)
    return [datetime.fromisoformat(f"{value}+00:00") for value in found]


def test_systemd_analyze_is_installed():
    assert shutil.which("systemd-analyze"), "scripts/install-system-deps installs systemd (for systemd-analyze)"


@pytest.mark.parametrize("zone", SYSTEMD_ZONES)
def test_systemd_events_agree_with_systemd_analyze(zone):
    compared = 0
    for expression in SYSTEMD_EXPRESSIONS:
        for base_text in SYSTEMD_BASES:
            base = t(base_text)
            rule = CalendarRule.parse(expression, zone)
            ours = rule.next_fire_times(base, 20)
            theirs = systemd_analyze(expression, zone, base, 12)
            # systemd skips a time that does not exist; Ostinato runs it at the gap's end, with a note
            kept = [f.at.astimezone(UTC) for f in ours if not (f.moved or f.second_pass)]
            assert kept[:len(theirs)][:10] == theirs[:10], (expression, zone, base_text)
            compared += 1
    assert compared == len(SYSTEMD_EXPRESSIONS) * len(SYSTEMD_BASES)
