"""A failed run's traceback, in whatever shape it was kept (an embedded worker's frames, the lines
Python printed as a list, or one text), reads as lines of text, never as a Python list: on the
console's main page (recent failures), a schedule's page and a task's page (over HTTP, on every
store, and in Chromium), and in ``task show --runs``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from html import unescape

import pytest
from browser_helpers import serve
from cli_helpers import ok
from fastapi.testclient import TestClient
from test_dashboard_drill import rows, section, text
from test_dashboard_helpers import MINUTE, periodic, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.schedules import RunStatus
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskPolicy, TaskRunStatus, TaskType
from ostinato.store import open_store

#: a traceback as a list of the lines Python printed (as some workers report it)
PRINTED = ["Traceback (most recent call last):\n", '  File "/srv/jobs.py", line 12, in sync\n', "    fetch(url)\n",
           "ValueError: no such host\n"]
#: the same, as one text (as a schedule's job may report it)
TEXT = "".join(PRINTED)
LINES = [line.rstrip("\n") for line in PRINTED]
#: an embedded worker's frames, innermost last
FRAMES = ["jobs.py:12 in sync: fetch(url)", "net.py:40 in fetch: raise ValueError(host)"]


def seed_tracebacks(store, now) -> dict[str, int]:
    """Task type ``sync``: a task whose run failed with the printed lines, one whose run failed with
    frames; schedule ``nightly-sync`` whose run failed with the text. Ids by name."""
    store.create_task_type(TaskType(type="sync", description="Sync", backend_name="jobs:sync"))
    printed, framed = store.create_tasks([NewTask(type="sync", next_run=now - 5 * MINUTE, policy=TaskPolicy.ONESHOT,
                                                  arguments=TaskArguments((n,), {})) for n in range(2)])
    ids = {"printed": printed.id, "framed": framed.id}
    for name, traceback in (("printed", PRINTED), ("framed", FRAMES)):
        [grabbed] = store.grab_ready_tasks("sync", now - 4 * MINUTE, 1)
        assert grabbed.task.id == ids[name]
        store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.FAILED, now - 3 * MINUTE,
                                          metadata={"error": "ValueError: no such host", "traceback": traceback})])
        ids[f"{name}_run"] = grabbed.run.id
    store.create_schedule(periodic("nightly-sync", now - 2 * timedelta(hours=1), timedelta(days=1)),
                          now - 2 * timedelta(hours=1))
    assert store.pick_schedules(node="node-1", owner_name="scheduler-a", tags=["tag-sync"], now=now - 10 * MINUTE)
    assert store.end_schedule_run("nightly-sync", "tag-sync", status=RunStatus.FAILED, ended=now - 9 * MINUTE,
                                  detail={"error": "ValueError: no such host", "traceback": TEXT, "tries": 2})
    return ids


@pytest.fixture
def console(store, clock):
    ids = seed_tracebacks(store, clock.now())
    client = TestClient(create_app(store, Settings(), clock))
    client.headers["Authorization"] = f"Bearer {tokens(store, clock)['read']}"
    return client, ids


def get(client: TestClient, path: str) -> str:
    """The page (the drill-down tests' ``get`` refuses a page with "Traceback" in it: these show one)."""
    answer = client.get(path)
    assert answer.status_code == 200, (path, answer.status_code)
    return answer.text


def tracebacks(html: str) -> list[list[str]]:
    """The lines of each ``<pre class="traceback">`` of a piece of a page."""
    return [unescape(found).split("\n") for found in re.findall(r'<pre class="traceback">(.*?)</pre>', html, flags=re.S)]


def test_the_main_page_shows_each_traceback_as_lines(console):
    client, ids = console
    failures = section(get(client, "/"), "failures")
    assert "[&#39;" not in failures and "['" not in unescape(failures)
    by_run = {re.search(r"(task|schedule) run #(\d+)", text(row)).group(2): row for row in rows(failures, "failure")}
    assert tracebacks(by_run[str(ids["printed_run"])]) == [LINES]
    assert tracebacks(by_run[str(ids["framed_run"])]) == [[f"at {frame}" for frame in FRAMES]]
    [schedule_row] = [row for row in rows(failures, "failure") if "nightly-sync" in row]
    assert tracebacks(schedule_row) == [LINES]
    assert "error: ValueError: no such host; tries: 2" in text(schedule_row)


def test_a_schedule_page_and_a_task_page_show_the_traceback_as_lines(console):
    client, ids = console
    [run] = rows(get(client, "/dashboard/schedules/nightly-sync"), "run")
    assert tracebacks(run) == [LINES] and "result: tries=2" in text(run)
    [run] = rows(get(client, f"/dashboard/tasks/{ids['printed']}"), "run")
    assert tracebacks(run) == [LINES]
    [run] = rows(get(client, f"/dashboard/tasks/{ids['framed']}"), "run")
    assert tracebacks(run) == [[f"at {frame}" for frame in FRAMES]]


def test_task_show_prints_the_traceback_as_lines(fresh_url, clock):
    ok(fresh_url, "db", "init")
    store = open_store(fresh_url)
    try:
        ids = seed_tracebacks(store, clock.now())
    finally:
        store.close()
    out = ok(fresh_url, "task", "show", str(ids["printed"]), "--runs").output
    assert "\n".join(f"        {line}" for line in LINES) in out, out
    assert "['" not in out


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str, dict[str, int]]]:
    ids = seed_tracebacks(sqlite_store, clock.now())
    secret = tokens(sqlite_store, clock)["read"]
    with serve(create_app(sqlite_store, Settings(), clock), "tracebacks-uvicorn") as base:
        yield base, secret, ids


@pytest.mark.parametrize("width", [1280, 390])
def test_a_person_reads_the_traceback_as_lines(served, chromium, width):
    base, secret, ids = served
    context = chromium.new_context(viewport={"width": width, "height": 900},
                                   extra_http_headers={"Authorization": f"Bearer {secret}"})
    try:
        page = context.new_page()
        for path in ("/", "/dashboard/schedules/nightly-sync", f"/dashboard/tasks/{ids['printed']}"):
            page.goto(f"{base}{path}")
            shown = page.locator("pre.traceback").filter(has_text="Traceback (most recent call last):").first
            shown.scroll_into_view_if_needed()
            assert shown.is_visible(), path
            assert shown.inner_text().split("\n") == LINES, (path, shown.inner_text())
            # each line of its own, as printed: the box is at least as many lines high
            line_height = float(shown.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
            assert shown.bounding_box()["height"] >= len(LINES) * line_height - 1, path
            assert "['" not in page.locator("main").inner_text(), path
            assert page.evaluate("document.documentElement.scrollWidth") <= width, path
    finally:
        context.close()
