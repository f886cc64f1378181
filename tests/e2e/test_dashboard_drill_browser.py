"""The dashboard's drill-down pages in a real headless Chromium (Debian's ``chromium``, driven by
Playwright through ``executable_path``), at a phone's viewport and a desktop's: a person signs in,
follows the links from the main page down to an origin (visit type, lister, origin: why its next
visit comes when it does) and down to a task's failed run (task type, task: the run's error and
traceback), and no page scrolls sideways. A screenshot of each page at each width is saved in the
test's tmp_path and, when ``OSTINATO_SCREENSHOTS`` names a directory, there too, as
``<page>-<width>.png``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import VIEWPORTS, keep_screenshot, serve
from playwright.sync_api import Page
from test_dashboard_drill import TRACEBACK, seed_drill
from test_dashboard_helpers import seed, tokens

from ostinato.api import create_app
from ostinato.config import Settings


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str, dict[str, int]]]:
    """The seeded store's API, served by uvicorn in a thread: its base URL, a read token's secret, the seed's ids."""
    seed(sqlite_store, clock)
    ids = seed_drill(sqlite_store, clock)
    secret = tokens(sqlite_store, clock)["read"]
    with serve(create_app(sqlite_store, Settings(), clock), "dashboard-drill-uvicorn") as base:
        yield base, secret, ids



def look(page: Page, name: str, width: int, tmp_path: Path) -> None:
    """No sideways scrolling at this width; a screenshot of the whole page, where the test keeps it
    (and in $OSTINATO_SCREENSHOTS, when set)."""
    keep_screenshot(page, tmp_path, f"{name}-{width}", width)


def signed_in(chromium, screen: str, base: str, secret: str):
    viewport = VIEWPORTS[screen]
    context = chromium.new_context(viewport=viewport, device_scale_factor=2 if screen == "phone" else 1,
                                   is_mobile=screen == "phone", has_touch=screen == "phone")
    page = context.new_page()
    page.goto(f"{base}/")
    page.get_by_label("Token secret").fill(secret)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")
    return context, page


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_person_follows_the_links_down_to_an_origin(served, chromium, screen, tmp_path):
    base, secret, ids = served
    width = VIEWPORTS[screen]["width"]
    context, page = signed_in(chromium, screen, base, secret)
    try:
        page.locator("#visit-types").get_by_role("link", name="git", exact=True).click()
        page.wait_for_url(f"{base}/dashboard/visit-types/git")
        assert page.title() == "visit type git · Ostinato"
        assert page.locator('svg.lag[data-visit-type="git"]').is_visible()
        assert page.locator("tr.lister").count() == 1
        look(page, "visit-type", width, tmp_path)

        page.locator("#listers").get_by_role("link", name="github", exact=True).click()
        page.wait_for_url(f"{base}/dashboard/listers/{ids['lister']}?visit_type=git")
        assert page.locator("tr.origin").count() == 10
        look(page, "lister", width, tmp_path)

        origin = page.get_by_role("link", name="https://forge.example/5", exact=True)
        origin.scroll_into_view_if_needed()
        origin.click()
        page.wait_for_url(f"{base}/dashboard/origins?url=https%3A%2F%2Fforge.example%2F5&visit_type=git")
        why = page.locator("#why")
        assert why.is_visible() and why.get_attribute("data-state") == "cooling down"
        said = why.inner_text()
        assert "In cooldown until" in said and "then: changes pending since last_update" in said, said
        assert page.locator("tr.policy").count() == 3
        look(page, "origin", width, tmp_path)

        page.goto(f"{base}/dashboard/origins?url=https%3A%2F%2Fforge.example%2Frated&visit_type=git")
        assert "changes a day" in page.locator("#rate").inner_text()
        assert page.locator("tr.belief").count() >= 2
        look(page, "origin-rated", width, tmp_path)
    finally:
        context.close()


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_person_follows_the_links_down_to_a_failed_run(served, chromium, screen, tmp_path):
    base, secret, ids = served
    width = VIEWPORTS[screen]["width"]
    context, page = signed_in(chromium, screen, base, secret)
    try:
        task_type = page.locator("#task-types").get_by_role("link", name="fetch-mirror", exact=True)
        task_type.scroll_into_view_if_needed()
        task_type.click()
        page.wait_for_url(f"{base}/dashboard/task-types/fetch-mirror")
        assert page.locator("tr.task").count() == 2
        look(page, "task-type", width, tmp_path)

        page.get_by_role("link", name=f"#{ids['mirror']}", exact=True).click()
        page.wait_for_url(f"{base}/dashboard/tasks/{ids['mirror']}")
        assert page.title() == f"task {ids['mirror']} · Ostinato"
        runs = page.locator("tr.run")
        assert [runs.nth(i).get_attribute("data-status") for i in range(runs.count())] == [
            "failed", "uneventful", "eventful"]
        failed = page.locator(f"#run-{ids['failed']}")
        failed.scroll_into_view_if_needed()
        assert failed.is_visible()
        seen = failed.inner_text()
        assert "OSError" in seen and "No space left on device" in seen and f"at {TRACEBACK[-1]}" in seen, seen
        look(page, "task", width, tmp_path)

        page.goto(f"{base}/")  # the main page's recent failures lead to the run's row on its task's page
        failure = page.locator("#failures").get_by_role("link", name=f"task run #{ids['failed']}", exact=True)
        failure.scroll_into_view_if_needed()
        failure.click()
        page.wait_for_url(f"{base}/dashboard/tasks/{ids['mirror']}#run-{ids['failed']}")
        assert page.locator(f"#run-{ids['failed']}").is_visible()

        missing = page.goto(f"{base}/dashboard/tasks/4242")
        assert missing.status == 404 and "No task numbered 4242" in page.locator("main").inner_text()
        look(page, "not-found", width, tmp_path)
    finally:
        context.close()
