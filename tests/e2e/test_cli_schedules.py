"""End-to-end tests of ``ostinato schedule …`` and ``ostinato scheduler --once`` on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from cli_helpers import ok, ok_json, run, scrape_database
from click.testing import CliRunner
from test_dashboard_helpers import seed_fire_times

import ostinato
from ostinato.cli import cli
from ostinato.domain.clock import ManualClock
from ostinato.store import open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, fresh_url):
    return scrape_database(request, fresh_url)


def test_add_list_show_condition_pause_resume_delete(url):
    added = ok_json(url, "schedule", "add", "bills", "scrape", "failure_rate=0", "--every", "24h", "--cooldown", "2h",
                    "--tz", "Europe/Paris", "--blackout", "23:00-01:00", "--dont-run-on", "old-box")
    assert added["kind"] == "periodic" and added["scheduling_period"] == 86400 and added["cooldown_duration"] == 7200
    assert added["blackout_periods"] == [{"start": "23:00:00", "end": "01:00:00"}]
    assert added["arguments"] == {"args": [], "kwargs": {"failure_rate": 0}}
    ok(url, "schedule", "add", "nightly", "scrape", "--calendar", "Mon..Fri *-*-* 02:00", "--max-duration", "4h",
       "--mode", "submit")
    assert [s["name"] for s in ok_json(url, "schedule", "list")] == ["bills", "nightly"]
    shown = ok_json(url, "schedule", "show", "nightly")
    assert shown["mode"] == "submit" and shown["condition"] == "OK" and shown["can_start_by"].endswith("02:00:00+00:00")
    # far in the future every schedule is late: worst first, with its reason, exit 1
    result = run(url, "schedule", "condition", "--at", "+30d")
    assert result.exit_code == 1 and "ERROR" in result.output
    rows = ok_json(url, "schedule", "condition", "--at", "+30d")
    assert {r["reason"] for r in rows} == {"stale", "deadline_missed"}
    ok(url, "schedule", "pause", "bills")
    assert ok_json(url, "schedule", "condition", "bills")[0]["reason"] == "paused"
    ok(url, "schedule", "resume", "bills")
    assert ok_json(url, "schedule", "show", "bills")["enabled"] is True
    ok(url, "schedule", "delete", "nightly")
    assert run(url, "schedule", "show", "nightly").exit_code == 1


def test_scheduler_once_runs_what_is_due(url):
    ok(url, "schedule", "add", "bills", "scrape", "failure_rate=0", "--every", "24h")
    out = ok(url, "scheduler", "--once", "--node", "n1").output
    assert "1 schedule run started, 1 ended" in out
    [run_] = ok_json(url, "schedule", "runs", "bills")
    assert run_["status"] == "succeeded" and run_["owner"] == "n1/default"
    assert ok_json(url, "schedule", "show", "bills")["last_good_start_at"] is not None


def test_the_scheduler_imports_the_modules_of_the_imports_setting(url, tmp_path, monkeypatch):
    """A job registered with @task in a module named by ``imports`` runs under ``ostinato scheduler``
    alone, as under ``ostinato run``."""
    (tmp_path / "scheduler_jobs_mod.py").write_text(
        "from ostinato.execution.registry import registry\n\n"
        "@registry.task('scheduler-imports-greet')\n"
        "def greet(stop=None):\n"
        "    return True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("OSTINATO_IMPORTS", "scheduler_jobs_mod")
    ok(url, "task-type", "add", "greet", "scheduler-imports-greet", "Greet", "--no-default-interval")
    ok(url, "schedule", "add", "hello", "greet", "--every", "24h")
    assert "1 schedule run started, 1 ended" in ok(url, "scheduler", "--once", "--node", "n1").output
    assert [r["status"] for r in ok_json(url, "schedule", "runs", "hello")] == ["succeeded"]


def test_a_module_of_the_imports_setting_that_fails_is_named(url, monkeypatch):
    monkeypatch.setenv("OSTINATO_IMPORTS", "no_such_module_of_jobs")
    result = run(url, "scheduler", "--once", "--node", "n1")
    assert result.exit_code == 2
    assert 'imports: expected modules this process can import, got "no_such_module_of_jobs (ModuleNotFoundError' in result.output
    assert ok_json(url, "schedule", "list") == []


def test_export_and_import_keep_the_full_state(url, tmp_path):
    ok(url, "schedule", "add", "bills", "scrape", "failure_rate=0", "--every", "24h", "--max-allowed", "2h")
    ok(url, "scheduler", "--once", "--node", "n1")
    exported = ok(url, "schedule", "export").output
    before = json.loads(exported)
    result = run(url, "schedule", "import", "-", input=exported)
    assert result.exit_code == 2 and "name:" in result.output  # exists: not overwritten without --replace
    ok(url, "schedule", "delete", "bills")
    ok(url, "schedule", "import", "-", input=exported)
    after = json.loads(ok(url, "schedule", "export").output)
    assert after == before and after["last_good_start_at"] is not None


def test_the_stored_start_times_use_the_configured_backoff(url, monkeypatch):
    """The pick reads the stored can_start_by: import, pause and resume store it with the setting
    schedule_retry_backoff, not the default (10 min after one failure here, not 5)."""
    monkeypatch.setenv("OSTINATO_SCHEDULE_RETRY_BACKOFF", "10m,2h,8h")
    failed = {"name": "bills", "kind": "periodic", "task_type": "scrape", "created_at": "2026-01-01T00:00:00+00:00",
              "scheduling_period": 86400, "last_good_start_at": "2026-01-02T00:00:00+00:00",
              "last_good_end_at": "2026-01-02T00:10:00+00:00", "last_end_at": "2026-01-02T12:00:00+00:00",
              "failure_count": 1}
    ok(url, "schedule", "import", "-", input=json.dumps(failed) + "\n")
    with open_store(url) as store:
        assert store.next_can_start_by() == datetime(2026, 1, 2, 12, 10, tzinfo=UTC)
    ok(url, "schedule", "pause", "bills")
    with open_store(url) as store:
        assert store.next_can_start_by() is None
    ok(url, "schedule", "resume", "bills")
    with open_store(url) as store:
        assert store.next_can_start_by() == datetime(2026, 1, 2, 12, 10, tzinfo=UTC)
    assert ok_json(url, "schedule", "show", "bills")["can_start_by"] == "2026-01-02T12:10:00+00:00"


@pytest.mark.parametrize("args, field", [
    (["--every", "1h", "--cooldown", "2h"], "--cooldown"),
    (["--calendar", "61 * * * *", "--max-duration", "1h"], "--calendar"),
    (["--calendar", "daily"], "--max-duration"),
    (["--every", "1h", "--tz", "Mars/Base"], "--tz"),
    (["--every", "1h", "--blackout", "01:00-03:00", "--blackout", "02:00-04:00"], "--blackout[1]"),
    (["--every", "1h", "--blackout", "1am-2am"], "--blackout[0].start"),
    (["--every", "10"], "--every"),
    (["--every", "1h", "--retry-backoff", "5m,soon"], "--retry-backoff[1]"),
    (["--every", "-1h"], "--every"),
    ([], "schedule"),
])
def test_bad_schedules_name_the_field_and_store_nothing(url, args, field):
    result = run(url, "schedule", "add", "bad", "scrape", *args)
    assert result.exit_code == 2 and result.output.startswith(f"error: {field}:"), result.output
    assert ok_json(url, "schedule", "list") == []


def test_bad_import_lines_name_the_line(url):
    good = {"name": "a", "kind": "periodic", "task_type": "scrape", "created_at": "2026-01-01T00:00:00+00:00",
            "scheduling_period": 3600}
    bad = {**good, "name": "b", "scheduling_period": -5}
    result = run(url, "schedule", "import", "-", input=json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    assert result.exit_code == 2 and "line 2: scheduling_period:" in result.output
    assert ok_json(url, "schedule", "list") == []


@pytest.mark.parametrize("args, said", [
    (["--calendar", "0 0 12 * * *", "--max-duration", "1h"],
     ["--calendar:", "as cron: five fields", "not 6", "'0 12 * * *' without it", "as systemd OnCalendar:", "as RRULE:"]),
    (["--calendar", "*-*-* 02:00 Europe/Pariss", "--max-duration", "1h"], ["--calendar:", "did you mean Europe/Paris?"]),
    (["--every", "1h", "--tz", "europe/paris"], ["--tz:", "did you mean Europe/Paris?"]),
])
def test_a_six_field_cron_or_a_mistyped_zone_is_explained_and_nothing_stored(url, args, said):
    result = run(url, "schedule", "add", "bad", "scrape", *args)
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert all(part in line for part in said), line
    assert ok_json(url, "schedule", "list") == []


def test_schedule_next_refuses_a_count_above_the_maximum(url):
    ok(url, "schedule", "add", "nightly", "scrape", "--calendar", "*-*-* 02:00", "--max-duration", "1h")
    result = run(url, "schedule", "next", "nightly", "--count", "100000")
    assert result.exit_code == 2 and result.output.strip() == "error: --count: expected a whole number from 1 to 10000, got '100000'"
    assert len(ok_json(url, "schedule", "next", "nightly", "--count", "3")) == 3


def test_show_says_what_was_caught_up_and_skipped(url):
    """The beats away for ten fire times of a schedule they send, with the catch-up rule ``all:3``:
    ``schedule show`` lists the three caught up and the seven skipped, and ``--json`` flags them."""
    with open_store(url) as store:
        seed_fire_times(store, ManualClock(datetime.now(UTC)))
    shown = ok(url, "schedule", "show", "beat-minutely").stdout
    assert "Catch-up after an outage: run missed fire times, at most 3 (all:3)" in shown
    assert shown.count("caught up ") == 3 and "skipped 7 fire times" in shown
    firings = ok_json(url, "schedule", "show", "beat-minutely")["firings"]
    assert [(f["status"], f["caught_up"]) for f in firings] == [
        ("sent", False), ("sent", True), ("sent", True), ("sent", True), ("skipped", False)]
    assert firings[-1]["fire_times"] == 7


@pytest.mark.parametrize("args, rule", [
    (["--every", "1h"], "Runs: once every 1h, at most 1h stale: a run starts 6m (a tenth of the period) before it must"),
    (["--every", "1h", "--cooldown", "0s"], "Runs: at most 1h stale, runs back to back (cooldown 0s)"),
    (["--every", "1h", "--cooldown", "10m"], "Runs: at most 1h stale, each run at least 10m after the last good run"),
])
def test_show_states_how_runs_follow_each_other(url, args, rule):
    ok(url, "schedule", "add", "notes", "scrape", *args)
    assert rule in ok(url, "schedule", "show", "notes").stdout
    assert ok_json(url, "schedule", "show", "notes")["start_rule"].startswith(rule.removeprefix("Runs: "))


def test_update_changes_only_what_is_given_checked_as_add(url):
    ok(url, "schedule", "add", "notes", "scrape", "--every", "1h", "--blackout", "01:00-02:00")
    before = ok_json(url, "schedule", "show", "notes")
    said = ok(url, "schedule", "update", "notes", "--every", "30m", "--cooldown", "5m", "--kwargs-json", '{"n": 2}').stdout
    assert said.startswith("Updated notes: arguments, cooldown_duration, scheduling_period")
    after = ok_json(url, "schedule", "show", "notes")
    assert (after["scheduling_period"], after["cooldown_duration"]) == (1800, 300)
    assert after["arguments"] == {"args": [], "kwargs": {"n": 2}}
    assert after["blackout_periods"] == before["blackout_periods"] and after["created_at"] == before["created_at"]
    assert ok(url, "schedule", "update", "notes", "--every", "30m").stdout.startswith("Unchanged notes")
    # to a calendar schedule: its own fields are needed, the periodic ones go
    refused = run(url, "schedule", "update", "notes", "--calendar", "*-*-* 02:00")
    assert refused.exit_code == 2 and refused.output.startswith("error: --max-duration:"), refused.output
    ok(url, "schedule", "update", "notes", "--calendar", "*-*-* 02:00", "--max-duration", "1h", "--no-blackout")
    calendar = ok_json(url, "schedule", "show", "notes")
    assert (calendar["kind"], calendar["scheduling_period"], calendar["blackout_periods"]) == ("calendar", None, [])


@pytest.mark.parametrize("args, said", [
    (["--every", "10"], "error: --every: expected a duration with a unit"),
    (["--cooldown", "2h"], "error: --cooldown: expected at most the scheduling_period"),
    (["--blackout", "1am-2am"], "error: --blackout[0].start:"),
    (["--tz", "Europe/Pariss"], "error: --tz: expected an IANA time zone"),
    (["--task-type", "nope"], "error: --task-type: expected a known task type"),
    (["--every", "1h", "--calendar", "@daily"], "error: --every: expected not with --calendar"),
    (["--cooldown", "5m", "--no-cooldown"], "error: --cooldown: expected not with --no-cooldown"),
    ([], "error: schedule update: expected at least one option"),
])
def test_a_bad_update_names_the_option_and_changes_nothing(url, args, said):
    ok(url, "schedule", "add", "notes", "scrape", "--every", "1h")
    before = ok_json(url, "schedule", "show", "notes")
    result = run(url, "schedule", "update", "notes", *args)
    assert result.exit_code == 2 and result.output.startswith(said), result.output
    assert ok_json(url, "schedule", "show", "notes") == before


def declared_job():
    """A job declared in code (below)."""


def test_update_refuses_a_schedule_declared_in_code(url):
    jobs = ostinato.Schedules("tour")
    jobs.periodic(every="1h")(declared_job)
    with open_store(url) as store:
        jobs.sync(store)
    result = run(url, "schedule", "update", "declared-job", "--every", "5m")
    assert result.exit_code == 2 and "is declared by" in result.output and "change it there" in result.output
    assert run(url, "schedule", "update", "nothing-here", "--every", "5m").exit_code == 1


def test_show_prints_every_field(url):
    ok(url, "schedule", "add", "full", "scrape", "--every", "1h", "--blackout", "01:00-02:00", "--dont-run-on", "web-1",
       "--max-expected", "10m", "--max-allowed", "30m", "--retry-backoff", "1m,5m", "--tz", "Europe/Paris")
    shown = ok(url, "schedule", "show", "full").stdout
    for line in ("Zone: Europe/Paris; blackout periods: 01:00-02:00", "Not run on: web-1",
                 "Expected to take at most: 10m; stopped after: 30m", "Retry backoff after failure 1, 2, 3…: 1m, 5m"):
        assert line in shown, shown
    ok(url, "schedule", "add", "cal", "scrape", "--calendar", "*-*-* 02:00", "--max-duration", "1h")
    shown = ok(url, "schedule", "show", "cal").stdout
    assert "Must complete within 1h of each firing" in shown and "Not run on: no node excluded" in shown
    assert "Expected to take at most: not set; stopped after: never" in shown


def test_run_now_starts_a_resting_schedule_once_and_is_refused_when_paused(url):
    ok(url, "schedule", "add", "notes", "scrape", "failure_rate=0", "--every", "1h")
    ok(url, "scheduler", "--once")
    ok(url, "scheduler", "--once")  # once a period: nothing more
    assert len(ok_json(url, "schedule", "runs", "notes")) == 1
    said = ok(url, "schedule", "run-now", "notes").stdout
    assert said.startswith("Asked notes to run now: it starts as soon as a scheduler picks it"), said
    assert "Run asked for now:" in ok(url, "schedule", "show", "notes").stdout
    ok(url, "scheduler", "--once")
    ok(url, "scheduler", "--once")  # the request is done: back to once a period
    assert [r["status"] for r in ok_json(url, "schedule", "runs", "notes")] == ["succeeded", "succeeded"]
    assert "Run asked for now:" in ok(url, "schedule", "show", "notes").stdout  # ", done"
    ok(url, "schedule", "pause", "notes")
    refused = run(url, "schedule", "run-now", "notes")
    assert refused.exit_code != 0 and "paused: resume it first" in refused.output, refused.output
    assert "Traceback" not in refused.output
    assert run(url, "schedule", "run-now", "ghost").exit_code == 1


def test_a_schedule_not_found_is_named_with_the_closest_names(fresh_url):
    ok(fresh_url, "db", "init")
    ok(fresh_url, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape a site", "--no-default-interval")
    assert run(fresh_url, "schedule", "show", "nightly").output.strip() == \
        "error: schedule not found: 'nightly' (none added yet)"
    for name in ("nightly-report", "tmp-cleanup"):
        ok(fresh_url, "schedule", "add", name, "scrape", "--every", "1h")
    for command in ("show", "condition", "runs", "pause", "run-now", "delete"):
        missing = run(fresh_url, "schedule", command, "nightly-reprot")
        assert missing.exit_code == 1 and missing.output.strip() == \
            "error: schedule not found: 'nightly-reprot' (did you mean nightly-report?)", (command, missing.output)
    far = run(fresh_url, "schedule", "show", "zzz")
    assert far.output.strip() == "error: schedule not found: 'zzz' (known: nightly-report, tmp-cleanup)"


def test_condition_says_each_reason_in_the_consoles_words(fresh_url):
    ok(fresh_url, "db", "init")
    ok(fresh_url, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape a site", "--no-default-interval")
    ok(fresh_url, "schedule", "add", "bills", "scrape", "--every", "1d")
    ok(fresh_url, "schedule", "add", "nightly", "scrape", "--calendar", "*-*-* 02:00", "--max-duration", "1h")
    ok(fresh_url, "schedule", "add", "notes", "scrape", "--every", "1h", "--paused")
    wide = CliRunner().invoke(cli, ["--db", fresh_url, "schedule", "condition", "--at", "+30d"],
                              env={"COLUMNS": "200"})
    assert wide.exit_code == 1, wide.output
    lines = {line.split()[1]: line for line in wide.output.splitlines() if line.startswith("│ ")}
    said = {name: [cell.strip() for cell in line.split("│")[3:5]] for name, line in lines.items()}
    assert said["bills"] == ["stale", "no good run within its scheduling period"], wide.output
    assert said["nightly"] == ["deadline_missed", "the run due at its last firing has not completed in time"]
    assert said["notes"] == ["paused", "paused: not run until resumed"]
    rows = {r["name"]: r for r in ok_json(fresh_url, "schedule", "condition", "--at", "+30d")}
    assert (rows["bills"]["reason"], rows["bills"]["reason_text"]) == ("stale", "no good run within its scheduling period")


def _failed_a_minute_ago(name: str, now: datetime) -> dict:
    """A daily schedule whose last run failed a minute ago: in its retry backoff (5 min after one failure)."""
    def ago(**delta: float) -> str:
        return (now - timedelta(**delta)).isoformat()

    return {"name": name, "kind": "periodic", "task_type": "scrape", "created_at": ago(days=3),
            "scheduling_period": 86400, "last_good_start_at": ago(hours=2), "last_good_end_at": ago(hours=2),
            "last_start_at": ago(minutes=2), "last_end_at": ago(minutes=1), "failure_count": 1}


def _calendar_failed_a_minute_ago(name: str, now: datetime) -> dict:
    """An hourly calendar schedule whose last run failed a minute ago: in its retry backoff, its fire time
    still to run."""
    top = now.replace(minute=0, second=0, microsecond=0)
    return {"name": name, "kind": "calendar", "task_type": "scrape", "created_at": (now - timedelta(days=3)).isoformat(),
            "cron_schedule": "0 * * * *", "cron_max_schedule_duration": 3600,
            "fired_through": (top - timedelta(hours=1)).isoformat(),
            "last_good_start_at": (top - timedelta(hours=1)).isoformat(),
            "last_good_end_at": (top - timedelta(minutes=59)).isoformat(),
            "last_start_at": (now - timedelta(minutes=2)).isoformat(), "last_end_at": (now - timedelta(minutes=1)).isoformat(),
            "failure_count": 1}


def test_run_now_says_why_the_run_asked_for_waits(fresh_url):
    """Asked for now, a run waits for no retry backoff (the domain's rule), a calendar schedule's as a
    periodic one's; a blackout period is still waited out, and said so; a run in progress, likewise.
    And ``schedule show`` says why a schedule can start when it can: its retry backoff."""
    ok(fresh_url, "db", "init")
    ok(fresh_url, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape a site", "--no-default-interval")
    now = datetime.now(UTC)
    around_now = f"{now - timedelta(hours=1):%H:%M}-{now + timedelta(hours=1):%H:%M}"
    lines = [_failed_a_minute_ago("backoff", now), {**_failed_a_minute_ago("dark", now),
                                                    "blackout_periods": [{"start": around_now[:5], "end": around_now[6:]}]},
             _calendar_failed_a_minute_ago("hourly", now)]
    ok(fresh_url, "schedule", "import", "-", input="".join(json.dumps(line) + "\n" for line in lines))
    for name in ("backoff", "hourly"):
        assert ok_json(fresh_url, "schedule", "show", name)["can_start_by"] > now.isoformat()  # in its backoff
        shown = ok(fresh_url, "schedule", "show", name).stdout
        assert re.search(r"Can start by: in \d minutes \(.*\): a retry after failure 1, 5m after its last run ended\n",
                         shown), shown
    said = ok(fresh_url, "schedule", "run-now", "backoff").stdout
    assert said.startswith("Asked backoff to run now: it starts as soon as a scheduler picks it"), said
    said = ok(fresh_url, "schedule", "run-now", "hourly").stdout
    assert said.startswith("Asked hourly to run now: it starts as soon as a scheduler picks it"), said
    said = ok(fresh_url, "schedule", "run-now", "dark").stdout
    assert said.startswith("Asked dark to run now: it is in a blackout period: the run asked for starts in"), said
