"""Durations as the CLI prints them (``1d6h``, ``4.714ms``) read back by the parser, and
bare numbers refused wherever people write durations (options, settings)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostinato.cli.output import format_elapsed, format_interval, humanize_delta
from ostinato.config import Settings
from ostinato.domain.durations import format_duration, parse_duration, parse_time
from ostinato.domain.errors import ValidationError
from ostinato.domain.limits import MAX_DURATION


@pytest.mark.parametrize("value, text", [
    (timedelta(days=1), "1d"),
    (timedelta(hours=12), "12h"),
    (timedelta(seconds=90), "1m30s"),
    (timedelta(microseconds=4714), "4.714ms"),
    (timedelta(days=1, hours=6), "1d6h"),
    (timedelta(days=64), "64d"),
    (timedelta(hours=1, minutes=30), "1h30m"),
    (timedelta(seconds=1.5), "1.5s"),
    (timedelta(0), "0s"),
    (timedelta(seconds=-5), "-5s"),
])
def test_durations_print_as_the_options_take_them(value, text):
    assert format_duration(value) == text


@given(st.timedeltas(min_value=timedelta(microseconds=1), max_value=MAX_DURATION))
def test_every_printed_duration_reads_back_exactly(value):
    assert parse_duration(format_duration(value), "d") == value


@pytest.mark.parametrize("value, text", [
    (timedelta(microseconds=4714), "4.7ms"),
    (timedelta(seconds=12.345678), "12.346s"),
    (timedelta(hours=1, minutes=2, seconds=3.4), "1h2m3s"),
    (timedelta(days=2, seconds=0.7), "2d1s"),
])
def test_measured_durations_are_rounded_for_people(value, text):
    assert format_elapsed(value) == text
    parse_duration(text, "d")  # still a form the options take


def test_an_unset_interval_says_so():
    assert format_interval(None) == "none" and format_interval(timedelta(hours=12)) == "12h"


@pytest.mark.parametrize("text", ["1", "3600", "0.5", " 42 "])
def test_a_bare_number_in_text_is_refused_naming_the_field(text):
    with pytest.raises(ValidationError) as info:
        parse_duration(text, "default_interval")
    assert info.value.field == "default_interval"
    assert "unit" in info.value.expected and "30s" in info.value.expected and "PT1H" in info.value.expected


def test_a_bare_relative_time_is_refused_too():
    with pytest.raises(ValidationError) as info:
        parse_time("+2", parse_time("2026-01-01T00:00:00Z", None), "next_run")
    assert info.value.field == "next_run"


def test_numbers_of_machine_formats_stay_seconds():
    # JSON bodies of the API and `schedule export` files carry durations as numbers of seconds
    assert parse_duration(90, "d") == timedelta(seconds=90)
    assert parse_duration(0.25, "d") == timedelta(milliseconds=250)


def write(tmp_path, text):
    path = tmp_path / "ostinato.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text", ["poll_interval = 1\n", "poll_interval = 1.5\n", 'poll_interval = "1"\n'])
def test_a_bare_number_in_the_settings_file_is_refused(tmp_path, text):
    with pytest.raises(ValidationError) as info:
        Settings.load(write(tmp_path, text), environ={})
    assert info.value.field == "poll_interval"
    assert "unit" in str(info.value)


def test_a_bare_number_in_the_environment_is_refused():
    with pytest.raises(ValidationError) as info:
        Settings.load(environ={"OSTINATO_MINIMUM_INTERVAL": "1"})
    assert info.value.field == "minimum_interval"
    with pytest.raises(ValidationError) as info:
        Settings.load(environ={"OSTINATO_SCHEDULE_RETRY_BACKOFF": "5,60,600"})
    assert info.value.field == "schedule_retry_backoff"
    assert Settings.load(environ={"OSTINATO_SCHEDULE_RETRY_BACKOFF": "5s,1m,10m"}).schedule_timing().backoff[1] == timedelta(minutes=1)


@pytest.mark.parametrize("offset, text", [
    (timedelta(seconds=10), "in 10 s"), (timedelta(seconds=-12), "12 s ago"), (timedelta(seconds=1), "in 1 s"),
    (timedelta(milliseconds=300), "now"), (timedelta(seconds=44), "in 44 s"), (timedelta(seconds=50), "in a minute"),
    (timedelta(hours=4), "in 4 hours"), (timedelta(days=-15), "15 days ago"),
])
def test_times_read_relative_to_now_to_the_second(offset, text):
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert humanize_delta(now + offset, now) == text
