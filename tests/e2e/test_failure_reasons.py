"""Failures in plain sight: a failed run's error (its type and message), the innermost frames of its
traceback (the job's own, not Ostinato's) and what a good run returned are shown by `task show --runs`,
`task-run list`, `schedule runs` and `schedule show`, not only by `--json`; the runner and the
scheduler log one line per failed run, with its reason."""

from __future__ import annotations

import contextlib
import logging
import re
import textwrap
from collections.abc import Iterator

import pytest
from cli_helpers import ok, ok_json

JOBS = textwrap.dedent('''
    from ostinato.execution.registry import PermanentFailure


    def nofile(path):
        with open(path) as source:
            return source.read()


    def gone():
        raise PermanentFailure("no file here")


    def counted():
        return {"status": "eventful", "items": 3}
''')


@pytest.fixture
def url(tmp_path, monkeypatch):
    (tmp_path / "failing_jobs.py").write_text(JOBS)
    monkeypatch.syspath_prepend(str(tmp_path))
    url = f"sqlite:///{tmp_path}/o.db"
    ok(url, "db", "init")
    for name in ("nofile", "gone", "counted"):
        ok(url, "task-type", "add", name, f"failing_jobs:{name}", name, "--no-default-interval")
    return url


@contextlib.contextmanager
def logged_by(name: str) -> Iterator[list[logging.LogRecord]]:
    """The records of logger ``name`` and its children while the block runs."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append  # type: ignore[method-assign]  # this handler keeps its records: emit appends
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def test_a_failed_task_run_says_why_everywhere(url):
    ok(url, "task", "add", "nofile", "/no/such/file", "--policy", "oneshot")
    ok(url, "task", "add", "gone", "--policy", "oneshot")
    ok(url, "task", "add", "counted", "--policy", "oneshot")
    with logged_by("ostinato") as records:  # the runner sets up the root logger's handlers itself
        ok(url, "runner", "--once")
    logged = [r.getMessage() for r in records if "failed" in r.getMessage()]
    assert any(re.fullmatch(r"run \d+ of nofile failed: FileNotFoundError: .*'/no/such/file'", m) for m in logged), logged
    assert any(re.fullmatch(r"run \d+ of gone failed for good \(permfailed\): PermanentFailure: no file here", m)
               for m in logged), logged
    assert len(logged) == 2, logged  # one line a failed run

    shown = ok(url, "task", "show", "1", "2", "3", "--runs").stdout
    assert "error: FileNotFoundError: [Errno 2] No such file or directory: '/no/such/file'" in shown
    assert "at failing_jobs.py:6 in nofile: with open(path) as source:" in shown
    assert "calls.py" not in shown  # Ostinato's own frames are left out
    assert "error: PermanentFailure: no file here" in shown and "at failing_jobs.py:11 in gone" in shown
    assert "result: items=3" in shown

    listed = ok(url, "task-run", "list", "--status", "permfailed").stdout
    assert "PermanentFailure:" in listed and "no file here" in listed and "Error" in listed  # (a narrow table wraps)
    assert "Error" not in ok(url, "task-run", "list", "--status", "eventful").stdout  # no column of blanks
    [run] = ok_json(url, "task-run", "list", "--status", "failed")
    assert run["metadata"]["traceback"] == ["failing_jobs.py:6 in nofile: with open(path) as source:"]


def test_a_failed_schedule_run_says_why(url):
    ok(url, "schedule", "add", "cleanup", "gone", "--every", "1h")
    with logged_by("ostinato") as records:
        ok(url, "scheduler", "--once")
    assert any("cleanup failed: PermanentFailure: no file here" in r.getMessage() for r in records)
    shown = ok(url, "schedule", "show", "cleanup").stdout
    assert "1: failed, started" in shown and "error: PermanentFailure: no file here" in shown
    assert "at failing_jobs.py:11 in gone" in shown
    runs = ok(url, "schedule", "runs", "cleanup").stdout
    assert "error: PermanentFailure: no file here" in runs
    assert ok_json(url, "schedule", "runs", "cleanup")[0]["detail"]["error"] == "PermanentFailure: no file here"
