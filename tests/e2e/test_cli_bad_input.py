"""Bad input on the command line: one line naming the field and what was expected, exit 2, nothing written."""

from __future__ import annotations

import pytest
from cli_helpers import run

from ostinato.store import open_store

TYPE_ADD = ["task-type", "add", "new-type", "m.f", "A new type"]
TASK_ADD = ["task", "add", "load-git", "https://x/y"]

CASES = {
    # name: (arguments, field, what the message says was expected)
    "unknown task type": (["task", "add", "nope", "x"], "type", "a known task type"),
    "negative default_interval": (TYPE_ADD + ["--default-interval", "-1h"], "--default-interval", "a positive duration, got '-1h'"),
    "negative min_interval": (TYPE_ADD + ["--min-interval=-1h"], "--min-interval", "a positive duration, got '-1h'"),
    "negative task interval": (TASK_ADD + ["--interval", "-1h"], "--interval", "a positive duration, got '-1h'"),
    "zero default_interval": (TYPE_ADD + ["--default-interval", "0s"], "--default-interval", "a positive duration, got '0s'"),
    "missing default_interval": (TYPE_ADD, "--default-interval", "a duration such as 1d (--default-interval), or --no-default-interval"),
    "both default_interval and none": (TYPE_ADD + ["--default-interval", "1d", "--no-default-interval"], "--default-interval",
                                       "either --default-interval or --no-default-interval, not both"),
    "bare number default_interval": (TYPE_ADD + ["--default-interval", "1"], "--default-interval",
                                     "a duration with a unit, such as 30s, 5m, 12h, 1d, 1d12h or ISO 8601 PT1H"),
    "bare number min_interval": (TYPE_ADD + ["--min-interval", "3600"], "--min-interval", "a duration with a unit"),
    "bare number task interval": (TASK_ADD + ["--interval", "86400"], "--interval", "a duration with a unit"),
    "bare number relative next_run": (TASK_ADD + ["--next-run", "+2"], "--next-run", "a duration with a unit"),
    "bare number schedule period": (["schedule", "add", "s", "load-git", "--every", "60"], "--every",
                                    "a duration with a unit"),
    "bare number visit-status knob": (["visit-status", "record", "-", "--minimum-interval", "1"], "--minimum-interval",
                                      "a duration with a unit"),
    "bare number grab timeout": (["origin", "grab-next", "git", "--in-flight-timeout", "3600"], "--in-flight-timeout",
                                 "a duration with a unit"),
    "zero retry_delay": (TYPE_ADD + ["--retry-delay", "0s"], "--retry-delay", "a positive duration"),
    "zero task interval": (TASK_ADD + ["--interval", "0s"], "--interval", "a positive duration"),
    "min_interval > max_interval": (TYPE_ADD + ["--min-interval", "2h", "--max-interval", "1h"], "--min-interval", "at most max_interval"),
    "default_interval above max": (TYPE_ADD + ["--default-interval", "2d", "--max-interval", "1d"], "--default-interval", "at most max_interval"),
    "backoff_factor 0.5": (TYPE_ADD + ["--backoff-factor", "0.5"], "--backoff-factor", "a finite number of at least 1"),
    "backoff_factor not a number": (TYPE_ADD + ["--backoff-factor", "fast"], "--backoff-factor", "a number"),
    "max_queue_length 0": (TYPE_ADD + ["--max-queue-length", "0"], "--max-queue-length", "a whole number of at least 1"),
    "num_retries without retry_delay": (TYPE_ADD + ["--num-retries", "2"], "--retry-delay", "a positive duration when num_retries > 0"),
    "malformed args JSON": (TASK_ADD + ["--args-json", "{bad"], "arguments", "a JSON array for --args-json"),
    "args JSON not an array": (TASK_ADD + ["--args-json", '{"a": 1}'], "arguments", "a JSON array"),
    "malformed kwargs JSON": (TASK_ADD + ["--kwargs-json", "{bad"], "arguments", "a JSON object for --kwargs-json"),
    "unknown priority": (TASK_ADD + ["--priority", "urgent"], "--priority", "one of high, normal, low"),
    "unknown priority in list": (["task", "list", "--priority", "urgent"], "--priority", "one of high, normal, low"),
    "unknown policy": (TASK_ADD + ["--policy", "sometimes"], "--policy", "one of oneshot, recurring"),
    "unknown status": (["task", "list", "--status", "sleeping"], "--status", "one of next_run_not_scheduled"),
    "bad duration (type)": (TYPE_ADD + ["--default-interval", "5 parsecs"], "--default-interval", "a duration such as"),
    "bad duration (task)": (TASK_ADD + ["--interval", "5 parsecs"], "--interval", "a duration such as"),
    "bad date": (TASK_ADD + ["--next-run", "yesterday-ish"], "--next-run", "an ISO 8601 time with a zone"),
    "ISO date without zone": (TASK_ADD + ["--next-run", "2026-11-22T10:00:00"], "--next-run", "a time with a zone"),
    "bad date in list": (["task", "list", "--before", "yesterday-ish"], "--before", "an ISO 8601 time with a zone"),
    "bad date in respawn": (["task", "respawn", "1", "--next-run", "2026-11-22 10:00"], "--next-run", "a time with a zone"),
    "bad archive date": (["task", "archive", "--before", "last year"], "--before", "an ISO 8601 time with a zone"),
    "bad archive batch size": (["task", "archive", "--before", "now", "--batch-size", "0"], "--batch-size", "a whole number of at least 1"),
    "bad limit": (["task", "list", "--limit", "lots"], "--limit", "a whole number of at least 1"),
    "bad task id": (["task", "show", "seven"], "ID", "a whole number of at least 1"),
    "unknown type in list-pending": (["task", "list-pending", "nope"], "type", "a known task type"),
    "unknown type in task-type list": (["task-type", "list", "-t", "nope"], "--task-type", "a known task type"),
}


@pytest.fixture
def url(fresh_url):
    url = fresh_url
    for args in (
        ["db", "init"],
        ["task-type", "add", "load-git", "m.load_git", "Load git", "--default-interval", "1d", "--min-interval", "1h",
         "--max-interval", "64d", "--backoff-factor", "2"],
        ["task", "add", "load-git", "https://a/b"],
    ):
        result = run(url, *args)
        assert result.exit_code == 0, result.output
    return url




def snapshot(url):
    store = open_store(url)
    try:
        return (
            sorted(store.count_tasks().items()),
            [t.to_dict() for t in store.search_tasks(limit=1000)],
            store.list_task_types(),
        )
    finally:
        store.close()


@pytest.mark.parametrize("args, field, expected", CASES.values(), ids=list(CASES))
def test_bad_input_is_one_line_exit_2_and_changes_nothing(url, args, field, expected):
    before = snapshot(url)
    result = run(url, *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {field}: expected "), lines[0]
    assert expected in lines[0]
    assert snapshot(url) == before


def test_the_valid_versions_of_those_commands_work(url):
    """The fixture's store accepts the same commands with good values (so the failures above are about the values)."""
    assert run(url, *TYPE_ADD, "--default-interval", "1h", "--min-interval", "1h", "--max-interval", "2h",
               "--backoff-factor", "1.5", "--max-queue-length", "1", "--num-retries", "2", "--retry-delay", "5m").exit_code == 0
    assert run(url, *TASK_ADD, "--interval", "2h", "--priority", "low", "--policy", "oneshot",
               "--next-run", "2026-11-22T10:00:00+01:00", "--args-json", "[1]", "--kwargs-json", "{}").exit_code == 0
    store = open_store(url)
    try:
        assert sum(store.count_tasks().values()) == 2
        assert len(store.list_task_types()) == 2
    finally:
        store.close()


@pytest.mark.parametrize("args, said", [
    (["--task-type", "nope"], "task type not found: nope"),
    ([], "no task type to serve"),
])
def test_a_worker_with_no_task_type_to_serve_says_so_in_one_line(fresh_url, args, said):
    with open_store(fresh_url) as store:
        store.init_schema()
    result = run(fresh_url, "worker", "--broker", "redis://127.0.0.1:1/0", *args)
    assert result.exit_code == 1, (result.output, result.exception)
    assert said in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
