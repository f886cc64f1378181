"""End-to-end tests of how commands open the database named by ``--db``: a missing SQLite file is
never created by a command that only reads (nor by one that needs a schema it would not make), and
a database that cannot be opened (a text file, a directory, a PostgreSQL server that refuses) is
one ``error:`` line naming it, without a traceback, whatever the command (the services included)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from cli_helpers import ok, run

from test_servers.postgres import free_port

READ_COMMANDS = [["task", "list"], ["task-type", "list"], ["schedule", "list"], ["origin", "show", "https://x"],
                 ["db", "version"], ["lister", "list"], ["metrics", "show"], ["token", "list"]]
WRITE_COMMANDS = [["task-type", "add", "load-git", "ostinato.examples:load_directory", "Load git", "--default-interval", "1d"],
                  ["schedule", "add", "nightly", "load-git", "--every", "1d"]]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("OSTINATO_DB", "OSTINATO_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def one_error_line(result) -> str:
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def files_under(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("args", READ_COMMANDS + WRITE_COMMANDS, ids=lambda a: " ".join(a))
def test_a_missing_file_is_named_and_not_created(folder, args):
    url = f"sqlite:///{folder}/typo/sub/ostinato.db"
    line = one_error_line(run(url, *args))
    assert f"no database at {folder}/typo/sub/ostinato.db" in line and "ostinato db init" in line
    assert files_under(folder) == []


def test_a_relative_path_typo_writes_nothing_in_the_current_folder(folder):
    result = run("sqlite:///ostinatoo.db", "task", "list")
    assert result.exit_code == 3  # like a database without a schema: `ostinato db init` is the remedy
    assert f"{folder}/ostinatoo.db" in one_error_line(result)
    assert files_under(folder) == []


def test_the_default_database_is_not_created_by_a_listing(folder):
    from click.testing import CliRunner

    from ostinato.cli import cli

    line = one_error_line(CliRunner().invoke(cli, ["task", "list"]))
    assert f"{folder}/ostinato.db" in line
    assert files_under(folder) == []


@pytest.mark.parametrize("args", [["db", "init"], ["db", "upgrade"]], ids=lambda a: " ".join(a))
def test_the_schema_commands_create_the_file(folder, args):
    url = f"sqlite:///{folder}/new/ostinato.db"
    ok(url, *args)
    assert (folder / "new" / "ostinato.db").is_file()
    assert ok(url, "task", "list").exit_code == 0


def test_run_creates_its_file(folder):
    url = f"sqlite:///{folder}/run/ostinato.db"
    ok(url, "run", "--once")
    assert ok(url, "db", "version", "--json").stdout.count('"up_to_date": true') == 1


@pytest.mark.parametrize("args", [["task", "list"], ["db", "init"]], ids=lambda a: " ".join(a))
def test_a_text_file_is_not_a_database(folder, args):
    notes = folder / "notes.txt"
    notes.write_text("shopping: milk, eggs\n")
    line = one_error_line(run(str(notes), *args))
    assert f"{notes} is not a SQLite database" in line and "expected a SQLite database file" in line
    assert notes.read_text() == "shopping: milk, eggs\n"
    assert files_under(folder) == ["notes.txt"]


@pytest.mark.parametrize("args", [["task", "list"], ["db", "init"]], ids=lambda a: " ".join(a))
def test_a_directory_is_not_a_database(folder, args):
    (folder / "data").mkdir()
    line = one_error_line(run(f"sqlite:///{folder}/data", *args))
    assert f"{folder}/data is a directory" in line and "expected a SQLite database file" in line
    assert files_under(folder) == ["data"]


def closed_postgresql_url() -> str:
    port = free_port()
    with socket.socket() as probe:  # nothing listens there
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    return f"postgresql://ostinato:s3cret-word@127.0.0.1:{port}/ostinato"


@pytest.mark.parametrize("args", [["task", "list"], ["db", "init"], ["schedule", "condition"]], ids=lambda a: " ".join(a))
def test_an_unreachable_postgresql_is_one_line_naming_the_url(folder, args):
    url = closed_postgresql_url()
    line = one_error_line(run(url, *args))
    assert "cannot connect to the database " + url.replace("s3cret-word", "***") in line
    assert "Connection refused" in line
    assert "s3cret-word" not in line
    assert files_under(folder) == []


def test_a_database_the_server_does_not_have_is_one_line(folder, pg_server):
    url = pg_server.dsn("ostinato_no_such_database")
    line = one_error_line(run(url, "task", "list"))
    assert "ostinato_no_such_database" in line and "does not exist" in line


SERVICES = [(command, db) for command in ("run", "api serve", "runner") for db in ("postgresql", "text file", "missing file")
            if (command, db) != ("run", "missing file")]  # `run` owns its file: test_run_creates_its_file


@pytest.mark.parametrize(("command", "db"), SERVICES, ids=lambda v: v)
def test_the_services_refuse_at_start_up_in_one_line(folder, command, db):
    if db == "postgresql":
        url = closed_postgresql_url()
        named = url.replace("s3cret-word", "***")
    elif db == "text file":
        (folder / "notes.txt").write_text("not a database\n")
        url = named = str(folder / "notes.txt")
    else:
        url = named = str(folder / "missing.db")
    command = {"run": ["run", "--once"], "runner": ["runner", "--once"],
               "api serve": ["api", "serve", "--port", str(free_port())]}[command]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    before = files_under(folder)
    done = subprocess.run([sys.executable, "-m", "ostinato", "--db", url, *command], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)  # a safety net, not a measure
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0], done.stderr
    assert "s3cret-word" not in done.stderr
    assert files_under(folder) == before
