"""A JSON-lines file with bad lines (origin record, visit-status record, schedule import) is
refused with the first 20 bad lines, each with its number and field, and nothing is written."""

from __future__ import annotations

import json

import pytest
from cli_helpers import add_loaders, ok, run

from ostinato.store import open_store

GOOD = {"url": "https://forge.example/r", "visit_type": "git"}


@pytest.fixture
def url(fresh_url):
    ok(fresh_url, "db", "init")
    add_loaders(fresh_url, "git")
    return fresh_url


def lines(*records):
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def test_every_bad_origin_line_is_reported_up_to_twenty(url):
    records = []
    for index in range(30):
        records.append({"url": f"https://forge.example/{index}", "visit_type": "git"})
        records.append({"url": index, "visit_type": "git"} if index % 2 else "{not json")
    result = run(url, "origin", "record", "--lister", "forge/forge", "-", input=lines(*records))
    assert result.exit_code == 2
    out = result.output.splitlines()
    assert out[0] == "error: 30 bad lines, nothing was written:"
    assert out[1].startswith("  line 2: record: expected one JSON object per line")
    assert out[2] == "  line 4: url: expected a non-empty URL, got 1"
    assert [line.split(":")[0].strip() for line in out[1:21]] == [f"line {n}" for n in range(2, 42, 2)]
    assert out[21] == "  … and 10 more bad lines" and len(out) == 22
    with open_store(url) as store:
        assert store.get_listed_origins() == [] and store.list_listers() == []


def test_one_bad_line_reads_as_before(url):
    result = run(url, "origin", "record", "--lister", "forge/forge", "-", input=lines(GOOD, {"visit_type": "git"}))
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: line 2: url: expected")


def test_bad_visit_statuses_are_all_reported(url):
    good = {"origin": "https://forge.example/r", "visit": 1, "type": "git", "status": "full",
            "date": "2026-01-01T00:00:00Z", "snapshot": "aa" * 20}
    result = run(url, "visit-status", "record", "-",
                 input=lines(good, {**good, "date": "yesterday"}, good, {**good, "snapshot": "zz"}))
    assert result.exit_code == 2
    out = result.output.splitlines()
    assert out[0] == "error: 2 bad lines, nothing was written:"
    assert out[1].startswith("  line 2: date: expected") and out[2].startswith("  line 4: snapshot: expected")
    with open_store(url) as store:
        assert store.get_visit_stats([("https://forge.example/r", "git")]) == []


def test_bad_schedules_in_an_import_are_all_reported(url):
    ok(url, "task-type", "add", "report", "ostinato.examples:flaky", "Report", "--no-default-interval")
    good = {"name": "a", "kind": "periodic", "task_type": "report", "created_at": "2026-01-01T00:00:00Z",
            "scheduling_period": 3600}
    result = run(url, "schedule", "import", "-",
                 input=lines(good, {**good, "name": "b", "kind": "hourly"}, {**good, "name": "c", "scheduling_period": "1h"},
                             {**good, "name": "d", "created_at": "noon"}))
    assert result.exit_code == 2
    out = result.output.splitlines()
    assert out[0] == "error: 2 bad lines, nothing was written:"
    assert out[1].startswith("  line 2: kind: expected periodic or calendar")
    assert out[2].startswith("  line 4: created_at: expected")
    with open_store(url) as store:
        assert store.list_schedules(after="", limit=10) == []
