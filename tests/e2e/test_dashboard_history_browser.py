"""The console's history in a real headless Chromium (Debian's ``chromium`` through Playwright), at a
phone's width and a desktop's: after three hours of history passes, a signed-in person opens the
history, sees every series' charts drawn (lines with a size, a text description, the latest, lowest
and highest values written beside each), switches window,
narrows to one series, and the page never scrolls sideways. Screenshots go to the test's tmp_path, and
to ``$OSTINATO_SCREENSHOTS`` when set (the docs' pictures)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from browser_helpers import VIEWPORTS, keep_screenshot, serve
from test_dashboard_helpers import seed, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.schedules import RunStatus
from ostinato.services.history import HistoryPass


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str]]:
    seed(sqlite_store, clock)
    secret = tokens(sqlite_store, clock)["read"]
    history = HistoryPass(sqlite_store, clock)
    for step in range(36):
        if step % 12 == 3:
            for s, run in sqlite_store.pick_schedules(node="n", owner_name="a", tags=[f"t{step}"], now=clock.now()):
                sqlite_store.end_schedule_run(s.name, run.owner_tag, status=RunStatus.FAILED if step > 20 else
                                              RunStatus.SUCCEEDED, ended=clock.now() + timedelta(minutes=4))
        history.run_once()
        clock.advance(timedelta(minutes=5))
    with serve(create_app(sqlite_store, Settings(), clock), "history-uvicorn") as base:
        yield base, secret


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_person_reads_the_history_charts(served, chromium, screen, tmp_path):
    base, secret = served
    viewport = VIEWPORTS[screen]
    context = chromium.new_context(viewport=viewport, is_mobile=screen == "phone", has_touch=screen == "phone")
    try:
        page = context.new_page()
        page.goto(f"{base}/dashboard/history")
        page.get_by_label("Token secret").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/")
        page.goto(f"{base}/dashboard/history")
        charts = page.locator("svg.history")
        assert charts.count() >= 5 + 3 * 6  # git's five, three per schedule and task type
        fresh = page.locator('svg.history[data-chart="visit_type:git/1"]')
        assert fresh.get_attribute("role") == "img" and "latest" in fresh.get_attribute("aria-label")
        box = fresh.locator("polyline").first.bounding_box()
        assert box and box["width"] > 20, box  # three hours of the last 24
        # the latest, lowest and highest values written beside each chart, the same as its description says
        values = page.locator('ul.chart-values[data-chart="visit_type:git/1"] li[data-line="fresh"]')
        assert values.is_visible() and values.locator(".latest").is_visible()
        written = values.inner_text()
        assert written.startswith("fresh: latest ") and " · lowest " in written and " · highest " in written, written
        latest, lowest, highest = (values.locator(f".{k}").inner_text() for k in ("latest", "lowest", "highest"))
        assert f"fresh: latest {latest}, lowest {lowest}, highest {highest}" in fresh.get_attribute("aria-label")
        assert page.locator("ul.chart-values li").count() >= 5 * 1 + 3 * 6  # a line of text per line drawn
        failures = page.locator('ul.chart-values[data-chart="schedule:archive-old/1"] li[data-line="failures"]')
        assert failures.is_visible() and failures.locator(".highest").inner_text() == "1", failures.inner_text()
        # runs and failures told apart: the failed runs' bars in a colour of their own, a legend in text
        runs = page.locator('svg.history[data-chart="schedule:archive-old/1"]')
        failed_bars, run_bars = runs.locator("rect.bar.failures"), runs.locator("rect.bar.runs")
        assert failed_bars.count() >= 1 and run_bars.count() > failed_bars.count()
        colour = "e => getComputedStyle(e).color"
        assert failed_bars.first.evaluate(colour) != run_bars.first.evaluate(colour)
        assert failed_bars.first.evaluate(colour) == failures.locator(".key").evaluate(colour)
        assert failures.locator(".key").inner_text() == "failures"
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        keep_screenshot(page, tmp_path, f"history-{screen}")
        page.get_by_role("link", name="last 7d").click()
        assert page.locator("strong[aria-current=page]").inner_text() == "last 7d"
        page.goto(f"{base}/dashboard/history?series=schedule:archive-old")
        assert page.locator("article.series").count() == 1
        runs = page.locator('svg.history[data-chart="schedule:archive-old/1"]').get_attribute("aria-label")
        assert "failures: latest" in runs, runs
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        keep_screenshot(page, tmp_path, f"history-one-{screen}")
    finally:
        context.close()
