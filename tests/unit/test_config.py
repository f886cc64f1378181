"""Settings.load: TOML file, environment overrides, errors that name the key."""

from __future__ import annotations

import re
from dataclasses import fields
from datetime import timedelta
from pathlib import Path

import pytest

from ostinato.config import DEFAULT_DB, OTHER_VARIABLES, Settings
from ostinato.domain.errors import ValidationError


@pytest.fixture(autouse=True)
def no_local_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def write(tmp_path, text):
    path = tmp_path / "ostinato.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file_or_environment():
    settings = Settings.load(environ={})
    assert settings.db == DEFAULT_DB
    assert settings.poll_interval == timedelta(seconds=1)
    assert settings.imports == ()


def test_load_from_toml_table(tmp_path):
    path = write(tmp_path, """
[ostinato]
db = "sqlite:///x.db"
workers = 8
poll_interval = "5s"
lost_run_timeout = "2h"
imports = ["myproject.tasks", "other.tasks"]
""")
    settings = Settings.load(path, environ={})
    assert settings.db == "sqlite:///x.db"
    assert settings.workers == 8
    assert settings.poll_interval == timedelta(seconds=5)
    assert settings.lost_run_timeout == timedelta(hours=2)
    assert settings.imports == ("myproject.tasks", "other.tasks")


def test_load_from_top_level_keys(tmp_path):
    path = write(tmp_path, 'batch_size = 50\nlost_run_timeout = "600s"\n')
    settings = Settings.load(path, environ={})
    assert settings.batch_size == 50
    assert settings.lost_run_timeout == timedelta(minutes=10)


def test_local_file_and_config_variable_are_found(tmp_path):
    write(tmp_path, "workers = 3\n")
    assert Settings.load(environ={}).workers == 3
    other = tmp_path / "other.toml"
    other.write_text("workers = 5\n", encoding="utf-8")
    assert Settings.load(environ={"OSTINATO_CONFIG": str(other)}).workers == 5


def test_environment_overrides_file(tmp_path):
    path = write(tmp_path, '[ostinato]\nworkers = 2\ndb = "sqlite:///file.db"\npoll_interval = "10s"\n')
    settings = Settings.load(path, environ={"OSTINATO_WORKERS": "6", "OSTINATO_POLL_INTERVAL": "250ms", "OSTINATO_IMPORTS": "a.b, c.d"})
    assert settings.workers == 6
    assert settings.poll_interval == timedelta(milliseconds=250)
    assert settings.imports == ("a.b", "c.d")
    assert settings.db == "sqlite:///file.db"


def test_unknown_key_is_named(tmp_path):
    path = write(tmp_path, '[ostinato]\ncolour = "red"\n')
    with pytest.raises(ValidationError) as info:
        Settings.load(path, environ={})
    assert info.value.field == "colour"
    assert str(info.value).startswith("colour: expected one of the settings")


@pytest.mark.parametrize("typed, meant", [("absolute_coldown", "absolute_cooldown"), ("POLL_INTERVAL", "poll_interval"),
                                          ("executer", "executor")])
def test_a_mistyped_key_gets_did_you_mean(tmp_path, typed, meant):
    path = write(tmp_path, f'[ostinato]\n{typed} = "1h"\n')
    with pytest.raises(ValidationError) as info:
        Settings.load(path, environ={})
    assert info.value.field == typed
    assert str(info.value).startswith(f"{typed}: expected a setting of Ostinato (did you mean {meant}")
    assert "poll_interval, " not in str(info.value)  # one suggestion, not the whole list


@pytest.mark.parametrize("key", ["poll_interval", "lost_run_timeout"])
def test_bad_duration_names_the_key(tmp_path, key):
    path = write(tmp_path, f'[ostinato]\n{key} = "5 parsecs"\n')
    with pytest.raises(ValidationError) as info:
        Settings.load(path, environ={})
    assert info.value.field == key
    assert str(info.value).startswith(f"{key}: expected a duration")


def test_bad_duration_from_environment_names_the_key():
    with pytest.raises(ValidationError) as info:
        Settings.load(environ={"OSTINATO_POLL_INTERVAL": "-1s"})
    assert info.value.field == "poll_interval"
    assert "positive duration" in str(info.value)


def test_bad_number_names_the_key(tmp_path):
    path = write(tmp_path, "workers = 0\n")
    with pytest.raises(ValidationError) as info:
        Settings.load(path, environ={})
    assert info.value.field == "workers"


@pytest.mark.parametrize("text, key", [
    ("workers = 1000000000000000000000000000000\n", "workers"),
    ("batch_size = 2000000\n", "batch_size"),
    ("max_failures = 5000\n", "max_failures"),
    ("imports = [1, 2]\n", "imports"),
    ("visit_types = ['git', '']\n", "visit_types"),
])
def test_absurd_whole_numbers_and_non_text_lists_are_refused_by_name(tmp_path, text, key):
    with pytest.raises(ValidationError) as info:
        Settings.load(write(tmp_path, text), environ={})
    assert info.value.field == key
    assert Settings.load(write(tmp_path, "workers = 1024\nvisit_types = [' git ']\n"), environ={}).visit_types == ("git",)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ValidationError) as info:
        Settings.load(tmp_path / "absent.toml", environ={})
    assert info.value.field == "config"
    path = write(tmp_path, "workers = = 2\n")
    with pytest.raises(ValidationError) as info:
        Settings.load(path, environ={})
    assert info.value.field == "config" and "valid TOML" in str(info.value)


def test_open_store_reads_every_url_form(tmp_path):
    from ostinato.store import sqlite_path

    assert sqlite_path("sqlite:///:memory:") == ":memory:"
    assert sqlite_path("sqlite:///rel/o.db") == "rel/o.db"
    assert sqlite_path("sqlite:////abs/o.db") == "/abs/o.db"
    assert sqlite_path(str(tmp_path / "plain.db")) == str(tmp_path / "plain.db")
    assert sqlite_path("postgresql://u@h/db") is None
    assert sqlite_path("host=127.0.0.1 port=5432 dbname=x") is None


def test_services_and_workers_open_the_api_when_a_url_is_set(tmp_path):
    from ostinato.cli.app import open_settings_store
    from ostinato.remote import RemoteStore
    from ostinato.store.sqlite import SQLiteStore

    remote = open_settings_store(Settings(url="http://127.0.0.1:9", token="secret", db=f"sqlite:///{tmp_path}/x.db"))
    try:
        assert isinstance(remote, RemoteStore)
    finally:
        remote.close()
    open_settings_store(Settings(db=f"sqlite:///{tmp_path}/x.db"), create=True).close()  # the others never create it
    local = open_settings_store(Settings(db=f"sqlite:///{tmp_path}/x.db"))
    try:
        assert isinstance(local, SQLiteStore)
    finally:
        local.close()


def test_a_mistyped_environment_variable_is_warned_about_with_the_closest_names(caplog):
    """An OSTINATO_ variable that no setting reads would otherwise be ignored without a word."""
    settings = Settings.load(environ={"OSTINATO_WORKRES": "3", "OSTINATO_POLL_INTERVAL": "2s"})
    assert settings.workers == Settings().workers and settings.poll_interval == timedelta(seconds=2)
    [warning] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert warning.getMessage() == ("OSTINATO_WORKRES: not a setting of Ostinato, ignored "
                                    "(did you mean OSTINATO_WORKERS?)")


def test_an_unknown_environment_variable_like_no_setting_is_warned_about_without_guess(caplog):
    Settings.load(environ={"OSTINATO_ZZZ": "1"})
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning.startswith("OSTINATO_ZZZ: not a setting of Ostinato, ignored") and "did you mean" not in warning


def test_the_variables_read_besides_the_settings_are_not_warned_about(caplog):
    Settings.load(environ={name: "1" for name in OTHER_VARIABLES if name != "OSTINATO_CONFIG"})
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


def test_every_ostinato_variable_the_project_names_is_known():
    """The code, tests, benchmarks, deployment files and docs name no OSTINATO_ variable that the
    settings would warn about: a new one is a setting, or is added to OTHER_VARIABLES."""
    root = Path(__file__).resolve().parents[2]
    known = set(OTHER_VARIABLES) | {f"OSTINATO_{f.name.upper()}" for f in fields(Settings)}
    named: dict[str, str] = {}
    for folder in ("src", "tests", "test_servers", "bench", "scripts", "deploy", "docs", "Makefile", "README.md"):
        paths = [root / folder] if (root / folder).is_file() else sorted((root / folder).rglob("*"))
        for path in paths:
            if path.is_file() and path.suffix in ("", ".py", ".md", ".env", ".service", ".toml", ".sh", ".cfg", ".ini"):
                for name in re.findall(r"\bOSTINATO_[A-Z][A-Z0-9_]*", path.read_text(encoding="utf-8", errors="replace")):
                    named.setdefault(name, str(path.relative_to(root)))
    unknown = {name: where for name, where in named.items() if name not in known and name not in EXAMPLES_OF_TYPOS}
    assert unknown == {}


#: misspelt on purpose in the tests above
EXAMPLES_OF_TYPOS = {"OSTINATO_WORKRES", "OSTINATO_ZZZ"}


def test_trusted_proxies_are_addresses_or_networks(tmp_path):
    assert Settings().trusted_proxies == ()
    loaded = Settings.load(environ={"OSTINATO_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1,::1"})
    assert loaded.trusted_proxies == ("10.0.0.0/8", "127.0.0.1/32", "::1/128")
    (tmp_path / "o.toml").write_text('trusted_proxies = ["192.168.1.7/24"]\n')
    assert Settings.load(tmp_path / "o.toml", environ={}).trusted_proxies == ("192.168.1.0/24",)
    for bad in ("proxy.example", "10.0.0.0/33", "10.0.0.1, nope"):
        with pytest.raises(ValidationError) as caught:
            Settings.load(environ={"OSTINATO_TRUSTED_PROXIES": bad})
        assert caught.value.field == "trusted_proxies"


def test_lookahead_settings_make_the_pick_rule_and_bad_ones_name_the_setting():
    assert Settings.load(environ={}).schedule_pick_rule() is None  # off: the greedy pick
    rule = Settings.load(environ={"OSTINATO_SCHEDULE_LOOKAHEAD": "true", "OSTINATO_SCHEDULE_LOOKAHEAD_K": "8",
                                  "OSTINATO_SCHEDULE_LOOKAHEAD_HORIZON": "2h"}).schedule_pick_rule()
    assert rule is not None and rule.lookahead is not None
    assert (rule.lookahead.k, rule.lookahead.horizon) == (8, timedelta(hours=2))
    for variable, value in [("OSTINATO_SCHEDULE_LOOKAHEAD_K", "0"), ("OSTINATO_SCHEDULE_LOOKAHEAD_K", "1001"),
                            ("OSTINATO_SCHEDULE_LOOKAHEAD_HORIZON", "0s")]:
        with pytest.raises(ValidationError, match=variable.removeprefix("OSTINATO_").lower()):
            Settings.load(environ={"OSTINATO_SCHEDULE_LOOKAHEAD": "true", variable: value}).schedule_pick_rule()
