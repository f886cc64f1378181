"""``ostinato calendar next``: the preview of any calendar rule."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ostinato.cli import cli


def calendar(*args):
    return CliRunner().invoke(cli, ["calendar", "next", *args])


def test_preview_with_a_daylight_saving_note():
    result = calendar("30 2 * * *", "--tz", "Europe/Paris", "--after", "2026-03-28T12:00:00Z", "-n", "2")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "cron rule '30 2 * * *' in Europe/Paris" in lines[0]
    assert "2026-03-29T03:00:00+02:00" in lines[1] and "does not exist" in lines[1]
    assert "2026-03-30T02:30:00+02:00" in lines[2] and "note" not in lines[2]


def test_json_for_each_kind():
    for expression, kind, first in [
        ("Mon..Fri *-*-* 02:00", "systemd", "2026-01-02T02:00:00+00:00"),
        ("@weekly", "cron", "2026-01-04T00:00:00+00:00"),
        ("FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=23;BYMINUTE=0;BYSECOND=0", "rrule", "2026-01-31T23:00:00+00:00"),
    ]:
        result = calendar(expression, "--after", "2026-01-01T03:00:00Z", "--json", "-n", "1")
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["kind"] == kind and data["next"][0]["at"] == first and data["next"][0]["note"] is None


def test_bad_rules_and_zones_name_the_field():
    for args, field in [(["0 0 * * * *"], "calendar:"), (["61 * * * *"], "calendar:"), (["@daily", "--tz", "Nowhere/Land"], "tz:"),
                        (["FREQ=DAILY;INTERVAL=2"], "DTSTART"), (["@daily", "--count", "0"], "count")]:
        result = calendar(*args)
        assert result.exit_code == 2 and field in result.output, (args, result.output)


def one_error(result) -> str:
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: ") and "Traceback" not in result.output
    return line


def test_a_six_field_cron_says_cron_takes_five_and_what_each_kind_said():
    line = one_error(calendar("0 0 12 * * *"))
    assert "calendar: expected a cron, systemd OnCalendar or RRULE expression" in line
    assert "as cron: five fields (minute hour day-of-month month day-of-week) or an @nickname, not 6" in line
    assert "'0 12 * * *' without it" in line
    assert "as systemd OnCalendar: Bad day-of-week" in line and "as RRULE:" in line
    assert "0 12 * * *" in calendar("0 12 * * *", "-n", "1").output  # the advice works


def test_a_forced_kind_reports_only_that_kind():
    line = one_error(calendar("Mon..Fry *-*-* 02:00", "--kind", "systemd"))
    assert "expected a systemd calendar event" in line and "as cron" not in line


def test_a_count_above_the_maximum_is_refused_by_name():
    line = one_error(calendar("@daily", "--count", "100000"))
    assert line == "error: --count: expected a whole number from 1 to 10000, got '100000'"
    result = calendar("@daily", "--after", "2026-01-01T00:00:00Z", "--count", "10000", "--json")
    assert result.exit_code == 0 and len(json.loads(result.output)["next"]) == 10000


def test_a_rule_searched_to_its_horizon_does_not_claim_it_fires_no_more():
    result = calendar("0 0 1 1 *", "--after", "2026-06-01T00:00:00Z", "--count", "300")
    assert result.exit_code == 0, result.output
    assert "fires no more" not in result.output
    assert result.output.strip().splitlines()[-1] == "  (no more firings within the 200 years searched after 2026-06-01: 200 found)"


@pytest.mark.parametrize("typed", ["Europe/Pariss", "europe/paris", "Paris"])
def test_a_mistyped_zone_gets_the_closest_name(typed):
    line = one_error(calendar("@daily", "--tz", typed))
    assert line == f"error: --tz: expected an IANA time zone such as Europe/Paris or UTC (did you mean Europe/Paris?), got '{typed}'"


def test_a_mistyped_zone_ending_a_systemd_event_gets_the_closest_name():
    line = one_error(calendar("Mon *-*-* 02:00 America/New_Yrok"))
    assert "an IANA time zone at the end, not 'America/New_Yrok' (did you mean America/New_York?)" in line


@pytest.mark.parametrize("after, first", [
    ("2026-11-27", "2026-11-27T06:00:00+01:00"),            # midnight in Paris
    ("2026-11-27T06:00", "2026-11-28T06:00:00+01:00"),      # strictly after
    ("2026-11-27T04:30:00Z", "2026-11-27T06:00:00+01:00"),  # a zone given wins
])
def test_a_time_without_a_zone_is_read_in_the_rule_zone(after, first):
    result = calendar("0 6 * * *", "--tz", "Europe/Paris", "--after", after, "--json", "-n", "1")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["next"][0]["at"] == first


def test_a_time_without_a_zone_is_utc_without_tz_and_the_systemd_zone_with_one():
    first = json.loads(calendar("0 6 * * *", "--after", "2026-11-27T05:59", "--json", "-n", "1").output)["next"][0]
    assert first["at"] == "2026-11-27T06:00:00+00:00"
    tokyo = json.loads(calendar("*-*-* 09:00 Asia/Tokyo", "--after", "2026-11-27T08:59", "--json", "-n", "1").output)
    assert tokyo["next"][0]["at"] == "2026-11-27T09:00:00+09:00"
    line = one_error(calendar("@daily", "--tz", "Europe/Paris", "--after", "2026-13-01"))
    assert "after: expected an ISO 8601 time (2026-11-22T10:00:00, with or without a zone)" in line
