"""One example per defect the fuzz run (tests/fuzz) found in reading input: each used to crash
with an error that named no field (OverflowError, OSError, TypeError, RecursionError, a
database error), hang, or write part of a refused batch."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from click.testing import CliRunner

from ostinato.cli import cli
from ostinato.config import Settings
from ostinato.domain.calendars import CalendarRule, parse_zone
from ostinato.domain.durations import parse_duration, parse_iso_time, parse_time
from ostinato.domain.errors import ValidationError
from ostinato.domain.limits import MAX_DURATION
from ostinato.domain.origins import ListedOrigin, parse_listed_origin
from ostinato.domain.schedule_records import schedule_from_dict
from ostinato.domain.tasks import NewTask, TaskArguments, TaskType
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus, parse_visit_status
from ostinato.integrations.celery.app import Outcome

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
STATUS = {"origin": "https://e.org/r.git", "visit": 3, "type": "git", "status": "full", "date": "2026-03-04T05:06:07Z",
          "snapshot": "ab" * 20}
ORIGIN = {"url": "https://e.org/r.git", "visit_type": "git"}
SCHEDULE = {"name": "report", "kind": "periodic", "task_type": "report", "created_at": "2026-01-01T00:00:00Z",
            "scheduling_period": 86400}
RUN = {"id": 7, "status": "eventful", "at": "2026-03-04T05:06:07Z"}


def field_of(call) -> str:
    with pytest.raises(ValidationError) as caught:
        call()
    return caught.value.field


def rows(store) -> dict[str, list[str]]:
    """Every row of every table of ``store``, sorted: equal dumps, equal contents."""
    if hasattr(store, "path"):
        with sqlite3.connect(store.path) as conn:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {t: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}
    with psycopg.connect(store.dsn) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        return {t: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}


# -- visit statuses: the journal's guards now hold at every entry point ------------------------
@pytest.mark.parametrize("change, field", [
    ({"date": "0001-01-01T00:00:00+01:00"}, "date"),  # OverflowError
    ({"date": "9999-12-31T23:59:59-01:00"}, "date"),  # OverflowError
    ({"date": "9999-12-31T00:00:00Z"}, "date"),  # accepted, then the next target overflowed in the store
    ({"date": "1969-12-31T23:59:59Z"}, "date"),
    ({"origin": "https://e.org/\x00"}, "origin"),  # accepted, then refused by PostgreSQL
    ({"origin": "https://e.org/" + "a" * 65_536}, "origin"),
    ({"type": "g" * 101}, "type"),
    ({"visit": 2**63}, "visit"),
    ({"changes": 2**63}, "changes"),
    ({"status": []}, "status"),
])
def test_visit_status_limits_hold_in_the_parser(change, field):
    assert field_of(lambda: parse_visit_status({**STATUS, **change})) == field


def test_outcome_messages_refuse_what_no_store_holds():
    assert field_of(lambda: Outcome.from_message({"run": {**RUN, "id": 2**63}})) == "run.id"
    assert field_of(lambda: Outcome.from_message({"run": {**RUN, "metadata": {"a": "\x00"}}})) == "run.metadata"
    assert field_of(lambda: Outcome.from_message({"run": {**RUN, "at": "0001-01-01T00:00:00+01:00"}})) == "run.at"
    assert field_of(lambda: Outcome.from_message({"visit_status": {**STATUS, "origin": "a\x00"}})) == "visit_status.origin"


@pytest.mark.postgresql
def test_the_store_checks_statuses_made_in_code(store):
    bad = VisitStatus("https://e.org/\x00", 1, "git", JournalStatus.FULL, T0, b"\x01" * 20)
    before = rows(store)
    with pytest.raises(ValidationError) as caught:
        store.record_visit_statuses([bad], FeedbackPolicy(), now=T0)
    assert (caught.value.field, caught.value.record) == ("origin", "status 0")
    assert rows(store) == before


@pytest.mark.postgresql
def test_a_bad_status_after_the_first_chunk_writes_nothing(store):
    """The stores write 10,000 statuses per statement: the last one, bad, refuses them all."""
    good = [VisitStatus(f"https://e.org/{i}", 1, "git", JournalStatus.FULL, T0, b"\x01" * 20) for i in range(10_000)]
    bad = VisitStatus("https://e.org/late", 1, "git", JournalStatus.FULL, datetime(9999, 1, 1, tzinfo=UTC), None)
    before = rows(store)
    with pytest.raises(ValidationError) as caught:
        store.record_visit_statuses([*good, bad], FeedbackPolicy(), now=T0)
    assert (caught.value.field, caught.value.record) == ("date", "status 10000")
    assert rows(store) == before


# -- listed origins -------------------------------------------------------------------
@pytest.mark.parametrize("change, field", [
    ({"url": "https://e.org/\x00"}, "url"),
    ({"url": "https://e.org/" + "a" * 65_536}, "url"),
    ({"visit_type": "g" * 101}, "visit_type"),
    ({"forked_from_url": "a\x00"}, "forked_from_url"),
    ({"extra_loader_arguments": {"branch": "\x00"}}, "extra_loader_arguments"),  # jsonb refuses \u0000
    ({"extra_loader_arguments": {"a": float("nan")}}, "extra_loader_arguments"),  # orjson wrote it as null
    ({"last_update": "0001-01-01T00:00:00+01:00"}, "last_update"),  # OverflowError
])
def test_listed_origin_limits_hold_in_the_parser(change, field):
    assert field_of(lambda: parse_listed_origin({**ORIGIN, **change})) == field


@pytest.mark.postgresql
def test_the_store_checks_origins_made_in_code(store):
    lister = store.get_or_create_lister("l", "l", T0)
    before = rows(store)
    batch = [ListedOrigin("https://e.org/ok", "git"), ListedOrigin("https://e.org/bad", "git", {"a": "\x00"})]
    with pytest.raises(ValidationError) as caught:
        store.record_listed_origins(lister.id, batch, T0)
    assert (caught.value.field, caught.value.record) == ("extra_loader_arguments", "origin 1")
    assert rows(store) == before


def _cli_store(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("OSTINATO_DB", "OSTINATO_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    store.create_task_type(TaskType("load-git", "Load git", "ostinato.examples:load_directory"))
    return f"sqlite:///{store.path}" if hasattr(store, "path") else store.dsn


@pytest.mark.postgresql
def test_command_line_imports_apply_the_same_limits(store, tmp_path, monkeypatch):
    url = _cli_store(store, tmp_path, monkeypatch)
    before = rows(store)
    statuses = b"\n".join(json.dumps(s).encode() for s in (STATUS, {**STATUS, "origin": "https://e.org/" + "a" * 70_000}))
    result = CliRunner().invoke(cli, ["--db", url, "visit-status", "record", "-"], input=statuses)
    assert (result.exit_code, result.stderr.split(": ")[:3]) == (2, ["error", "line 2", "origin"])
    origins = b"\n".join(json.dumps(o).encode() for o in (ORIGIN, {**ORIGIN, "url": "https://e.org/\u0000"}))
    result = CliRunner().invoke(cli, ["--db", url, "origin", "record", "-", "--lister", "l/l"], input=origins)
    assert (result.exit_code, result.stderr.split(": ")[:3]) == (2, ["error", "line 2", "url"])
    assert rows(store) == before


# -- schedules ----------------------------------------------------------------------------
@pytest.mark.parametrize("change, field", [
    ({"scheduling_period": 1e300}, "scheduling_period"),  # OverflowError
    ({"scheduling_period": float("nan")}, "scheduling_period"),  # ValueError
    ({"average_good_duration": 10**15}, "average_good_duration"),  # OverflowError
    ({"created_at": 5}, "created_at"),  # AttributeError
    ({"created_at": "0001-01-01T00:00:00+01:00"}, "created_at"),  # OverflowError
    ({"created_at": "9999-12-31T00:00:00Z"}, "created_at"),  # accepted; start times overflowed
    ({"tz": "a" * 300}, "tz"),  # OSError: file name too long
    ({"tz": "Europe"}, "tz"),  # IsADirectoryError
    ({"arguments": {"args": [float("nan")]}}, "arguments.args"),  # accepted
    ({"arguments": {"args": [], "x": 1}}, "arguments"),  # the unknown key was dropped silently
    ({"task_type": "report\x00"}, "task_type"),  # refused by PostgreSQL
    ({"owner_node": 5}, "owner_node"),
    ({"name": "report\n"}, "name"),  # the name pattern's $ let a final newline through
])
def test_schedule_import_names_the_field(change, field):
    assert field_of(lambda: schedule_from_dict({**SCHEDULE, **change})) == field


@pytest.mark.postgresql
def test_a_schedule_file_naming_one_schedule_twice_imports_nothing(store, tmp_path, monkeypatch):
    """Each schedule is its own write: the second of a repeated name failed after the first was in."""
    url = _cli_store(store, tmp_path, monkeypatch)
    store.create_task_type(TaskType("report", "Report", "ostinato.examples:load_directory"))
    before = rows(store)
    lines = b"\n".join(json.dumps(s).encode() for s in (SCHEDULE, {**SCHEDULE, "scheduling_period": 60}))
    result = CliRunner().invoke(cli, ["--db", url, "schedule", "import", "-"], input=lines)
    assert (result.exit_code, result.stderr.split(": ")[:3]) == (2, ["error", "schedule 2", "name"])
    assert rows(store) == before


# -- calendar text, zones, durations, times ---------------------------------------------------
@pytest.mark.parametrize("text", [
    "FREQ=DAILY;INTERVAL=0",  # dateutil looped forever
    "FREQ=SECONDLY;BYSECOND=61",  # TypeError
    "FREQ=DAILY;BYMONTHDAY=-32",  # no such day: dateutil walked to the year 9999 (12 s)
    "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30",  # the same (18 s)
    "*-*-* 00:00\x00",
    "DTSTART:00010101T000000\nRRULE:FREQ=SECONDLY;BYYEARDAY=366",  # walked 2,000 years of seconds (minutes)
])
def test_calendar_rules_that_hung_or_crashed_are_refused(text):
    assert field_of(lambda: CalendarRule.parse(text, field="cron_schedule")) == "cron_schedule"


def test_sub_daily_rules_anchored_in_range_find_their_next_firing():
    rule = CalendarRule.parse("DTSTART:19700101T000000\nRRULE:FREQ=SECONDLY;BYYEARDAY=366")
    assert rule.next_fire_time(T0) == datetime(2028, 12, 31, tzinfo=UTC)  # day 366: leap years only


def test_rules_matching_rare_days_still_parse():
    rule = CalendarRule.parse("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO")
    assert rule.next_fire_time(T0) == datetime(2044, 2, 29, tzinfo=UTC)


def test_zone_names_that_are_folders_or_too_long_are_refused():
    assert field_of(lambda: parse_zone("Europe")) == "tz"
    assert field_of(lambda: parse_zone("a" * 300)) == "tz"
    # a last word that is a folder of zones is no zone (IsADirectoryError): the rest reads it, and refuses it
    assert field_of(lambda: CalendarRule.parse("*-*-* 00:00 Europe")) == "calendar"


@pytest.mark.parametrize("value", ["99999999999999999999d", 10**20, float("inf"), float("nan"), "P99999999999W", "1" * 400,
                                   MAX_DURATION + timedelta(seconds=1)])
def test_durations_beyond_any_use_are_refused(value):
    assert field_of(lambda: parse_duration(value, "interval")) == "interval"


def test_times_without_a_utc_form_or_not_text_are_refused():
    assert field_of(lambda: parse_iso_time("0001-01-01T00:00:00+01:00", "at")) == "at"
    assert field_of(lambda: parse_iso_time(5, "at")) == "at"  # AttributeError
    assert field_of(lambda: parse_time("-740000d", T0, "at")) == "at"
    assert field_of(lambda: parse_time("-36525d", datetime(50, 1, 1, tzinfo=UTC), "at")) == "at"


# -- task arguments, task types, settings ----------------------------------------------------
def test_task_arguments_nested_too_deep_or_with_nul_are_refused():
    assert field_of(lambda: TaskArguments.parse("[" * 100_000)) == "arguments"  # RecursionError
    assert field_of(lambda: TaskArguments.parse('{"args": ["\\u0000"]}')) == "arguments.args"  # jsonb refuses it
    assert field_of(lambda: TaskArguments.parse('{"args": ["\\ud800"]}')) == "arguments.args"


@pytest.mark.postgresql
def test_the_store_checks_task_arguments_made_in_code(store):
    store.create_task_type(TaskType("t", "T", "m.f", default_interval=timedelta(days=1)))
    before = rows(store)
    batch = [NewTask("t", T0, TaskArguments(("ok",))), NewTask("t", T0, TaskArguments((), {"k": "\x00"}))]
    with pytest.raises(ValidationError) as caught:
        store.create_tasks(batch)
    assert (caught.value.field, caught.value.record) == ("arguments.kwargs", "task 1")
    assert field_of(lambda: store.create_tasks([replace(batch[0], next_run=datetime(9999, 1, 1, tzinfo=UTC))])) == "next_run"
    assert rows(store) == before


def test_an_infinite_backoff_factor_is_refused_and_intervals_stay_bounded():
    assert field_of(lambda: TaskType("t", "T", "m.f", backoff_factor=float("inf")).validated()) == "backoff_factor"
    assert TaskType("t", "T", "m.f").clamp(timedelta(days=10**6)) == MAX_DURATION


@pytest.mark.postgresql
def test_long_fuzz_run_findings_are_refused_naming_the_field(store, tmp_path, monkeypatch):
    """`make fuzz` (20× the examples) found: a JSON line nested thousands deep crashed the import
    (RecursionError), and a task type name with NUL reached PostgreSQL (DataError)."""
    url = _cli_store(store, tmp_path, monkeypatch)
    before = rows(store)
    deep = b"[" * 100_000 + b"]" * 100_000
    result = CliRunner().invoke(cli, ["--db", url, "origin", "record", "-", "--lister", "l/l"],
                                input=json.dumps(ORIGIN).encode() + b"\n" + deep)
    assert (result.exit_code, result.stderr.split(": ")[:3]) == (2, ["error", "line 2", "record"]), result.output
    task = NewTask("load-git\x00", T0)
    assert field_of(lambda: store.create_tasks([NewTask("load-git", T0), task])) == "type"
    assert rows(store) == before


def test_whole_numbers_beyond_any_float_in_settings_are_refused():
    assert field_of(lambda: Settings().with_values({"adjust_factor": 10**400})) == "adjust_factor"


def test_infinite_numbers_in_settings_are_refused():
    assert field_of(lambda: Settings().with_values({"adjust_factor": "inf"})) == "adjust_factor"
    assert field_of(lambda: Settings().with_values({"revisit_capacity": "inf"})) == "revisit_capacity"
    assert field_of(lambda: Settings().with_values({"poll_interval": "99999999999999d"})) == "poll_interval"
