"""``ostinato schedule end-run``: a program reports its own run's end from a shell, with its items; a
good run with too many items failed reads partial_failure; a tag that is not the current run, an
unknown schedule and bad counts are refused naming what is wrong, and nothing is written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cli_helpers import ok, ok_json, run, scrape_database

from ostinato.store import open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, fresh_url):
    url = scrape_database(request, fresh_url)
    ok(url, "schedule", "add", "bills", "scrape", "--every", "24h", "--partial-failure-threshold", "0.1")
    with open_store(url) as store:  # a scheduler sent the run with tag t1
        assert store.pick_schedule(node="n", owner_name="me", tag="t1", now=datetime.now(UTC) + timedelta(seconds=1))
    return url


def test_a_good_run_with_its_items_ends_and_the_schedule_says_them(url):
    result = ok(url, "schedule", "end-run", "bills", "--tag", "t1", "--items-done", "950", "--items-failed", "150")
    assert result.output.strip() == "Ended bills's run t1: succeeded (950 done, 150 failed)"
    shown = ok_json(url, "schedule", "show", "bills")
    assert (shown["owner_tag"], shown["last_items_done"], shown["last_items_failed"]) == (None, 950, 150)
    [row] = ok_json(url, "schedule", "condition", "bills")
    assert (row["condition"], row["reason"]) == ("WARNING", "partial_failure")  # 13.6 % failed, above 10 %
    [last] = ok_json(url, "schedule", "runs", "bills")
    assert last["status"] == "succeeded" and last["detail"]["items_failed"] == 150


def test_a_failed_run_without_items(url):
    ok(url, "schedule", "end-run", "bills", "--tag", "t1", "--status", "failed")
    [row] = ok_json(url, "schedule", "condition", "bills")
    assert row["reason"] == "last_run_failed"
    assert ok_json(url, "schedule", "show", "bills")["last_items_done"] is None


def test_a_tag_that_is_not_the_current_run_records_no_end(url):
    result = run(url, "schedule", "end-run", "bills", "--tag", "t0", "--items-done", "3")
    assert result.exit_code == 1 and "t0 is not bills's current run" in result.output, result.output
    shown = ok_json(url, "schedule", "show", "bills")
    assert shown["owner_tag"] == "t1" and shown["last_items_done"] is None


@pytest.mark.parametrize("args, option", [
    (["--items-done", "-1"], "--items-done"),
    (["--items-failed", "2.5"], "--items-failed"),
    (["--items-failed", "many"], "--items-failed"),
    (["--status", "stolen"], "--status"),
])
def test_bad_counts_name_the_option_and_write_nothing(url, args, option):
    result = run(url, "schedule", "end-run", "bills", "--tag", "t1", *args)
    assert result.exit_code == 2 and option in result.output.splitlines()[0], result.output
    assert ok_json(url, "schedule", "show", "bills")["owner_tag"] == "t1"


def test_an_unknown_schedule_is_named(url):
    result = run(url, "schedule", "end-run", "bils", "--tag", "t1")
    assert result.exit_code != 0 and "bils" in result.output and "bills" in result.output, result.output
    assert ok_json(url, "schedule", "show", "bills")["owner_tag"] == "t1"
