"""The dashboard's admin actions in a real headless Chromium (Debian's ``chromium`` through Playwright, as
in test_dashboard_browser.py), served by uvicorn, at a phone's viewport and a desktop's: an admin signs
in, pauses, resumes and runs now a schedule by its buttons and sees each recorded on the page and on
the main page; retries a failed task run on its task's page; a read session sees no button.
The forms go through the browser's own Origin and the session's CSRF token, as a person's would.
Screenshots are saved in the test's tmp_path and, when ``OSTINATO_SCREENSHOTS`` names a directory,
there too, as ``actions-<name>-<width>.png``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import VIEWPORTS, keep_screenshot, serve
from playwright.sync_api import Page
from test_dashboard_helpers import HOUR, MINUTE, seed, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskPolicy, TaskRunStatus, TaskStatus


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, dict[str, str]]]:
    """The seeded store's API, served by uvicorn in a thread; its base URL and the tokens' secrets by scope."""
    seed(sqlite_store, clock)
    secrets = tokens(sqlite_store, clock)
    with serve(create_app(sqlite_store, Settings(), clock), "dashboard-actions-uvicorn") as base:
        yield base, secrets



def sign_in(page: Page, base: str, secret: str) -> None:
    page.goto(f"{base}/")
    page.get_by_label("Token secret").fill(secret)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")


def screenshot(page: Page, tmp_path: Path, name: str, width: int) -> None:
    """The whole page, in tmp_path and in $OSTINATO_SCREENSHOTS if set; and no sideways scrolling."""
    keep_screenshot(page, tmp_path, f"actions-{name}-{width}", width)


def audit_actions(page: Page) -> list[str]:
    rows = page.locator("#actions tr.audit-event")
    actions = [rows.nth(i).get_attribute("data-action") for i in range(rows.count())]
    return [a for a in actions if a != "token.add"]  # the tests' own tokens


def context_for(chromium, screen: str):
    return chromium.new_context(viewport=VIEWPORTS[screen], device_scale_factor=2 if screen == "phone" else 1,
                                is_mobile=screen == "phone", has_touch=screen == "phone")


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_an_admin_pauses_resumes_and_runs_now_a_schedule(served, chromium, sqlite_store, clock, screen, tmp_path):
    base, secrets = served
    width = VIEWPORTS[screen]["width"]
    context = context_for(chromium, screen)
    try:
        page = context.new_page()
        sign_in(page, base, secrets["admin"])
        page.get_by_role("link", name="aaa-daily").click()
        page.wait_for_url(f"{base}/dashboard/schedules/aaa-daily")
        actions = page.locator("#actions")
        assert "No action recorded yet" in actions.inner_text()

        actions.get_by_role("button", name="Pause").click()
        page.wait_for_url(f"{base}/dashboard/schedules/aaa-daily?done=paused#actions")
        assert "Paused: no scheduler starts it until it is resumed" in page.get_by_role("status").inner_text()
        assert sqlite_store.get_schedule("aaa-daily").enabled is False
        assert "paused" in page.locator("#condition").inner_text()
        assert actions.get_by_role("button", name="Run now").count() == 0  # not while paused
        assert audit_actions(page) == ["schedule.pause"]

        clock.advance(MINUTE)
        actions.get_by_role("button", name="Resume").click()
        page.wait_for_url(f"{base}/dashboard/schedules/aaa-daily?done=resumed#actions")
        assert sqlite_store.get_schedule("aaa-daily").enabled is True

        clock.advance(MINUTE)
        actions.get_by_role("button", name="Run now").click()
        page.wait_for_url(f"{base}/dashboard/schedules/aaa-daily?done=run-requested#actions")
        assert "Run asked for" in page.get_by_role("status").inner_text()
        assert sqlite_store.get_schedule("aaa-daily").run_requested_at == clock.now()
        assert audit_actions(page) == ["schedule.run-now", "schedule.resume", "schedule.pause"]
        newest = page.locator("#actions tr.audit-event").first
        newest.scroll_into_view_if_needed()
        assert newest.is_visible()
        seen = newest.inner_text()
        assert "dashboard-admin" in seen and "schedule.run-now" in seen and "done: a run asked for now" in seen, seen
        screenshot(page, tmp_path, "schedule-admin", width)

        page.get_by_role("link", name="Ostinato").first.click()
        page.wait_for_url(f"{base}/")
        assert audit_actions(page) == ["schedule.run-now", "schedule.resume", "schedule.pause"]
        link = page.locator("#actions tr.audit-event").first.get_by_role("link", name="schedule:aaa-daily")
        link.scroll_into_view_if_needed()
        assert link.is_visible()
        screenshot(page, tmp_path, "dashboard-admin", width)
        assert [(e.actor, e.action) for e in sqlite_store.list_audit() if e.action != "token.add"] == [
            ("dashboard-admin", "schedule.run-now"), ("dashboard-admin", "schedule.resume"),
            ("dashboard-admin", "schedule.pause")]
    finally:
        context.close()


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_an_admin_retries_a_failed_run_on_its_tasks_page(served, chromium, sqlite_store, clock, screen, tmp_path):
    base, secrets = served
    width = VIEWPORTS[screen]["width"]
    now = clock.now()
    [task] = sqlite_store.create_tasks([NewTask(type="load-hg", next_run=now - HOUR, policy=TaskPolicy.ONESHOT,
                                                arguments=TaskArguments(("https://hg.example/once",), {}))])
    [grabbed] = sqlite_store.grab_ready_tasks("load-hg", now - 30 * MINUTE, 1)
    sqlite_store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.FAILED, now - 20 * MINUTE,
                                             metadata={"error": "hg: abort: no repository found"})])
    context = context_for(chromium, screen)
    try:
        page = context.new_page()
        sign_in(page, base, secrets["admin"])
        page.goto(f"{base}/dashboard/tasks/{task.id}")
        row = page.locator(f"#run-{grabbed.run.id}")
        retry = row.get_by_role("button", name="Retry")
        retry.scroll_into_view_if_needed()
        assert retry.is_visible()
        retry.click()
        page.wait_for_url(f"{base}/dashboard/tasks/{task.id}?done=retried#actions")
        assert "Retry asked for" in page.get_by_role("status").inner_text()
        after = sqlite_store.get_tasks([task.id])[0]
        assert after.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED and after.next_run == clock.now()
        assert audit_actions(page) == ["task.retry"]
        assert page.locator("#actions").get_by_role("button", name="Disable").is_visible()
        assert page.locator(f"#run-{grabbed.run.id}").get_by_role("button", name="Retry").count() == 0
        screenshot(page, tmp_path, "task-admin", width)
    finally:
        context.close()


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_read_session_sees_no_button(served, chromium, sqlite_store, screen, tmp_path):
    base, secrets = served
    width = VIEWPORTS[screen]["width"]
    context = context_for(chromium, screen)
    try:
        page = context.new_page()
        sign_in(page, base, secrets["read"])
        page.goto(f"{base}/dashboard/schedules/aaa-daily")
        actions = page.locator("#actions")
        assert actions.is_visible() and "No action recorded yet" in actions.inner_text()
        assert actions.locator("button").count() == 0 and page.locator("input[name=csrf]").count() == 0
        screenshot(page, tmp_path, "schedule-read", width)
        failed = sqlite_store.list_task_runs(status=[TaskRunStatus.FAILED])[0]
        sqlite_store.set_task_status([failed.task], TaskStatus.DISABLED)  # an admin would see Enable and Retry
        page.goto(f"{base}/dashboard/tasks/{failed.task}")
        assert page.locator("#actions").is_visible()
        assert page.locator("main button").count() == 0 and page.locator("input[name=csrf]").count() == 0
    finally:
        context.close()


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_an_admin_disables_and_enables_a_task(served, chromium, sqlite_store, clock, screen, tmp_path):
    base, secrets = served
    [task] = sqlite_store.create_tasks([NewTask(type="load-hg", next_run=clock.now() + HOUR,
                                                arguments=TaskArguments(("https://hg.example/toggle",), {}))])
    context = context_for(chromium, screen)
    try:
        page = context.new_page()
        sign_in(page, base, secrets["admin"])
        page.goto(f"{base}/dashboard/tasks/{task.id}")
        page.locator("#actions").get_by_role("button", name="Disable").click()
        page.wait_for_url(f"{base}/dashboard/tasks/{task.id}?done=disabled#actions")
        assert sqlite_store.get_tasks([task.id])[0].status is TaskStatus.DISABLED
        page.locator("#actions").get_by_role("button", name="Enable").click()
        page.wait_for_url(f"{base}/dashboard/tasks/{task.id}?done=enabled#actions")
        assert sqlite_store.get_tasks([task.id])[0].status is TaskStatus.NEXT_RUN_NOT_SCHEDULED
        assert audit_actions(page) == ["task.enable", "task.disable"]
    finally:
        context.close()
    context = context_for(chromium, screen)  # the same page for a read session: the trail, no button
    try:
        page = context.new_page()
        sign_in(page, base, secrets["read"])
        page.goto(f"{base}/dashboard/tasks/{task.id}")
        assert audit_actions(page) == ["task.enable", "task.disable"] and page.locator("main button").count() == 0
    finally:
        context.close()
