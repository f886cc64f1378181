"""The dashboard in a real headless Chromium (Debian's ``chromium``, driven by Playwright through
``executable_path``: Playwright's own browsers are never downloaded), served by uvicorn on a free
port, at a phone's viewport and a desktop's: a person signs in with a read token and sees the
ERROR schedule first with its reason, the lag picture with its bars, and no sideways scrolling.
Screenshots are saved in the test's tmp_path (their paths printed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_helpers import VIEWPORTS, serve
from test_dashboard_helpers import STALE_TEXT, seed, seed_fire_times, tokens

from ostinato.api import create_app
from ostinato.config import Settings


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str]]:
    """The seeded store's API, served by uvicorn in a thread; its base URL and a read token's secret."""
    seed(sqlite_store, clock)
    secret = tokens(sqlite_store, clock)["read"]
    with serve(create_app(sqlite_store, Settings(), clock), "dashboard-uvicorn") as base:
        yield base, secret



@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_person_sees_the_error_first_and_the_lag_picture(served, chromium, screen, tmp_path):
    base, secret = served
    viewport = VIEWPORTS[screen]
    context = chromium.new_context(viewport=viewport, device_scale_factor=2 if screen == "phone" else 1,
                                   is_mobile=screen == "phone", has_touch=screen == "phone")
    try:
        page = context.new_page()
        answer = page.goto(f"{base}/")
        assert answer.status == 401 and page.get_by_label("Token secret").is_visible()
        assert page.locator("tr.schedule").count() == 0  # no token, no data
        page.get_by_label("Token secret").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/")
        assert page.title() == "✖ ERROR · Ostinato"

        first = page.locator("tr.schedule").first
        assert first.is_visible()
        seen = first.inner_text()
        assert "ERROR" in seen and "archive-old" in seen and STALE_TEXT in seen, seen
        assert first.get_attribute("data-state") == "ERROR"
        states = [row.get_attribute("data-state") for row in page.locator("tr.schedule").all()]
        assert states == ["ERROR", "ERROR", "WARNING", "WARNING", "OK", "OK"]

        picture = page.locator('svg.lag[data-visit-type="git"]')
        picture.scroll_into_view_if_needed()
        assert picture.is_visible()
        assert picture.get_attribute("role") == "img"
        assert picture.get_attribute("aria-label").startswith("Lag of the 7 git origins with pending changes")
        assert picture.locator("title").first.text_content() == "Lag histogram of git"
        bars = picture.locator("rect.bar")
        assert bars.count() == 4
        boxes = [bars.nth(i).bounding_box() for i in range(bars.count())]
        assert all(box and box["width"] > 1 and box["height"] > 1 for box in boxes), boxes
        longest = max(boxes, key=lambda box: box["width"])
        assert bars.nth(boxes.index(longest)).get_attribute("data-bucket") == "<1h"  # 3 origins: the longest bar

        failures = page.locator("tr.failure")
        assert failures.count() == 3 and "disk full on worker-3" in page.locator("#failures").inner_text()

        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= viewport["width"], f"{screen}: the page is {scroll_width} px wide"
        shot = tmp_path / f"dashboard-{screen}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        print(f"dashboard screenshot ({screen}, {viewport['width']}x{viewport['height']}): {shot}")
    finally:
        context.close()


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_person_follows_a_schedule_to_what_was_caught_up_and_skipped(served, chromium, sqlite_store, clock, screen,
                                                                      tmp_path):
    base, secret = served
    seed_fire_times(sqlite_store, clock)
    viewport = VIEWPORTS[screen]
    context = chromium.new_context(viewport=viewport, is_mobile=screen == "phone", has_touch=screen == "phone")
    try:
        page = context.new_page()
        page.goto(f"{base}/")
        page.get_by_label("Token secret").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/")
        page.get_by_role("link", name="beat-minutely").click()
        page.wait_for_url(f"{base}/dashboard/schedules/beat-minutely")
        assert page.title() == "✖ ERROR · beat-minutely · Ostinato"  # no beat has sent it for 8 minutes
        fire_times = page.locator("#fire-times")
        assert "run missed fire times, at most 3 (all:3)" in fire_times.inner_text()
        assert page.locator("#caught-up-count").inner_text() == "Caught up: 3"
        assert page.locator("#skipped-count").inner_text() == "Skipped: 7"
        rows = page.locator("tr.firing")
        assert [rows.nth(i).get_attribute("data-what") for i in range(rows.count())] == [
            "sent", "caught up", "caught up", "caught up", "skipped"]
        skipped = rows.last
        skipped.scroll_into_view_if_needed()
        assert skipped.is_visible() and "skipped 7 fire times" in skipped.inner_text()
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= viewport["width"], f"{screen}: the page is {scroll_width} px wide"
        shot = tmp_path / f"schedule-{screen}.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"schedule page screenshot ({screen}): {shot}")
        page.get_by_role("link", name="Ostinato").click()
        page.wait_for_url(f"{base}/")
    finally:
        context.close()
