"""The console's task type and task pages over HTTP, on every store: task statuses said in words
(``pending``, not ``next_run_not_scheduled``), a task its runs disabled read as ``failed`` (a
one-shot task out of retries, a run failed for good) while one a person disabled reads
``disabled``; a task type's page shows its recent failures (as many as the main page counts beside
it, each with its error and leading to its task's run) and the schedules that run it, in bounded
reads. And in Chromium: from the main page's count of failures to the type's failures to the run."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from browser_helpers import VIEWPORTS, keep_screenshot, serve
from fastapi.testclient import TestClient
from test_dashboard_drill import TRACEBACK, get, hrefs, rows, section, seed_drill, text
from test_dashboard_helpers import DAY, MINUTE, periodic, seed, tokens

from ostinato.api import create_app
from ostinato.api.console import gather_tasks
from ostinato.config import Settings
from ostinato.domain.schedules import RunMode
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


def seed_mirror_schedule(store, clock) -> None:
    """``mirror-nightly``, a schedule whose job is a ``fetch-mirror`` task (submit mode)."""
    now = clock.now()
    store.create_schedule(replace(periodic("mirror-nightly", now, DAY, mode=RunMode.SUBMIT), task_type="fetch-mirror"), now)


@pytest.fixture
def console(store, clock):
    seed(store, clock)
    ids = seed_drill(store, clock)
    ids |= seed_statuses(store, clock)
    seed_mirror_schedule(store, clock)
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


def test_a_task_type_shows_its_recent_failures(console, monkeypatch):
    client, ids = console
    main = get(client, "/").text
    counted = {re.search(r'data-task-type="([^"]+)"', r).group(1): text(r).split()[-1] for r in rows(main, "task-type")}
    assert counted["fetch-mirror"] == "2" and counted["load-git"] == "2" and counted["load-hg"] == "0"

    html = get(client, "/dashboard/task-types/fetch-mirror").text
    failures = section(html, "failures")
    assert "✖ 2 failed, failed-for-good or lost runs among the newest 10,000 runs of every type" in text(failures)
    found = rows(failures, "failure")
    assert [re.search(r'data-run-id="(\d+)"', r).group(1) for r in found] == [str(ids["permfailed"]), str(ids["failed"])]
    gone, mirror = found
    assert "✖ failed for good" in text(gone) and "no file here" in text(gone)
    assert f'/dashboard/tasks/{ids["gone"]}#run-{ids["permfailed"]}' in hrefs(gone)
    assert f'/dashboard/tasks/{ids["mirror"]}#run-{ids["failed"]}' in hrefs(mirror)
    assert f'/dashboard/tasks/{ids["mirror"]}' in hrefs(mirror)  # its task
    assert status_of(mirror) == "✖ failed" and '<code class="error-type">OSError</code>' in mirror
    assert "[Errno 28] No space left on device" in text(mirror)
    [frames] = re.findall(r'<pre class="traceback">(.*?)</pre>', mirror, flags=re.S)
    assert frames.split("\n") == [f"at {frame}" for frame in TRACEBACK]

    git = rows(section(get(client, "/dashboard/task-types/load-git").text, "failures"), "failure")
    assert [status_of(r) for r in git] == ["✖ lost", "✖ failed"] and "disk full on worker-3" in text(git[1])
    calm = text(section(get(client, "/dashboard/task-types/load-hg").text, "failures"))
    assert calm == "Recent failures ✔ No failed, failed-for-good or lost run among the newest 10,000 runs of every type."

    monkeypatch.setattr(gather_tasks, "FAILURES_SHOWN", 1)
    one = section(get(client, "/dashboard/task-types/fetch-mirror").text, "failures")
    assert len(rows(one, "failure")) == 1 and "runs of every type: the newest 1, newest first." in text(one)
    monkeypatch.setattr(gather_tasks, "FAILURES_READ", 1)  # the newest failed run of all is another type's
    cut = text(section(get(client, "/dashboard/task-types/load-git").text, "failures"))
    assert "Older ones are not listed: the newest 1 failed runs of every type were read to find them." in cut


def test_a_task_type_shows_the_schedules_that_run_it(console, monkeypatch):
    client, _ = console
    mirror = section(get(client, "/dashboard/task-types/fetch-mirror").text, "schedules")
    [row] = rows(mirror, "schedule")
    assert 'data-name="mirror-nightly"' in row and "/dashboard/schedules/mirror-nightly" in hrefs(row)
    assert "✔ OK" in text(row)
    git = rows(section(get(client, "/dashboard/task-types/load-git").text, "schedules"), "schedule")
    names = [re.search(r'data-name="([^"]+)"', r).group(1) for r in git]
    assert names[:2] == ["archive-old", "bills-ca"] and set(names) == {  # worst first, as on the main page
        "archive-old", "bills-ca", "flaky-sync", "paused-job", "aaa-daily", "zzz-daily"}
    assert text(section(get(client, "/dashboard/task-types/load-hg").text, "schedules")) == \
        "Schedules that run it No schedule runs it."

    monkeypatch.setattr(gather_tasks, "SCHEDULES_PAGE", 2)  # read in pages: all found
    assert len(rows(section(get(client, "/dashboard/task-types/load-git").text, "schedules"), "schedule")) == 6
    monkeypatch.setattr(gather_tasks, "SCHEDULES_READ", 3)  # a bound: said, not hidden
    cut = section(get(client, "/dashboard/task-types/fetch-mirror").text, "schedules")
    assert text(cut) == "Schedules that run it No schedule runs it among the first 3 by name."


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str, dict[str, int]]]:
    seed(sqlite_store, clock)
    ids = seed_drill(sqlite_store, clock)
    seed_mirror_schedule(sqlite_store, clock)
    secret = tokens(sqlite_store, clock)["read"]
    with serve(create_app(sqlite_store, Settings(), clock), "task-types-uvicorn") as base:
        yield base, secret, ids


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_person_goes_from_a_failure_count_to_the_failed_run(served, chromium, screen, tmp_path):
    base, secret, ids = served
    width = VIEWPORTS[screen]["width"]
    context = chromium.new_context(viewport=VIEWPORTS[screen], extra_http_headers={"Authorization": f"Bearer {secret}"})
    try:
        page = context.new_page()
        page.goto(f"{base}/")
        row = page.locator('tr.task-type[data-task-type="fetch-mirror"]')
        assert row.locator('td[data-label="Failed"]').inner_text().strip() == "✖ 2"
        row.get_by_role("link", name="fetch-mirror").click()
        page.wait_for_url(f"{base}/dashboard/task-types/fetch-mirror")
        failures = page.locator("#failures tr.failure")
        assert failures.count() == 2 and failures.first.is_visible()
        assert "no file here" in failures.first.inner_text()
        assert page.locator("#schedules tr.schedule").count() == 1
        assert "mirror-nightly" in page.locator("#schedules").inner_text()
        statuses = page.locator("#tasks tr.task td[data-label=Status]").all_inner_texts()
        assert [s.strip() for s in statuses] == ["○ pending", "✖ failed"]
        keep_screenshot(page, tmp_path, f"task-type-failures-{width}", width)
        failures.nth(1).get_by_role("link", name=f"run #{ids['failed']}").click()
        page.wait_for_url(f"{base}/dashboard/tasks/{ids['mirror']}#run-{ids['failed']}")
        assert page.locator(f"#run-{ids['failed']}").is_visible()
    finally:
        context.close()
