"""The console's task type and task pages over HTTP, on every store: task statuses said in words
(``pending``, not ``next_run_not_scheduled``), a task its runs disabled read as ``failed`` (a
one-shot task out of retries, a run failed for good) while one a person disabled reads
``disabled``."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from test_dashboard_drill import get, rows, section, seed_drill, text
from test_dashboard_helpers import MINUTE, seed, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskPolicy, TaskRunStatus, TaskType

CODES = ("next_run_not_scheduled", "next_run_scheduled", "permfailed")


def seed_statuses(store, clock) -> dict[str, int]:
    """Task type ``one-off`` (no retries): a one-shot task whose run failed (out of retries: disabled by
    the rules), one a person disabled before it ran, one in flight. Their ids by name."""
    now = clock.now()
    store.create_task_type(TaskType(type="one-off", description="Once", backend_name="jobs:once"))
    out, manual, flying = store.create_tasks([
        NewTask(type="one-off", next_run=now - 3 * MINUTE, policy=TaskPolicy.ONESHOT, arguments=TaskArguments((n,), {}))
        for n in range(3)])
    [grabbed] = store.grab_ready_tasks("one-off", now - 2 * MINUTE, 1)
    assert grabbed.task.id == out.id
    store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.FAILED, now - MINUTE,
                                      metadata={"error": "ValueError: bad input"})])
    assert store.disable_tasks([manual.id], now, actor="alice") == [manual.id]
    [grabbed] = store.grab_ready_tasks("one-off", now, 1)
    assert grabbed.task.id == flying.id
    return {"out": out.id, "manual": manual.id, "flying": flying.id}


@pytest.fixture
def console(store, clock):
    seed(store, clock)
    ids = seed_drill(store, clock)
    ids |= seed_statuses(store, clock)
    client = TestClient(create_app(store, Settings(), clock))
    client.headers["Authorization"] = f"Bearer {tokens(store, clock)['read']}"
    return client, ids


def shown(html: str) -> str:
    """The page's text as read (no attributes: ``data-status`` keeps the stored code for programs)."""
    return text(re.sub(r"<head>.*?</head>", "", html, flags=re.S))


def status_of(row: str) -> str:
    return text(re.search(r'<td data-label="Status"[^>]*>(.*?)</td>', row, flags=re.S).group(1))


def test_task_statuses_are_words(console):
    client, ids = console
    html = get(client, "/dashboard/task-types/fetch-mirror").text
    statuses = {re.search(r'data-task-id="(\d+)"', r).group(1): status_of(r) for r in rows(html, "task")}
    assert statuses == {str(ids["mirror"]): "○ pending", str(ids["gone"]): "✖ failed"}  # gone: its run failed for good
    html = get(client, "/dashboard/task-types/one-off").text
    statuses = {re.search(r'data-task-id="(\d+)"', r).group(1): status_of(r) for r in rows(html, "task")}
    assert statuses == {str(ids["out"]): "✖ failed", str(ids["manual"]): "✖ disabled", str(ids["flying"]): "▶ in flight"}
    assert 'data-status="disabled"' in html  # programs still read the stored code
    for page in ("/dashboard/task-types/fetch-mirror", "/dashboard/task-types/one-off", "/dashboard/task-types/load-git",
                 f"/dashboard/tasks/{ids['gone']}", f"/dashboard/tasks/{ids['out']}", f"/dashboard/tasks/{ids['mirror']}", "/"):
        said = shown(get(client, page).text)
        assert not [code for code in CODES if code in said], (page, said)


def test_a_task_its_runs_disabled_reads_failed_on_its_page(console):
    client, ids = console
    gone = get(client, f"/dashboard/tasks/{ids['gone']}").text
    assert text(re.search(r'<p id="next-run">.*?</p>', gone, flags=re.S).group(0)) == \
        "✖ failed · its last run failed for good: not run until respawned (ostinato task respawn, or Enable)"
    assert "✖ failed for good" in text(rows(gone, "run")[0])
    out = get(client, f"/dashboard/tasks/{ids['out']}").text
    assert text(re.search(r'<p id="next-run">.*?</p>', out, flags=re.S).group(0)).startswith(
        "✖ failed · its last run failed with no retry left")
    manual = get(client, f"/dashboard/tasks/{ids['manual']}").text
    assert text(re.search(r'<p id="next-run">.*?</p>', manual, flags=re.S).group(0)).startswith(
        "✖ disabled · disabled: not run until respawned")
    mirror = text(section(get(client, f"/dashboard/tasks/{ids['mirror']}").text, "task"))
    assert mirror.startswith(f"Task {ids['mirror']} ○ pending · ready since")
