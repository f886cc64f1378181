"""Fuzzing schedules, by every path they come in: ``schedule_from_dict`` (``ostinato schedule
import`` lines and HTTP bodies), the store's own ``create_schedule``, and ``ostinato schedule
import`` on a JSON-lines file.

Each property: the input is accepted, or refused with a ValidationError naming the field
that was spoiled (or the field a rule ties it to); nothing else escapes; a refused file or
schedule leaves every table as it was.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from fuzz_helpers import dump, fuzz_settings, garbage_lines, json_line, mutated, rejected_or_accepted, store_url
from hypothesis import given
from hypothesis import strategies as st

from ostinato.cli import cli
from ostinato.domain.errors import ValidationError
from ostinato.domain.schedule_records import schedule_from_dict
from ostinato.domain.schedules import Schedule, ScheduleTiming, assess
from ostinato.domain.tasks import TaskArguments, TaskType

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
PERIODIC = {"name": "nightly-report", "kind": "periodic", "task_type": "report", "created_at": "2026-01-01T00:00:00Z",
            "scheduling_period": 86400, "cooldown_duration": 3600, "tz": "Europe/Paris", "mode": "run",
            "arguments": {"args": [1, "a"], "kwargs": {"depth": 2}}, "enabled": True,
            "blackout_periods": [{"start": "01:00", "end": "02:00"}], "dont_run_on_nodes": ["db1"],
            "max_expected_duration": 600, "max_allowed_duration": 1200, "failure_count": 1,
            "last_good_start_at": "2026-03-01T00:00:00Z", "last_end_at": "2026-03-02T00:00:00+01:00",
            "average_good_duration": 300}
CALENDAR = {**{k: v for k, v in PERIODIC.items() if k not in ("scheduling_period", "cooldown_duration")},
            "kind": "calendar", "cron_schedule": "Mon..Fri *-*-* 02:00", "cron_max_schedule_duration": "4h"}
#: a change to the key may be refused under one of these names: rules across fields
RELATED = {
    "kind": {"scheduling_period", "cron_schedule", "cron_max_schedule_duration", "cooldown_duration"},
    "scheduling_period": {"cooldown_duration"},
    "cooldown_duration": {"scheduling_period"},
    "max_allowed_duration": {"max_expected_duration"},
    "tz": {"cron_schedule"},
    "owner_tag": {"owner_started_at"},  # a running schedule has the start of its run
}


def usable(schedule: Schedule) -> None:
    """An accepted schedule's condition and start times compute without error."""
    assess(schedule, T0, ScheduleTiming())


# -- the parser --------------------------------------------------------------------
@fuzz_settings(250)
@given(st.data(), st.sampled_from([PERIODIC, CALENDAR]))
def test_schedule_from_dict_accepts_or_names_the_spoiled_field(data, valid):
    record, touched = mutated(valid, data, sorted(valid) + ["owner_node", "owner_tag", "steal_start_at", "cron_schedule"])
    result = rejected_or_accepted(lambda: schedule_from_dict(record), touched, RELATED)
    if isinstance(result, Schedule):
        usable(result)


# -- the store's own door ------------------------------------------------------------------
BASE = schedule_from_dict(PERIODIC)
BAD_SCHEDULE_FIELDS = {
    "task_type": st.sampled_from(["", "a\x00", "\ud800", 5]),
    "tz": st.sampled_from(["Europe", "Nope/Nope", "a" * 300, "../../etc/passwd", "\x00"]),
    "scheduling_period": st.sampled_from([timedelta(0), timedelta(days=-1), timedelta(days=999_999), 5]),
    "created_at": st.sampled_from([datetime(9999, 12, 31, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC),
                                   datetime(2026, 1, 1), "2026-01-01"]),
    "last_good_start_at": st.sampled_from([datetime(9999, 1, 1, tzinfo=UTC), datetime(2026, 1, 1)]),
    "average_good_duration": st.sampled_from([timedelta(days=10**6), timedelta(seconds=-1)]),
    "arguments": st.sampled_from([TaskArguments((float("nan"),)), TaskArguments(("\x00",)), TaskArguments((), {"a": "\ud800"}),
                                  {"args": []}]),
    "dont_run_on_nodes": st.sampled_from([("a\x00",), ("",), (5,)]),
    "owner_node": st.sampled_from([5, "n\x00"]),
    "failure_count": st.sampled_from([-1, 2**63, True]),
    "name": st.sampled_from(["", "a\n", "-x", "a" * 201, "é"]),
}


@pytest.mark.postgresql
@fuzz_settings(15)
@given(data=st.data())
def test_a_bad_schedule_changes_nothing(store, data):
    name = data.draw(st.sampled_from(sorted(BAD_SCHEDULE_FIELDS)))
    bad = replace(BASE, **{"name": f"s{data.draw(st.integers(0, 10**9))}", name: data.draw(BAD_SCHEDULE_FIELDS[name])})
    before = dump(store)
    with pytest.raises(ValidationError) as caught:
        store.create_schedule(bad, T0)
    assert caught.value.field.split("[")[0].split(".")[0] in {name, *RELATED.get(name, ())}, caught.value
    assert dump(store) == before


# -- ostinato schedule import ------------------------------------------------------------
@pytest.fixture
def job_store(store, tmp_path, monkeypatch):
    """The store with the task type of the schedules' job, and a working folder without settings."""
    monkeypatch.chdir(tmp_path)
    for name in ("OSTINATO_DB", "OSTINATO_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    store.create_task_type(TaskType("report", "Report", "ostinato.examples:load_directory"))
    return store


@pytest.mark.postgresql
@fuzz_settings(15)
@given(data=st.data())
def test_a_file_with_one_bad_line_is_refused_whole(job_store, data):
    names = data.draw(st.lists(st.integers(0, 10**9), max_size=4, unique=True))
    lines = [json_line({**data.draw(st.sampled_from([PERIODIC, CALENDAR])), "name": f"s{n}"}) for n in names]
    how = data.draw(st.sampled_from(["garbage", "field", "field", "repeated name"]))
    if how == "garbage":
        bad, touched = data.draw(garbage_lines()), "record"
    elif how == "repeated name":
        bad, touched = json_line({**PERIODIC, "name": f"s{names[0]}" if names else "nightly-report"}), "name"
        lines.append(bad if names else json_line(PERIODIC))
    else:
        record, touched = mutated(data.draw(st.sampled_from([PERIODIC, CALENDAR])), data, sorted(PERIODIC))
        record.setdefault("name", f"s{data.draw(st.integers(0, 10**9))}") if touched != "name" else None
        bad = json_line(record)
    lines.insert(data.draw(st.integers(0, len(lines))), bad)
    before = dump(job_store)
    result = CliRunner().invoke(cli, ["--db", store_url(job_store), "schedule", "import", "-"],
                                input=b"\n".join(lines) + b"\n")
    assert result.exit_code in (0, 2), (result.output, result.exception)
    if result.exit_code == 2:
        message = result.stderr.strip()
        field = message.split(": ")[2] if message.startswith(("error: line ", "error: schedule ")) else message.split(": ")[1]
        field = field.split("[")[0].split(".")[0]
        # garbage that parses as JSON is refused by whichever field it gets wrong (or lacks)
        assert field and (touched == "record" or field in {touched, "record", "name", *RELATED.get(touched, ())}), message
        assert dump(job_store) == before
