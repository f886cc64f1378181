"""A young history in a real headless Chromium (Debian's ``chromium`` through Playwright): eleven
minutes after the history pass first ran (a pass a minute), the last hour's charts spread the samples
across the chart, not into its last pixels, and say where their axis starts. Screenshots go to the
test's tmp_path, and to ``$OSTINATO_SCREENSHOTS`` when set."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from browser_helpers import VIEWPORTS, keep_screenshot, serve
from test_dashboard_helpers import seed, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.services.history import HistoryPass

MINUTE = timedelta(minutes=1)


def eleven_minutes(store, clock) -> str:
    """The seeded store after 11 passes a minute apart (the first 30 s into a minute); a read token's secret."""
    seed(store, clock)
    secret = tokens(store, clock)["read"]
    clock.advance(timedelta(seconds=30))
    history = HistoryPass(store, clock)
    for _ in range(11):
        history.run_once()
        clock.advance(MINUTE)
    return secret


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str]]:
    secret = eleven_minutes(sqlite_store, clock)
    with serve(create_app(sqlite_store, Settings(), clock), "history-young-uvicorn") as base:
        yield base, secret


@pytest.mark.parametrize("window", ["1h", "24h"])
def test_eleven_minutes_of_history_spread_across_the_charts(served, chromium, window, tmp_path):
    base, secret = served
    viewport = VIEWPORTS["desktop"]
    context = chromium.new_context(viewport=viewport)
    try:
        page = context.new_page()
        page.goto(f"{base}/")
        page.get_by_label("Token secret").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/")
        answer = page.goto(f"{base}/dashboard/history?window={window}")
        assert answer is not None and answer.status == 200, answer and answer.status
        chart = page.locator('svg.history[data-chart="visit_type:git/1"]')
        drawn, line = chart.bounding_box(), chart.locator("polyline").first.bounding_box()
        assert drawn and line, (drawn, line)
        # eleven samples over eleven minutes: more than half the chart's width, whatever the window
        assert line["width"] > drawn["width"] / 2, (line, drawn)
        assert page.locator("#axis-start").is_visible()
        assert "the charts start there" in page.locator("#axis-start").inner_text()
        keep_screenshot(page, tmp_path, f"history-young-{window}", viewport["width"])
    finally:
        context.close()
