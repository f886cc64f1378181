"""End-to-end tests of ``ostinato task-type``, ``task`` and ``task-run`` on a real SQLite file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from cli_helpers import ok, ok_json, run

from ostinato.domain.tasks import RunEvent, TaskRunStatus
from ostinato.store import open_store

TASK_KEYS = {"id", "type", "arguments", "next_run", "current_interval", "policy", "status", "retries_left", "priority"}
TASK_TYPE_KEYS = {"type", "description", "backend_name", "default_interval", "min_interval", "max_interval",
                  "backoff_factor", "max_queue_length", "num_retries", "retry_delay"}
RUN_KEYS = {"id", "task", "backend_id", "scheduled", "started", "ended", "metadata", "status"}


@pytest.fixture
def url(fresh_url):
    url = fresh_url
    ok(url, "db", "init")
    ok(url, "task-type", "add", "load-git", "swh.loader.git.tasks.UpdateGitRepository", "Update an origin of type git",
       "--default-interval", "64d", "--min-interval", "12h", "--max-interval", "64d", "--backoff-factor", "2",
       "--max-queue-length", "5000")
    ok(url, "task-type", "add", "load-hg", "swh.loader.hg.tasks.UpdateHg", "Update an origin of type mercurial",
       "--default-interval", "1d", "--num-retries", "3", "--retry-delay", "1h")
    return url








def store_of(url):
    return open_store(url)


# -- task types -----------------------------------------------------------------
def test_task_type_list_like_the_seed(url):
    out = ok(url, "task-type", "list").output
    assert out.splitlines()[0] == "Known task types:"
    assert "load-git: swh.loader.git.tasks.UpdateGitRepository\n  Update an origin of type git" in out
    assert "load-hg:" in out and "  interval: 64d [12h, 64d]" in out  # the intervals without -v too
    assert "backoff_factor:" not in out  # the other knobs with -v

    out = ok(url, "task-type", "list", "-v", "-t", "load-git").output
    assert out.splitlines() == [
        "Known task types:",
        "load-git: swh.loader.git.tasks.UpdateGitRepository",
        "  Update an origin of type git",
        "  interval: 64d [12h, 64d]",
        "  backoff_factor: 2",
        "  max_queue_length: 5000",
        "  num_retries: none",
        "  retry_delay: none",
    ]


def test_task_type_list_json(url):
    data = ok_json(url, "task-type", "list")
    assert [d["type"] for d in data] == ["load-git", "load-hg"]
    for item in data:
        assert set(item) == TASK_TYPE_KEYS
    git = data[0]
    assert git["default_interval"] == 64 * 86400 and git["min_interval"] == 12 * 3600 and git["backoff_factor"] == 2.0
    assert data[1]["num_retries"] == 3 and data[1]["retry_delay"] == 3600


def test_task_type_duplicate_and_unknown(url):
    result = run(url, "task-type", "add", "load-git", "x.y", "again", "--default-interval", "1d")
    assert result.exit_code == 1 and "already exists" in result.output
    result = run(url, "task-type", "list", "-t", "nope")
    assert result.exit_code == 2
    assert result.output.strip().startswith("error: --task-type: expected a known task type")


# -- tasks ----------------------------------------------------------------------
def test_add_list_show(url):
    out = ok(url, "task", "add", "load-git", "https://github.com/turtl/mobile", "depth=2", 'opts={"a": [1]}', "--next-run", "-15d").output
    assert out.startswith("Created task ")
    assert "Next run: 15 days ago (" in out
    assert "Interval: 64d" in out
    assert "    'https://github.com/turtl/mobile'" in out
    assert "    depth: 2" in out and "    opts: {'a': [1]}" in out

    ok(url, "task", "add", "load-hg", "https://bitbucket.org/kepung/pypy", "--next-run", "+4h")
    ok(url, "task", "add", "load-hg", "https://bitbucket.org/lunixbochs/pypy-1", "--next-run", "+31d", "--interval", "32d")

    out = ok(url, "task", "list", "-t", "load-hg", "--limit", "2").output
    lines = out.splitlines()
    assert lines[0] == "Found 2 tasks"
    for label in ("Next run: in 4 hours (", "Next run: in a month (", "Interval: 1d", "Interval: 32d",
                  "Type: load-hg", "Policy: recurring", "Status: pending (next_run_not_scheduled)", "Priority:", "Args:", "Keyword args:"):
        assert label in out, label
    assert "load-git" not in out

    tasks = ok_json(url, "task", "list")
    assert len(tasks) == 3
    for item in tasks:
        assert set(item) == TASK_KEYS
    first = tasks[0]
    assert first["arguments"] == {"args": ["https://github.com/turtl/mobile"], "kwargs": {"depth": 2, "opts": {"a": [1]}}}
    assert first["current_interval"] == 64 * 86400
    assert first["retries_left"] == 0 and tasks[1]["retries_left"] == 3

    shown = ok_json(url, "task", "show", str(first["id"]))
    assert shown == [first]
    out = ok(url, "task", "show", str(first["id"]), "--runs").output
    assert f"Task {first['id']}" in out and "Runs: none" in out


def test_duplicate_add_returns_the_same_task(url):
    a = ok_json(url, "task", "add", "load-git", "https://x/y", "--policy", "oneshot", "--priority", "high")
    assert a["created"] is True and set(a) == TASK_KEYS | {"created"}
    b = ok_json(url, "task", "add", "load-git", "https://x/y", "--policy", "oneshot", "--priority", "high")
    assert b["id"] == a["id"] and b["created"] is False
    out = ok(url, "task", "add", "load-git", "https://x/y", "--policy", "oneshot", "--priority", "high").output
    assert out.startswith(f"Task {a['id']} already exists")
    # another priority, policy or argument is another task
    assert ok_json(url, "task", "add", "load-git", "https://x/y", "--policy", "oneshot")["id"] != a["id"]
    assert ok_json(url, "task", "add", "load-git", "https://x/y", "--priority", "high")["id"] != a["id"]
    assert ok_json(url, "task", "add", "load-git", "--args-json", '["https://x/y"]', "--kwargs-json", '{"k": 1}', "--policy", "oneshot", "--priority", "high")["id"] != a["id"]


def test_list_filters(url):
    a = ok_json(url, "task", "add", "load-git", "a", "--priority", "high")
    b = ok_json(url, "task", "add", "load-git", "b", "--policy", "oneshot", "--next-run", "+2d")
    c = ok_json(url, "task", "add", "load-hg", "c", "--priority", "low")
    ids = lambda *args: [t["id"] for t in ok_json(url, "task", "list", *args)]
    assert ids("--priority", "high") == [a["id"]]
    assert ids("--priority", "none") == [b["id"]]
    assert ids("--priority", "high", "--priority", "low") == [a["id"], c["id"]]
    assert ids("--policy", "oneshot") == [b["id"]]
    assert ids("--before", "+1d") == [a["id"], c["id"]]
    assert ids("--limit", "1", "--after-id", str(a["id"])) == [b["id"]]
    assert ids("--status", "disabled") == []
    assert "(more may follow: --after-id" in ok(url, "task", "list", "--limit", "1").output


def test_list_pending_changes_nothing(url):
    old = ok_json(url, "task", "add", "load-git", "old", "--next-run", "-15d")
    ok_json(url, "task", "add", "load-git", "future", "--next-run", "+1d")
    prio = ok_json(url, "task", "add", "load-git", "urgent", "--priority", "high", "--next-run", "-1h")
    out = ok(url, "task", "list-pending", "load-git", "--limit", "2").output
    assert out.splitlines()[0] == "Found 1 load-git task"
    assert f"Task {old['id']}" in out and "Next run: 15 days ago" in out and "Status:" not in out
    assert [t["id"] for t in ok_json(url, "task", "list-pending", "load-git")] == [old["id"]]
    assert [t["id"] for t in ok_json(url, "task", "list-pending", "load-git", "--priority")] == [prio["id"]]
    assert len(ok_json(url, "task", "list-pending", "load-git", "--before", "+2d")) == 2
    assert ok_json(url, "task", "show", str(old["id"]))[0]["status"] == "next_run_not_scheduled"
    result = run(url, "task", "list-pending", "nope")
    assert result.exit_code == 2 and result.output.startswith("error: type:")


def test_show_unknown_id(url):
    result = run(url, "task", "show", "999")
    assert result.exit_code == 1
    assert result.output.strip() == "error: task not found: 999"


def test_disable_and_respawn(url):
    t = ok_json(url, "task", "add", "load-hg", "x", "--next-run", "-1h")
    out = ok(url, "task", "disable", str(t["id"])).output
    assert "Disabled 1 task" in out
    assert ok_json(url, "task", "show", str(t["id"]))[0]["status"] == "disabled"
    assert ok_json(url, "task", "list-pending", "load-hg") == []
    assert "already disabled" in ok(url, "task", "disable", str(t["id"])).output

    out = ok(url, "task", "respawn", str(t["id"]), "--next-run", "2030-01-01T00:00:00+02:00").output
    assert "Respawned 1 task" in out
    shown = ok_json(url, "task", "show", str(t["id"]))[0]
    assert shown["status"] == "next_run_not_scheduled"
    assert shown["next_run"] == "2029-12-31T22:00:00+00:00"
    assert shown["retries_left"] == 3
    assert "left alone" in ok(url, "task", "respawn", str(t["id"])).output

    result = run(url, "task", "disable", str(t["id"]), "12345")
    assert result.exit_code == 1 and "12345" in result.output
    assert ok_json(url, "task", "show", str(t["id"]))[0]["status"] == "next_run_not_scheduled"


def test_retry_after_a_failed_run_with_its_audit_event(url):
    t = ok_json(url, "task", "add", "load-hg", "x", "--policy", "oneshot", "--next-run", "-1h")
    now = datetime.now(UTC)
    store = store_of(url)
    try:
        [grabbed] = store.grab_ready_tasks("load-hg", now, 1, backend_id="worker-1")
        store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.PERMFAILED, now)])
    finally:
        store.close()
    run_id = str(grabbed.run.id)
    out = ok(url, "task", "retry", run_id).output
    assert out.startswith(f"Task {t['id']} pending again now") and f"after run #{run_id}" in out
    assert ok_json(url, "task", "show", str(t["id"]))[0]["status"] == "next_run_not_scheduled"
    again = run(url, "task", "retry", run_id)
    assert again.exit_code == 1 and "already pending" in again.output and "Traceback" not in again.output
    missing = run(url, "task", "retry", "999999")
    assert missing.exit_code == 1 and "999999" in missing.output
    [event] = [e for e in ok_json(url, "audit", "list") if e["action"] == "task.retry"]
    assert event["target"] == f"task:{t['id']}" and "@" in event["actor"]


def test_task_type_update_and_delete(url):
    out = ok(url, "task-type", "update", "load-hg", "--max-interval", "32d", "--clear", "retry_delay",
             "--num-retries", "0").output
    assert out.startswith("Updated task type load-hg.") and "num_retries: 0" in out and "retry_delay: none" in out
    shown = ok_json(url, "task-type", "show", "load-hg")
    assert shown["max_interval"] == 32 * 86400 and shown["default_interval"] == 86400
    typo = run(url, "task-type", "update", "load-gh", "--num-retries", "1")
    assert typo.exit_code == 1 and "load-hg" in typo.output  # did you mean
    both = run(url, "task-type", "update", "load-hg", "--retry-delay", "1h", "--clear", "retry_delay")
    assert both.exit_code == 2 and both.output.startswith("error: --retry-delay: expected either")
    assert run(url, "task-type", "update", "load-hg").exit_code == 2
    t = ok_json(url, "task", "add", "load-hg", "x")
    in_use = run(url, "task-type", "delete", "load-hg")
    assert in_use.exit_code == 1 and f"in use by tasks {t['id']}" in in_use.output and "Traceback" not in in_use.output
    assert ok(url, "task-type", "delete", "load-git").output.strip() == "Deleted task type load-git."
    actions = [e["action"] for e in ok_json(url, "audit", "list")]
    assert actions[:2] == ["task-type.delete", "task-type.update"] and actions.count("task-type.add") == 2


# -- runs and archive -------------------------------------------------------------
def _complete_oneshots(url, task_type, count):
    """Run ``count`` ready one-shot tasks of ``task_type`` to an eventful end, through the store API."""
    now = datetime.now(UTC)
    store = store_of(url)
    try:
        runs = store.grab_ready_tasks(task_type, now, count, backend_id="worker-1")
        assert len(runs) == count
        store.record_run_events([RunEvent(r.run.id, TaskRunStatus.STARTED, now) for r in runs])
        store.record_run_events([RunEvent(r.run.id, TaskRunStatus.EVENTFUL, now + timedelta(seconds=1), metadata={"objects": 3}) for r in runs])
        return [r.task.id for r in runs]
    finally:
        store.close()


def test_task_run_list(url):
    t = ok_json(url, "task", "add", "load-git", "x", "--policy", "oneshot", "--next-run", "-1m")
    _complete_oneshots(url, "load-git", 1)
    runs = ok_json(url, "task-run", "list", "--task", str(t["id"]))
    assert len(runs) == 1 and set(runs[0]) == RUN_KEYS
    assert runs[0]["status"] == "eventful" and runs[0]["metadata"] == {"objects": 3}
    assert ok_json(url, "task-run", "list", "--status", "failed") == []
    out = ok(url, "task-run", "list").output
    assert "eventful" in out and "worker-1" in out
    assert ok_json(url, "task", "show", str(t["id"]))[0]["status"] == "completed"
    assert "Runs:" in ok(url, "task", "show", str(t["id"]), "--runs").output
    shown = ok_json(url, "task", "show", str(t["id"]), "--runs")[0]
    assert [r["id"] for r in shown["runs"]] == [runs[0]["id"]]


def test_task_show_says_the_status_in_words(url):
    """A task whose run failed for good is disabled by the rules: ``task show --runs`` says it failed (its
    last run is known), and each run's status in words; ``--json`` keeps the stored codes."""
    t = ok_json(url, "task", "add", "load-git", "x", "--policy", "oneshot", "--next-run", "-1m")
    now = datetime.now(UTC)
    store = store_of(url)
    try:
        [grabbed] = store.grab_ready_tasks("load-git", now, 1, backend_id="worker-1")
        store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.PERMFAILED, now, metadata={"error": "gone"})])
    finally:
        store.close()
    out = ok(url, "task", "show", str(t["id"]), "--runs").output
    assert "  Status: failed (disabled)" in out, out
    assert f"    {grabbed.run.id}: failed for good (permfailed)" in out, out
    assert "  Status: disabled" in ok(url, "task", "show", str(t["id"])).output  # its runs not read: as stored
    assert ok_json(url, "task", "show", str(t["id"]))[0]["status"] == "disabled"


def test_archive_end_to_end(url, tmp_path):
    oneshots = [ok_json(url, "task", "add", "load-git", f"o{i}", "--policy", "oneshot", "--next-run", "-1m")["id"] for i in range(3)]
    off = ok_json(url, "task", "add", "load-hg", "off")["id"]
    keep = ok_json(url, "task", "add", "load-hg", "stays")["id"]
    assert sorted(_complete_oneshots(url, "load-git", 3)) == sorted(oneshots)
    ok(url, "task", "disable", str(off))

    exported = tmp_path / "export.jsonl"
    out = ok(url, "task", "archive", "--before", "+1d", "--out", str(exported), "--keep").output
    assert "Exported 4 tasks" in out
    assert len(ok_json(url, "task", "list")) == 5

    archive = tmp_path / "archive.jsonl"
    out = ok(url, "task", "archive", "--before", "+1d", "--out", str(archive), "--batch-size", "2").output
    assert "Archived 4 tasks" in out
    records = [json.loads(line) for line in archive.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["task"]["id"] for r in records) == sorted(oneshots + [off])
    for record in records:
        assert set(record["task"]) == TASK_KEYS
        if record["task"]["id"] == off:
            assert record["task"]["status"] == "disabled" and record["runs"] == []
        else:
            assert record["task"]["status"] == "completed"
            assert [r["status"] for r in record["runs"]] == ["eventful"]
            assert set(record["runs"][0]) == RUN_KEYS

    store = store_of(url)
    try:
        assert store.get_tasks(oneshots + [off]) == []
        assert [t.id for t in store.get_tasks([keep])] == [keep]
        for task_id in oneshots:
            assert store.list_task_runs(task_id=task_id) == []
    finally:
        store.close()

    result = ok(url, "task", "archive", "--before", "+1d", "--out", "-")
    assert result.stdout == ""
    assert "Archived 0 tasks to stdout" in result.stderr


def test_archive_to_stdout(url):
    ok_json(url, "task", "add", "load-git", "o", "--policy", "oneshot", "--next-run", "-1m")
    _complete_oneshots(url, "load-git", 1)
    result = ok(url, "task", "archive", "--before", "+1h")
    [line] = result.stdout.splitlines()
    assert json.loads(line)["task"]["status"] == "completed"
    assert "Archived 1 task to stdout" in result.stderr
    result = run(url, "task", "archive")
    assert result.exit_code == 2  # --before is required
