"""End-to-end tests of ``ostinato db``: init, version, upgrade, and the schema check of other commands."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run

from ostinato.store.migrations import latest_version
from ostinato.store.sqlite.dialect import MIGRATIONS

LATEST = latest_version(MIGRATIONS)


@pytest.fixture
def url(fresh_url):
    return fresh_url




def test_init_then_version(url):
    result = run(url, "db", "init")
    assert result.exit_code == 0, result.output
    assert "Created the schema, version" in result.output

    result = run(url, "db", "version")
    assert result.exit_code == 0, result.output
    assert f"current: {LATEST}" in result.output and f"latest: {LATEST}" in result.output

    result = run(url, "db", "version", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"current": LATEST, "latest": LATEST, "up_to_date": True}


def empty_database(url):
    """An existing database file without a schema (a missing one is test_cli_db_open's)."""
    open(url.removeprefix("sqlite:///"), "wb").close()  # SQLite reads an empty file as an empty database
    return url


def test_version_of_empty_database(url):
    empty_database(url)
    result = run(url, "db", "version", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["current"] is None and data["up_to_date"] is False
    assert "ostinato db init" in run(url, "db", "version").output


def test_upgrade_with_nothing_to_apply(url):
    assert run(url, "db", "init").exit_code == 0
    result = run(url, "db", "upgrade")
    assert result.exit_code == 0, result.output
    assert "Nothing to apply" in result.output


def test_init_twice_is_refused(url):
    assert run(url, "db", "init").exit_code == 0
    result = run(url, "db", "init")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ") and "already has an Ostinato schema" in lines[0]


@pytest.mark.parametrize("args", [["task", "list"], ["task-type", "list"], ["task-run", "list"], ["task", "add", "load-git", "x"]])
def test_command_on_uninitialised_database_exits_3(url, args):
    result = run(empty_database(url), *args)
    assert result.exit_code == 3, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "run `ostinato db init`" in lines[0]
