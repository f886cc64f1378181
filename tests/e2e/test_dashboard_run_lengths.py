"""A schedule's console page says its run length (expected, average, spread), its last good run's
items and the partial_failure reason (over HTTP, on every store)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from test_dashboard_drill import get
from test_dashboard_helpers import HOUR, MINUTE, tokens
from test_dashboard_next_start import said

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.run_items import ItemCounts
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind


def test_the_page_says_the_run_length_the_items_and_the_reason(store, clock):
    now = clock.now()
    store.create_schedule(Schedule("scrape-bills", ScheduleKind.PERIODIC, "scrape", now - 2 * HOUR,
                                   scheduling_period=24 * HOUR, expected_duration=20 * MINUTE,
                                   partial_failure_threshold=0.2), now - 2 * HOUR)
    at = now - HOUR
    assert store.pick_schedule(node="n", owner_name="me", tag="t1", now=at) is not None
    store.end_schedule_run("scrape-bills", "t1", status=RunStatus.SUCCEEDED, ended=at + 10 * MINUTE,
                           items=ItemCounts(70, 30))
    client = TestClient(create_app(store, Settings(), clock))
    client.headers["Authorization"] = f"Bearer {tokens(store, clock)['read']}"
    html = get(client, "/dashboard/schedules/scrape-bills").text
    assert said(html, "run-length") == ("20 min expected (its expected_duration); the moving average says 10 min, "
                                        "spread ± 0 s")
    assert said(html, "last-items") == "70 done, 30 failed (warns above 20% failed)"
    assert "[partial_failure]" in html and "its last good run failed more of its items" in html
