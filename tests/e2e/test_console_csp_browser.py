"""The console's content security policy in a real headless Chromium (Debian's ``chromium`` through
Playwright): every page, signed in with an admin token (its buttons shown), renders with its style
sheets applied and without a single violation of the policy reported (``style-src 'self'``: no
``style`` element or attribute may be left in a page)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import quote

import pytest
from browser_helpers import VIEWPORTS, serve
from playwright.sync_api import Page
from test_dashboard_drill import BROKEN_URL, seed_drill
from test_dashboard_helpers import seed, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.services.history import HistoryPass


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str, dict[str, int]]]:
    seed(sqlite_store, clock)
    ids = seed_drill(sqlite_store, clock)
    history = HistoryPass(sqlite_store, clock)
    for _ in range(4):
        history.run_once()
        clock.advance(timedelta(minutes=5))
    secret = tokens(sqlite_store, clock)["admin"]
    with serve(create_app(sqlite_store, Settings(), clock), "console-csp-uvicorn") as base:
        yield base, secret, ids


class Watched:
    """A page whose console messages and errors are kept: a refused style or script is reported there."""

    def __init__(self, page: Page):
        self.page = page
        self.messages: list[str] = []
        page.on("console", lambda message: self.messages.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: self.messages.append(f"pageerror: {error}"))

    def violations(self) -> list[str]:
        return [m for m in self.messages if "Content Security Policy" in m or "Refused to" in m]


def style_of(page: Page, selector: str, prop: str) -> str:
    """The computed value of a CSS property of the first element matching ``selector``."""
    return page.locator(selector).first.evaluate(f"e => getComputedStyle(e).getPropertyValue('{prop}')")


def styled(page: Page, url: str) -> None:
    """The page at ``url`` has its style sheets applied: dashboard.css's, and drill.css's and actions.css's
    where the page uses them. It waits for the page's load event first: a page reached by a form's post
    is in the DOM before its style sheets have been applied."""
    page.wait_for_load_state("load")
    assert page.locator("style, [style]").count() == 0, url  # no style element or attribute left
    assert "system-ui" in style_of(page, "body", "font-family"), url
    assert style_of(page, "header", "display") == "flex", url
    if page.locator("nav.crumbs ol").count():
        assert style_of(page, "nav.crumbs ol", "display") == "flex", url  # drill.css
    if page.locator(".action-forms").count():
        assert style_of(page, ".action-forms", "display") == "flex", url  # actions.css


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_every_page_is_styled_with_no_policy_violation(served, chromium, sqlite_store, clock, screen):
    base, secret, ids = served
    context = chromium.new_context(viewport=VIEWPORTS[screen])
    try:
        watched = Watched(context.new_page())
        page = watched.page
        page.goto(f"{base}/")  # the sign-in page
        styled(page, "sign-in")
        page.get_by_label("Token secret").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/")
        pages = ["/", "/dashboard/schedules/aaa-daily", "/dashboard/schedules/flaky-sync", "/dashboard/schedules/nothing",
                 "/dashboard/visit-types/git", f"/dashboard/listers/{ids['lister']}",
                 f"/dashboard/listers/{ids['lister']}?visit_type=git",
                 f"/dashboard/origins?url={quote(BROKEN_URL, safe='')}&visit_type=git", "/dashboard/origins?url=x",
                 "/dashboard/task-types/fetch-mirror", f"/dashboard/tasks/{ids['mirror']}",
                 f"/dashboard/tasks/{ids['gone']}", "/dashboard/tasks/abc", "/dashboard/history",
                 "/dashboard/history?window=7d&series=schedule:flaky-sync", "/dashboard/history?window=1y"]
        for path in pages:
            page.goto(f"{base}{path}")
            styled(page, path)
        # a refused action's page: the schedule deleted between the page and the press
        page.goto(f"{base}/dashboard/schedules/zzz-daily")
        sqlite_store.delete_schedule("zzz-daily", clock.now(), actor="elsewhere")
        page.locator("#actions").get_by_role("button", name="Pause").click()
        assert page.locator("#refused").is_visible()
        styled(page, "refused")
        assert watched.violations() == [], watched.violations()
        assert not [m for m in watched.messages if m.startswith("pageerror")]
    finally:
        context.close()
