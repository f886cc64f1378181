"""What a newcomer reads first: durations as the options take them, times to the second,
counts in the right number, and tables that wrap between words at 80 columns."""

from __future__ import annotations

import re

import pytest
from cli_helpers import ok, ok_json, run
from click.testing import CliRunner

from ostinato.cli import cli
from ostinato.domain.durations import parse_duration

MICROSECONDS = re.compile(r"\d\d:\d\d:\d\d\.\d")


@pytest.fixture
def url(fresh_url):
    ok(fresh_url, "db", "init")
    ok(fresh_url, "task-type", "add", "ping", "ostinato.examples:ping", "Ping", "--default-interval", "1d6h",
       "--min-interval", "90s", "--max-interval", "7d", "--retry-delay", "250ms", "--num-retries", "1")
    return fresh_url


def narrow(url, *args):
    """The command's output on an 80-column terminal."""
    result = CliRunner().invoke(cli, ["--db", url, *args], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_task_type_durations_read_as_the_options_take_them(url):
    out = ok(url, "task-type", "list", "-v").output
    assert "  interval: 1d6h [1m30s, 7d]" in out and "  retry_delay: 250ms" in out
    for text in ("1d6h", "1m30s", "7d", "250ms"):
        parse_duration(text, "d")
    assert "day," not in out and "0:00" not in out
    # --json keeps seconds, as documented
    [data] = ok_json(url, "task-type", "list")
    assert (data["default_interval"], data["min_interval"], data["retry_delay"]) == (108000, 90, 0.25)


def test_task_interval_and_counts(url):
    ok(url, "task", "add", "ping", "a")
    out = ok(url, "task", "list").output
    assert out.splitlines()[0] == "Found 1 task"
    assert "  Interval: 1d6h" in out
    assert ok(url, "task", "list-pending", "ping").output.splitlines()[0] == "Found 1 ping task"
    ok(url, "task", "add", "ping", "b")
    assert ok(url, "task", "list").output.splitlines()[0] == "Found 2 tasks"
    assert ok(url, "task", "list", "--status", "disabled").output.splitlines()[0] == "Found 0 tasks"
    assert ok_json(url, "task", "list")[0]["current_interval"] == 108000


def test_schedule_times_to_the_second_and_periods_as_written(url):
    ok(url, "schedule", "add", "bills", "ping", "--every", "1d6h")
    out = narrow(url, "schedule", "list")
    assert out.splitlines()[0].strip() == "1 schedule"
    assert "every 1d6h" in out
    assert not MICROSECONDS.search(out), out
    shown = ok(url, "schedule", "show", "bills").output
    assert not MICROSECONDS.search(shown)
    # JSON keeps full ISO times and seconds
    data = ok_json(url, "schedule", "show", "bills")
    assert data["scheduling_period"] == 108000 and "T" in data["should_start_by"]


def test_a_measured_duration_reads_back(url):
    ok(url, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape", "--default-interval", "1d")
    ok(url, "schedule", "add", "bills", "scrape", "failure_rate=0", "--every", "1h")
    ok(url, "scheduler", "--once", "--node", "n1")
    line = next(x for x in ok(url, "schedule", "show", "bills").output.splitlines() if "average good duration" in x)
    took, spread = line.rsplit(": ", 1)[1].split(" ± ")  # the average, and the spread of good durations
    assert took != "unknown" and ":" not in took, line
    parse_duration(took, "d")
    parse_duration(spread, "spread", allow_zero=True)


def test_tables_wrap_between_words_and_keep_identifiers_whole(url):
    long_instance = "gitlab.some-long-instance-name.example.org"
    ok(url, "lister", "add", "a-lister-with-a-rather-long-name", long_instance)
    ok(url, "schedule", "add", "nightly", "ping", "--calendar", "Mon..Fri *-*-* 02:00", "--max-duration", "4h",
       "--tz", "Europe/Paris")
    out = narrow(url, "lister", "list")
    assert long_instance in out and "a-lister-with-a-rather-long-name" in out
    out = narrow(url, "schedule", "list")
    assert max(len(line) for line in out.splitlines()) <= 80, out
    cells = " ".join(out.replace("│", " ").split())
    for word in ("Mon..Fri", "*-*-*", "02:00", "(Europe/Paris)"):
        assert f" {word} " in f" {cells} ", (word, out)


def test_a_bare_number_in_an_environment_setting_is_an_error(url):
    result = CliRunner().invoke(cli, ["--db", url, "task", "list"], env={"OSTINATO_POLL_INTERVAL": "1"})
    assert result.exit_code == 2
    assert result.output.startswith("error: poll_interval: expected a duration with a unit, such as 30s"), result.output
    assert run(url, "task", "list").exit_code == 0
