"""Opening a store: a SQLite file is created only when asked, a file that is not a database and an
unreachable PostgreSQL are :class:`StoreUnavailable` errors naming them, and a URL is shown
without its password."""

from __future__ import annotations

import pytest

from ostinato.domain.errors import NoDatabase, SchemaError, StoreUnavailable
from ostinato.store import open_store
from ostinato.store.postgresql.connect import CONNECT_TIMEOUT, connect_options, redacted
from test_servers.postgres import free_port


def test_without_create_a_missing_file_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(NoDatabase, match=f"no database at {tmp_path}/a/b.db") as caught:
        open_store(f"sqlite:///{tmp_path}/a/b.db", create=False)
    assert isinstance(caught.value, SchemaError)  # its remedy is `ostinato db init`, like a missing schema
    assert list(tmp_path.iterdir()) == []


def test_without_create_an_existing_database_opens_and_writes(tmp_path):
    with open_store(f"sqlite:///{tmp_path}/x.db") as created:
        created.init_schema()
    with open_store(f"sqlite:///{tmp_path}/x.db", create=False) as store:
        store.check_schema()
        assert store.list_task_types() == []


def test_create_makes_the_file_and_its_folders(tmp_path):
    with open_store(f"sqlite:///{tmp_path}/a/b.db", create=True) as store:
        assert store.schema_state().current is None
    assert (tmp_path / "a" / "b.db").is_file()


def test_a_path_with_uri_characters_is_a_plain_path(tmp_path):
    odd = tmp_path / "a?mode=ro#x %20.db"
    with open_store(str(odd)) as store:
        store.init_schema()
    with open_store(str(odd), create=False) as store:
        store.check_schema()
    assert [p.name for p in tmp_path.iterdir()] == [odd.name]


@pytest.mark.parametrize("create", [True, False])
def test_a_text_file_or_a_folder_is_not_a_database(tmp_path, create):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    with pytest.raises(StoreUnavailable, match=f"{notes} is not a SQLite database: expected a SQLite database file"):
        open_store(str(notes), create=create)
    with pytest.raises(StoreUnavailable, match=f"{tmp_path} is a directory: expected a SQLite database file"):
        open_store(str(tmp_path), create=create)
    assert notes.read_text() == "hello\n" and [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_an_unreachable_postgresql_is_refused_at_once_by_name():
    url = f"postgresql://me:pw-secret@127.0.0.1:{free_port()}/db"
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url)
    message = str(caught.value)
    assert message.startswith(f"cannot connect to the database postgresql://me:***@127.0.0.1:{url.split(':')[3]}")
    assert "pw-secret" not in message and "\n" not in message


@pytest.mark.parametrize(("dsn", "environment", "options"), [
    ("postgresql://h/db", None, {"connect_timeout": CONNECT_TIMEOUT}),
    ("postgresql://h/db?connect_timeout=9", None, {}),
    ("host=h connect_timeout=9", "30", {}),
    ("postgresql://h/db", "30", {}),  # libpq reads PGCONNECT_TIMEOUT itself
    ("postgresql://h/db", " ", {"connect_timeout": CONNECT_TIMEOUT}),
])
def test_the_connect_timeout_is_the_urls_or_libpqs_environment_or_ours(monkeypatch, dsn, environment, options):
    if environment is None:
        monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("PGCONNECT_TIMEOUT", environment)
    assert connect_options(dsn) == options


@pytest.mark.parametrize(("dsn", "shown"), [
    ("postgresql://u:p%40ss@h:5432/db", "postgresql://u:***@h:5432/db"),
    ("postgresql://u@h/db", "postgresql://u@h/db"),
    ("postgres://h/db?password=x&sslmode=require", "postgres://h/db?password=***&sslmode=require"),
    ("host=h password='a b' dbname=d", "host=h password=*** dbname=d"),
    ("host=h password=xyz dbname=d", "host=h password=*** dbname=d"),
    ("host=h dbname=d", "host=h dbname=d"),
])
def test_urls_are_shown_without_their_password(dsn, shown):
    assert redacted(dsn) == shown
