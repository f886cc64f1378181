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


@pytest.mark.parametrize("typed", ["Europe/Pariss", "europe/paris", "Paris"])
def test_a_mistyped_zone_gets_the_closest_name(typed):
    line = one_error(calendar("@daily", "--tz", typed))
    assert line == f"error: tz: expected an IANA time zone such as Europe/Paris or UTC (did you mean Europe/Paris?), got '{typed}'"


def test_a_mistyped_zone_ending_a_systemd_event_gets_the_closest_name():
    line = one_error(calendar("Mon *-*-* 02:00 America/New_Yrok"))
    assert "an IANA time zone at the end, not 'America/New_Yrok' (did you mean America/New_York?)" in line
