"""Zones a calendar rule names itself (an RRULE's DTSTART in UTC, with an offset
or a TZID), the daylight-saving rule as the previews show it, and syntax a
reference accepts that Ostinato reads or refuses with its reason: through
``ostinato calendar next`` and ``ostinato schedule add``."""

from __future__ import annotations

import json

import pytest
from cli_helpers import ok, ok_json, run
from click.testing import CliRunner

from ostinato.cli import cli


def preview(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["calendar", "next", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def utc_times(*args: str) -> list[str]:
    return [item["utc"][11:16] for item in preview(*args)["next"]]


def one_error(*args: str) -> str:
    result = CliRunner().invoke(cli, ["calendar", "next", *args])
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: ") and "Traceback" not in result.output
    return line


@pytest.mark.parametrize("dtstart, first_utc", [
    ("DTSTART:20260101T090000Z", "2026-01-02T09:00:00+00:00"),         # UTC: whatever the schedule's zone
    ("DTSTART:20260101T090000+0530", "2026-01-02T03:30:00+00:00"),     # an offset
    ("DTSTART;TZID=America/New_York:20260101T090000", "2026-01-01T14:00:00+00:00"),  # 09:00 EST
    ("DTSTART:20260101T090000", "2026-01-02T08:00:00+00:00"),          # no zone: the schedule's (Paris)
])
def test_dtstart_zone_is_honoured(dtstart, first_utc):
    data = preview(f"{dtstart}\nRRULE:FREQ=DAILY", "--tz", "Europe/Paris", "--after", "2026-01-01T12:00:00Z", "-n", "2")
    assert data["next"][0]["utc"] == first_utc


def test_a_tzid_rule_follows_its_zone_through_daylight_saving():
    data = preview("DTSTART;TZID=America/New_York:20260101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO",
                   "--after", "2026-03-01T00:00:00Z", "-n", "3")
    assert [item["utc"] for item in data["next"]] == [  # 09:00 in New York, EST then EDT (from 8 March)
        "2026-03-02T14:00:00+00:00", "2026-03-09T13:00:00+00:00", "2026-03-16T13:00:00+00:00"]
    text = CliRunner().invoke(cli, ["calendar", "next", "DTSTART;TZID=America/New_York:20260101T090000\nRRULE:FREQ=DAILY",
                                    "--after", "2026-03-01T00:00:00Z", "-n", "1"]).output
    assert "in America/New_York" in text.splitlines()[0]


def test_until_in_utc_ends_a_tzid_rule_at_that_instant():
    # 09:00 New York is 14:00Z in January: UNTIL 14:00Z keeps the 5th, UNTIL 13:59Z drops it
    rule = "DTSTART;TZID=America/New_York:20260101T090000\nRRULE:FREQ=DAILY;UNTIL={}"
    assert len(preview(rule.format("20260105T140000Z"), "--after", "2026-01-01T00:00:00Z", "-n", "9")["next"]) == 5
    assert len(preview(rule.format("20260105T135900Z"), "--after", "2026-01-01T00:00:00Z", "-n", "9")["next"]) == 4


def test_an_unknown_tzid_is_one_line_naming_the_field():
    line = one_error("DTSTART;TZID=America/New_Yrok:20260101T090000\nRRULE:FREQ=DAILY")
    assert "calendar: expected an IANA time zone in DTSTART's TZID" in line
    assert "did you mean America/New_York?" in line and "'America/New_Yrok'" in line


def test_fractional_seconds_are_refused_with_the_reason():
    line = one_error("systemd: *-*-* 12:34:56.5")
    assert "calendar: expected a systemd calendar event" in line and "whole seconds, not '56.5'" in line
    assert "starts runs to the second" in line
    assert "whole seconds, not '56.5'" in one_error("*-*-* 12:34:56.5")  # the kind guessed: said too


def test_the_repeated_autumn_hour_keeps_a_quarter_hour_cron_running():
    """America/New_York on 2026-11-01: 01:00 to 02:00 happens twice. A rule every 15 minutes runs
    every 15 minutes through it (06:00Z to 06:45Z is the second pass); a fixed time runs once."""
    assert utc_times("*/15 * * * *", "--tz", "America/New_York", "--after", "2026-11-01T04:50:00Z", "-n", "10") == [
        "05:00", "05:15", "05:30", "05:45", "06:00", "06:15", "06:30", "06:45", "07:00", "07:15"]
    assert utc_times("0 * * * *", "--tz", "America/New_York", "--after", "2026-11-01T04:30:00Z", "-n", "3") == [
        "05:00", "06:00", "07:00"]
    fixed = preview("30 1 * * *", "--tz", "America/New_York", "--after", "2026-11-01T04:00:00Z", "-n", "2")["next"]
    assert [item["utc"] for item in fixed] == ["2026-11-01T05:30:00+00:00", "2026-11-02T06:30:00+00:00"]
    assert "runs once, at the first" in fixed[0]["note"]
    second = preview("*/15 * * * *", "--tz", "America/New_York", "--after", "2026-11-01T05:55:00Z", "-n", "1")["next"][0]
    assert second["at"] == "2026-11-01T01:00:00-05:00" and second["note"].endswith("runs at both; this is the second")


@pytest.fixture
def url(fresh_url):
    ok(fresh_url, "db", "init")
    ok(fresh_url, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape a site", "--no-default-interval")
    return fresh_url


def test_schedule_add_with_a_tzid_rule_and_its_next_firings(url):
    rule = "DTSTART;TZID=America/New_York:20260101T090000\nRRULE:FREQ=DAILY"
    added = ok_json(url, "schedule", "add", "morning", "scrape", "--calendar", rule, "--tz", "Europe/Paris",
                    "--max-duration", "1h")
    assert added["cron_schedule"] == rule
    firings = ok_json(url, "schedule", "next", "morning", "-n", "2")
    assert [f["at"][11:] for f in firings] == ["09:00:00-05:00", "09:00:00-05:00"]


def test_schedule_add_with_an_unknown_tzid_is_refused_and_stores_nothing(url):
    result = run(url, "schedule", "add", "morning", "scrape", "--calendar",
                 "DTSTART;TZID=Mars/Olympus:20260101T090000\nRRULE:FREQ=DAILY", "--max-duration", "1h")
    assert result.exit_code == 2 and "DTSTART's TZID" in result.output and "Traceback" not in result.output
    assert ok_json(url, "schedule", "list") == []
