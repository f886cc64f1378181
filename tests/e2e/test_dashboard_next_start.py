"""A schedule's page says when the scheduler starts it next, and why (over HTTP on every store, and in
Chromium): a calendar schedule whose run failed at its fire time waits out its retry backoff, and
its page says that start and its cause, not the past fire time as its next ("Next: 11:58 (2 min ago)")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from html import unescape

import pytest
from browser_helpers import VIEWPORTS, keep_screenshot, serve
from fastapi.testclient import TestClient
from test_dashboard_drill import get
from test_dashboard_helpers import HOUR, MINUTE, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind

SECOND = timedelta(seconds=1)
RETRY = "a retry after failure 1, 5m after its last run ended"


def seed_failed_calendar(store, clock) -> None:
    """``hourly-report``, at :58 of every hour: its 10:58 run went well, its 11:58 run failed at 11:58:30;
    at the clock's 12:00 it waits out its retry backoff (5 min) until 12:03:30."""
    now = clock.now()
    store.create_schedule(Schedule(name="hourly-report", kind=ScheduleKind.CALENDAR, task_type="report",
                                   created_at=now - 2 * HOUR, cron_schedule="58 * * * *",
                                   cron_max_schedule_duration=HOUR), now - 2 * HOUR)
    for at, status in ((now - 62 * MINUTE, RunStatus.SUCCEEDED), (now - 2 * MINUTE, RunStatus.FAILED)):
        tag = f"tag-{at:%H%M}"
        picked = store.pick_schedules(node="node-1", owner_name="scheduler-a", tags=[tag], now=at)
        assert [s.name for s, _ in picked] == ["hourly-report"], picked
        assert store.end_schedule_run("hourly-report", tag, status=status, ended=at + 30 * SECOND,
                                      detail={} if status is RunStatus.SUCCEEDED else {"error": "OSError: disk full"})


@pytest.fixture
def client(store, clock):
    seed_failed_calendar(store, clock)
    client = TestClient(create_app(store, Settings(), clock))
    client.headers["Authorization"] = f"Bearer {tokens(store, clock)['read']}"
    return client


def said(html: str, element: str) -> str:
    """The text of the element of that id, as a browser shows it (tags dropped, spaces collapsed)."""
    fragment = re.search(rf'<dd id="{element}">(.*?)</dd>', html, flags=re.S).group(1)
    return " ".join(unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def test_a_schedule_waiting_out_its_retry_says_when_and_why(client):
    html = get(client, "/dashboard/schedules/hourly-report").text
    assert said(html, "next-start") == (f"2026-01-01 12:03:30 UTC (in 3 min): {RETRY} (its fire time of "
                                        "2026-01-01 11:58:00 UTC (2 min ago) is still to run)")
    assert said(html, "next-fire-time") == ("2026-01-01 11:58:00 UTC (2 min ago), still to run: it starts "
                                            f"2026-01-01 12:03:30 UTC (in 3 min) ({RETRY})")


def test_a_schedule_due_at_its_fire_time_says_so(client, clock):
    clock.advance(timedelta(minutes=10))  # the backoff is over: due since 12:03:30, at a scheduler's next pass
    html = get(client, "/dashboard/schedules/hourly-report").text
    assert said(html, "next-start").startswith(f"now, at a scheduler's next pass ({RETRY}, since 2026-01-01 12:03:30 UTC")


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str]]:
    seed_failed_calendar(sqlite_store, clock)
    secret = tokens(sqlite_store, clock)["read"]
    with serve(create_app(sqlite_store, Settings(), clock), "next-start-uvicorn") as base:
        yield base, secret


@pytest.mark.parametrize("screen", list(VIEWPORTS))
def test_a_person_reads_the_next_start_and_its_cause(served, chromium, screen, tmp_path):
    base, secret = served
    width = VIEWPORTS[screen]["width"]
    context = chromium.new_context(viewport=VIEWPORTS[screen], extra_http_headers={"Authorization": f"Bearer {secret}"})
    try:
        page = context.new_page()
        page.goto(f"{base}/dashboard/schedules/hourly-report")
        start = page.locator("#next-start")
        assert start.is_visible()
        assert start.inner_text().startswith(f"2026-01-01 12:03:30 UTC (in 3 min): {RETRY}"), start.inner_text()
        fire = page.locator("#next-fire-time")
        fire.scroll_into_view_if_needed()
        assert "still to run: it starts 2026-01-01 12:03:30 UTC" in fire.inner_text(), fire.inner_text()
        keep_screenshot(page, tmp_path, f"schedule-retry-{width}", width)
    finally:
        context.close()
