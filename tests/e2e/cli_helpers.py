"""Helpers of the command-line tests: invoke ``ostinato`` in-process on a database URL."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ostinato.cli import cli


def run(url, *args, input=None):
    return CliRunner().invoke(cli, ["--db", url, *args], input=input)


def ok(url, *args, input=None):
    result = run(url, *args, input=input)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result


def ok_json(url, *args, input=None):
    return json.loads(ok(url, *args, "--json", input=input).stdout)


def add_loaders(url, *visit_types):
    """Declare a loader (task type ``load-<visit type>``) for each visit type: the CLI refuses
    origins and statuses of visit types nobody can load."""
    for visit_type in visit_types:
        ok(url, "task-type", "add", f"load-{visit_type}", "ostinato.examples:load_directory", f"Load {visit_type} origins",
           "--no-default-interval")


def scrape_database(request, fresh_url):
    """The database of a test parametrized over ``sqlite`` and ``postgresql`` (``request.param``), with the
    task type ``scrape`` the schedule tests use: a new SQLite file, initialized, or the test's PostgreSQL."""
    if request.param == "sqlite":
        ok(fresh_url, "db", "init")
        url = fresh_url
    else:
        url = request.getfixturevalue("pg_dsn")
    ok(url, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape a site", "--no-default-interval")
    return url
