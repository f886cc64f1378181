"""The run grids in a real headless Chromium (Debian's ``chromium`` through Playwright), at a phone's
width and a desktop's: a schedule's page shows its newest 50 runs as cells coloured by outcome, with
a legend, and a click on a cell lands on that run's row (on the page, or on the page of older runs);
a task type's page shows its runs, and a click lands on the run's row on its task's page. No page
scrolls sideways. Screenshots go to the test's tmp_path, and to ``$OSTINATO_SCREENSHOTS`` when set."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_helpers import VIEWPORTS, keep_screenshot, serve
from test_dashboard_grid import SCHEDULE_CLASS, TASK_CLASS, seed_grid
from test_dashboard_helpers import tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.schedules import RunStatus
from ostinato.domain.tasks import TaskRunStatus


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str, dict]]:
    runs = seed_grid(sqlite_store, clock)
    secret = tokens(sqlite_store, clock)["read"]
    with serve(create_app(sqlite_store, Settings(), clock), "grid-uvicorn") as base:
        yield base, secret, runs


def background(locator) -> str:
    return locator.evaluate("e => getComputedStyle(e).backgroundColor")


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_person_reads_the_run_grids_and_follows_a_cell(served, chromium, screen, tmp_path):
    base, secret, runs = served
    viewport = VIEWPORTS[screen]
    context = chromium.new_context(viewport=viewport, is_mobile=screen == "phone", has_touch=screen == "phone")
    try:
        page = context.new_page()
        page.goto(f"{base}/")
        page.get_by_label("Token secret").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/")

        # a schedule's grid: its newest 50 runs, oldest first, each cell's class its outcome
        answer = page.goto(f"{base}/dashboard/schedules/grid-job")
        assert answer is not None and answer.status == 200
        grid = page.locator("ol.run-grid a.cell")
        assert grid.count() == 50
        newest = runs["schedule"][-50:]
        for index in (0, 2, 47, 49):
            run, status = newest[index]
            cell = grid.nth(index)
            assert cell.get_attribute("class") == f"cell outcome-{SCHEDULE_CLASS[RunStatus(status)]}"
            assert cell.get_attribute("data-run-id") == str(run) and cell.is_visible()
        failed = page.locator("ol.run-grid a.cell.outcome-failed").first
        succeeded = page.locator("ol.run-grid a.cell.outcome-succeeded").first
        assert background(failed) != background(succeeded)
        legend = page.locator("ul.grid-legend")
        assert legend.is_visible() and "failed:" in legend.inner_text() and "running:" in legend.inner_text()
        assert background(legend.locator(".cell.outcome-failed")) == background(failed)
        keep_screenshot(page, tmp_path, f"grid-schedule-{screen}", viewport["width"])

        # a run the page lists: its row on the page; an older one: the page of runs starting there
        recent, status = newest[-3]
        grid.nth(47).click()
        page.wait_for_url(f"{base}/dashboard/schedules/grid-job#run-{recent}")
        assert page.locator(f"#run-{recent}").is_visible()
        oldest, status = newest[0]
        with page.expect_navigation() as navigation:
            page.locator("ol.run-grid a.cell").first.click()
        assert navigation.value is not None and navigation.value.status == 200
        assert page.url == f"{base}/dashboard/schedules/grid-job?before={oldest + 1}#run-{oldest}"
        row = page.locator(f"#run-{oldest}")
        assert row.is_visible() and row.get_attribute("data-status") == status
        assert page.locator("#run-table tr.run").first.get_attribute("id") == f"run-{oldest}"

        # a task type's grid: a click lands on the run's row on its task's page
        page.goto(f"{base}/dashboard/task-types/grid-task")
        cells = page.locator("ol.run-grid a.cell")
        assert cells.count() == len(runs["task"])
        index = next(i for i, (_, s) in enumerate(runs["task"]) if s == TaskRunStatus.FAILED.value)
        run, status = runs["task"][index]
        assert cells.nth(index).get_attribute("class") == f"cell outcome-{TASK_CLASS[TaskRunStatus(status)]}"
        keep_screenshot(page, tmp_path, f"grid-task-type-{screen}", viewport["width"])
        with page.expect_navigation() as navigation:
            cells.nth(index).click()
        assert navigation.value is not None and navigation.value.status == 200
        assert page.url.endswith(f"#run-{run}") and "/dashboard/tasks/" in page.url
        assert page.locator(f"#run-{run}").is_visible()
    finally:
        context.close()
