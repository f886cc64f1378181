"""The command line and run lengths: ``schedule add`` and ``update`` set expected_duration and
partial_failure_threshold, ``schedule show`` says them with the spread and the last good run's items,
``schedule condition`` says partial_failure; bad values name the option and store nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cli_helpers import ok, ok_json, run, scrape_database

from ostinato.domain.run_items import ItemCounts
from ostinato.domain.schedules import RunStatus
from ostinato.store import open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, fresh_url):
    return scrape_database(request, fresh_url)


def test_add_update_and_show(url):
    added = ok_json(url, "schedule", "add", "bills", "scrape", "--every", "24h", "--expected-duration", "20m",
                    "--partial-failure-threshold", "0.25")
    assert (added["expected_duration"], added["partial_failure_threshold"]) == (1200, 0.25)
    shown = ok(url, "schedule", "show", "bills").output
    assert "Expected run: 20m" in shown and "partial failure above: 25% of its items failed" in shown
    updated = ok_json(url, "schedule", "update", "bills", "--no-expected-duration", "--partial-failure-threshold", "0")
    assert (updated["expected_duration"], updated["partial_failure_threshold"]) == (None, 0)
    updated = ok_json(url, "schedule", "update", "bills", "--default-partial-failure-threshold")
    assert updated["partial_failure_threshold"] is None
    assert "Expected run: the moving average" in ok(url, "schedule", "show", "bills").output


def test_show_and_condition_say_the_last_good_runs_items(url):
    ok(url, "schedule", "add", "bills", "scrape", "--every", "24h")
    with open_store(url) as store:
        now = datetime.now(UTC)
        assert store.pick_schedule(node="n", owner_name="me", tag="t1", now=now + timedelta(seconds=1)) is not None
        store.end_schedule_run("bills", "t1", status=RunStatus.SUCCEEDED, ended=now + timedelta(minutes=1),
                               items=ItemCounts(3, 1))
    shown = ok(url, "schedule", "show", "bills").output
    assert "Last good run's items: 3 done, 1 failed (25% failed)" in shown and "± 0s" in shown
    assert "(partial_failure): its last good run failed more of its items" in shown
    [row] = ok_json(url, "schedule", "condition", "bills")
    assert (row["condition"], row["reason"]) == ("WARNING", "partial_failure")
    assert ok_json(url, "schedule", "show", "bills")["last_items_failed"] == 1


@pytest.mark.parametrize("args, option", [
    (["--expected-duration", "0s"], "--expected-duration"),
    (["--expected-duration", "-5m"], "--expected-duration"),
    (["--partial-failure-threshold", "1.5"], "--partial-failure-threshold"),
    (["--partial-failure-threshold", "-0.1"], "--partial-failure-threshold"),
    (["--partial-failure-threshold", "nan"], "--partial-failure-threshold"),
])
def test_bad_values_name_the_option_and_store_nothing(url, args, option):
    result = run(url, "schedule", "add", "bad", "scrape", "--every", "1h", *args)
    assert result.exit_code == 2 and result.output.startswith(f"error: {option}:"), result.output
    assert ok_json(url, "schedule", "list") == []


def test_a_bad_update_names_the_option_and_changes_nothing(url):
    ok(url, "schedule", "add", "bills", "scrape", "--every", "24h", "--partial-failure-threshold", "0.3")
    result = run(url, "schedule", "update", "bills", "--partial-failure-threshold", "7")
    assert result.exit_code == 2 and result.output.startswith("error: --partial-failure-threshold:"), result.output
    result = run(url, "schedule", "update", "bills", "--expected-duration", "5m", "--no-expected-duration")
    assert result.exit_code == 2 and result.output.startswith("error: --expected-duration:"), result.output
    shown = ok_json(url, "schedule", "show", "bills")
    assert (shown["partial_failure_threshold"], shown["expected_duration"]) == (0.3, None)
