"""``ostinato task-type add`` says at once what a newcomer got wrong: a callable that cannot be
imported here (a warning: it may live only on the workers) and a missing default interval (an error)."""

from __future__ import annotations

import json

import pytest
from cli_helpers import ok, run

from ostinato.store import open_store


@pytest.fixture
def url(fresh_url):
    ok(fresh_url, "db", "init")
    return fresh_url


def task_types(url):
    with open_store(url) as store:
        return {t.type: t for t in store.list_task_types()}


def test_a_callable_that_cannot_be_imported_is_a_warning_naming_the_import_error(url):
    result = run(url, "task-type", "add", "t3", "nosuch.module:fn", "x", "--default-interval", "1d")
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == (
        "warning: backend_name 'nosuch.module:fn' cannot be imported here (ModuleNotFoundError: No module named "
        "'nosuch'); the workers that run t3 tasks must be able to import it")
    assert "Created task type t3." in result.stdout
    assert "t3" in task_types(url)  # kept: the workers may have it


def test_a_missing_attribute_is_named(url):
    result = run(url, "task-type", "add", "t4", "ostinato.examples:nosuch", "x", "--no-default-interval")
    assert result.exit_code == 0
    assert "module 'ostinato.examples' has no attribute 'nosuch'" in result.stderr


def test_an_importable_callable_gets_no_warning_and_json_stays_clean(url):
    result = run(url, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape", "--default-interval", "12h", "--json")
    assert result.exit_code == 0 and result.stderr == ""
    assert json.loads(result.stdout)["default_interval"] == 12 * 3600
    result = run(url, "task-type", "add", "other", "nosuch:fn", "x", "--no-default-interval", "--json")
    assert json.loads(result.stdout)["type"] == "other" and result.stderr.startswith("warning: backend_name 'nosuch:fn'")


def test_a_missing_default_interval_is_an_error_naming_the_field(url):
    result = run(url, "task-type", "add", "t3", "ostinato.examples:flaky", "x")
    assert result.exit_code == 2
    assert result.output.startswith("error: --default-interval: expected a duration such as 1d (--default-interval), "
                                    "or --no-default-interval")
    assert task_types(url) == {}
    ok(url, "task-type", "add", "t3", "ostinato.examples:flaky", "x", "--no-default-interval")
    assert task_types(url)["t3"].default_interval is None
    # its recurring tasks then need their own interval, and the error says so
    result = run(url, "task", "add", "t3")
    assert result.exit_code == 2 and "--interval:" in result.output and "no default_interval" in result.output
    ok(url, "task", "add", "t3", "--interval", "1h")


def test_show_prints_every_field_and_list_the_intervals(url):
    ok(url, "task-type", "add", "load-git", "ostinato.examples:load_directory", "Load git", "--default-interval", "1d",
       "--min-interval", "12h", "--max-interval", "64d", "--backoff-factor", "2", "--max-queue-length", "500")
    shown = ok(url, "task-type", "show", "load-git").stdout
    assert "load-git: ostinato.examples:load_directory" in shown and "interval: 1d [12h, 64d]" in shown
    assert "backoff_factor: 2" in shown and "max_queue_length: 500" in shown and "num_retries: none" in shown
    assert json.loads(ok(url, "task-type", "show", "load-git", "--json").stdout)["max_queue_length"] == 500
    assert "interval: 1d [12h, 64d]" in ok(url, "task-type", "list").stdout  # the interval without -v too
    missing = run(url, "task-type", "show", "load-hg")
    assert missing.exit_code == 1 and missing.output.strip() == "error: task type not found: 'load-hg' (did you mean load-git?)"
