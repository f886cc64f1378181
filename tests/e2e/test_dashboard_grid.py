"""The run grids over HTTP, on every store: a schedule's page and a task type's page each show their
newest 50 runs, a cell a run (oldest first, the newest last), its outcome a class, a symbol and a
title in words, a legend counting the outcomes, and each cell a link to its run that answers 200 with
the run's row; the schedule's run list pages back (``?before=``), bad input a 400 naming the field."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from fastapi.testclient import TestClient
from test_dashboard_helpers import MINUTE, periodic, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.clock import ManualClock
from ostinato.domain.schedules import RunStatus
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskRunStatus, TaskType
from ostinato.store import Store

#: a schedule's runs, oldest first, cycling through these outcomes (the last one left running)
SCHEDULE_CYCLE = [RunStatus.SUCCEEDED, RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.SUCCEEDED, RunStatus.LOST,
                  RunStatus.STOPPED, RunStatus.SUBMITTED]
SCHEDULE_RUNS = 56
TASK_CYCLE = [TaskRunStatus.EVENTFUL, TaskRunStatus.UNEVENTFUL, TaskRunStatus.FAILED, TaskRunStatus.EVENTFUL,
              TaskRunStatus.PERMFAILED, TaskRunStatus.LOST]
SCHEDULE_CLASS = {RunStatus.SUCCEEDED: "succeeded", RunStatus.SUBMITTED: "succeeded", RunStatus.FAILED: "failed",
                  RunStatus.LOST: "lost", RunStatus.STOPPED: "stopped", RunStatus.RUNNING: "running"}
TASK_CLASS = {TaskRunStatus.EVENTFUL: "succeeded", TaskRunStatus.UNEVENTFUL: "succeeded",
              TaskRunStatus.FAILED: "failed", TaskRunStatus.PERMFAILED: "failed", TaskRunStatus.LOST: "lost",
              TaskRunStatus.STARTED: "running", TaskRunStatus.SCHEDULED: "queued"}


def seed_grid(store: Store, clock: ManualClock) -> dict[str, list[tuple[int, str]]]:
    """``grid-job``, a schedule run about every minute 56 times (its last run still running), and ``grid-task``, a
    task type whose 12 tasks ran once each (the last two handed out: one started, one not), then a
    task of another type ran; ``grid-idle``, a task type without runs. Returns each one's runs, oldest first, as (id, status)."""
    start = clock.now() - timedelta(days=1)
    store.create_task_type(TaskType(type="load-git", description="Load git origins",
                                    backend_name="ostinato.examples:load_directory", default_interval=timedelta(days=1)))
    store.create_schedule(periodic("grid-job", start - MINUTE, MINUTE), start - MINUTE)
    schedule_runs: list[tuple[int, str]] = []
    at = start
    for number in range(SCHEDULE_RUNS):
        while (picked := store.pick_schedule(node="node-1", owner_name="grid", tag=f"grid-{number}", now=at)) is None:
            at += MINUTE  # after a failure, its retry's backoff
            assert at < clock.now(), number
        run = picked[1]
        if number == SCHEDULE_RUNS - 1:
            schedule_runs.append((run.id, RunStatus.RUNNING.value))
            break
        status = SCHEDULE_CYCLE[number % len(SCHEDULE_CYCLE)]
        assert store.end_schedule_run("grid-job", f"grid-{number}", status=status, ended=at + 20 * timedelta(seconds=1))
        schedule_runs.append((run.id, status.value))
        at += MINUTE

    store.create_task_type(TaskType(type="grid-task", description="Runs for the grid",
                                    backend_name="ostinato.examples:load_directory", default_interval=timedelta(days=1)))
    tasks = store.create_tasks([NewTask(type="grid-task", next_run=start, arguments=TaskArguments((f"t{i}",), {}))
                                for i in range(12)])
    task_runs = []
    for index in range(len(tasks)):
        at = start + index * MINUTE
        [grabbed] = store.grab_ready_tasks("grid-task", at, 1, backend_id="worker-1")
        if index == len(tasks) - 1:
            task_runs.append((grabbed.run.id, TaskRunStatus.SCHEDULED.value))
            break
        events = [RunEvent(grabbed.run.id, TaskRunStatus.STARTED, at + timedelta(seconds=5), "worker-1")]
        if index == len(tasks) - 2:
            task_runs.append((grabbed.run.id, TaskRunStatus.STARTED.value))
        else:
            status = TASK_CYCLE[index % len(TASK_CYCLE)]
            events.append(RunEvent(grabbed.run.id, status, at + 30 * timedelta(seconds=1)))
            task_runs.append((grabbed.run.id, status.value))
        store.record_run_events(events)
    store.create_task_type(TaskType(type="grid-idle", description="No runs", backend_name="ostinato.examples:load_directory",
                                    default_interval=timedelta(days=1)))
    store.create_task_type(TaskType(type="grid-other", description="Another type",
                                    backend_name="ostinato.examples:load_directory", default_interval=timedelta(days=1)))
    store.create_tasks([NewTask(type="grid-other", next_run=start, arguments=TaskArguments(("o",), {}))])
    [grabbed] = store.grab_ready_tasks("grid-other", start + 20 * MINUTE, 1)
    return {"schedule": schedule_runs, "task": task_runs, "other": [(grabbed.run.id, "scheduled")]}


@pytest.fixture
def gridded(store, clock):
    runs = seed_grid(store, clock)
    client = TestClient(create_app(store, Settings(), clock))
    client.headers["Authorization"] = f"Bearer {tokens(store, clock)['read']}"
    return client, runs


CELL = re.compile(r'<a class="cell outcome-([a-z]+)" href="([^"]+)" title="([^"]+)" aria-label="[^"]+" '
                  r'data-run-id="(\d+)" data-status="([a-z]+)">([^<]+)</a>')


def cells(html: str) -> list[tuple[str, str, str, int, str, str]]:
    grid = re.search(r'<ol class="run-grid".*?</ol>', html, flags=re.S)
    assert grid, "no run grid on the page"
    return [(outcome, unescape(href), unescape(title), int(run), status, symbol)
            for outcome, href, title, run, status, symbol in CELL.findall(grid.group(0))]


def test_a_schedules_grid_shows_its_newest_50_runs_each_linking_to_its_row(gridded):
    client, runs = gridded
    page = client.get("/dashboard/schedules/grid-job")
    assert page.status_code == 200 and "<script" not in page.text
    found = cells(page.text)
    newest = runs["schedule"][-50:]
    assert [(run, status) for _, _, _, run, status, _ in found] == newest  # oldest first, the newest last
    assert [outcome for outcome, *_ in found] == [SCHEDULE_CLASS[RunStatus(status)] for _, status in newest]
    assert found[-1][0] == "running" and found[-1][5] == "▶" and "running, started" in found[-1][2]
    assert found[0][2].startswith(f"run #{newest[0][0]}: {newest[0][1]}, ended ") and "after 20 s" in found[0][2]
    legend = re.search(r'<ul class="grid-legend".*?</ul>', page.text, flags=re.S).group(0)
    counted = dict(re.findall(r'data-outcome="([a-z]+)">.*?<strong>(\d+)</strong>', legend, flags=re.S))
    assert {k: int(v) for k, v in counted.items()} == {
        outcome: sum(1 for o, *_ in found if o == outcome) for outcome in {o for o, *_ in found}}
    # the runs the page lists link to their rows on it; the older ones to the page whose list starts there
    listed = [int(r) for r in re.findall(r'<tr class="run" id="run-(\d+)"', page.text)]
    assert listed == [run for run, _ in reversed(newest[-10:])]
    for _, href, _, run, _, _ in found:
        if run in listed:
            assert href == f"#run-{run}"
        else:
            assert href == f"/dashboard/schedules/grid-job?before={run + 1}#run-{run}"
    for _, href, _, run, _, _ in found[:: 7]:
        if href.startswith("/"):
            landed = client.get(href.split("#")[0])
            assert landed.status_code == 200 and f'<tr class="run" id="run-{run}"' in landed.text, href
            assert re.search(r'<tr class="run" id="run-(\d+)"', landed.text).group(1) == str(run)  # the first row


def test_a_schedules_runs_page_back(gridded):
    client, runs = gridded
    first = client.get("/dashboard/schedules/grid-job").text
    older = re.search(r'<a rel="next" href="([^"]+)">Older runs', first).group(1)
    assert older == f"/dashboard/schedules/grid-job?before={runs['schedule'][-10][0]}#runs"
    second = client.get(unescape(older).split("#")[0])
    listed = [int(r) for r in re.findall(r'<tr class="run" id="run-(\d+)"', second.text)]
    assert listed == [run for run, _ in reversed(runs["schedule"][-20:-10])]
    assert "Runs before #" in second.text and "⇤ Newest runs" in second.text
    last = client.get(f"/dashboard/schedules/grid-job?before={runs['schedule'][3][0]}").text
    assert len(re.findall(r'<tr class="run" id=', last)) == 3 and "Older runs" not in last
    assert "No older runs" in client.get(f"/dashboard/schedules/grid-job?before={runs['schedule'][0][0]}").text
    for bad in ("x", "0", "-3", "9" * 30):
        refused = client.get(f"/dashboard/schedules/grid-job?before={bad}")
        assert refused.status_code == 400 and "before: expected a whole number" in unescape(refused.text), bad


def test_a_task_types_grid_shows_its_runs_each_linking_to_its_task(gridded):
    client, runs = gridded
    page = client.get("/dashboard/task-types/grid-task")
    assert page.status_code == 200
    found = cells(page.text)
    assert [(run, status) for _, _, _, run, status, _ in found] == runs["task"]  # not grid-other's run
    assert [outcome for outcome, *_ in found] == [TASK_CLASS[TaskRunStatus(status)] for _, status in runs["task"]]
    assert [outcome for outcome, *_ in found[-2:]] == ["running", "queued"]
    assert "among the newest 10,000 runs of every type" in page.text
    for _, href, _, run, _, _ in found:
        assert href == f"/dashboard/task-runs/{run}"
        landed = client.get(href)
        assert landed.status_code == 200 and f'id="run-{run}"' in landed.text, href
        assert re.search(rf"/dashboard/tasks/\d+#run-{run}$", str(landed.url)), landed.url
    idle = client.get("/dashboard/task-types/grid-idle").text
    assert 'id="no-grid"' in idle and '<ol class="run-grid"' not in idle


def test_a_cell_of_a_task_with_many_runs_lands_on_its_row(store, clock):
    """A task that ran 25 times: its task page lists its newest 20, so the link of an older run leads to
    the page of its runs that starts at it."""
    store.create_task_type(TaskType(type="busy", description="One task, many runs",
                                    backend_name="ostinato.examples:load_directory", default_interval=timedelta(days=1)))
    start = clock.now() - timedelta(days=60)
    [task] = store.create_tasks([NewTask(type="busy", next_run=start, arguments=TaskArguments(("b",), {}))])
    for number in range(25):
        at = start + 2 * number * timedelta(days=1)
        [grabbed] = store.grab_ready_tasks("busy", at, 1, backend_id="worker-1")
        store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.STARTED, at, "worker-1"),
                                 RunEvent(grabbed.run.id, TaskRunStatus.UNEVENTFUL, at + MINUTE)])
    client = TestClient(create_app(store, Settings(), clock))
    client.headers["Authorization"] = f"Bearer {tokens(store, clock)['read']}"
    found = cells(client.get("/dashboard/task-types/busy").text)
    assert len(found) == 25
    for _, href, _, run, _, _ in (found[0], found[4], found[5], found[-1]):
        landed = client.get(href)
        assert landed.status_code == 200 and f'id="run-{run}"' in landed.text, (href, landed.url)
        assert str(landed.url).endswith(f"#run-{run}") and f"/dashboard/tasks/{task.id}" in str(landed.url)
