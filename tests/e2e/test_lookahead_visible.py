"""Lookahead's holds, visible: ``schedule show``, the API, the console and /metrics say why a schedule is held back
and for which schedule a slot is kept."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from cli_helpers import ok
from fastapi.testclient import TestClient
from test_api_helpers import Api
from test_api_metrics import scrape
from test_dashboard_drill import get
from test_dashboard_helpers import tokens
from test_dashboard_next_start import said

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.lookahead import Lookahead, PickRule
from ostinato.domain.schedules import Schedule, ScheduleKind
from ostinato.store import open_store

H, M = timedelta(hours=1), timedelta(minutes=1)


def weekly_and_hourly(store, now: datetime) -> None:
    """The proposal's case: a weekly 12-hour run that can start, an hourly 1-minute one due in minutes."""
    for name, period, run, last in [("weekly", 7 * 24 * H, 12 * H, now - 2 * 24 * H), ("hourly", H, M, now - 50 * M)]:
        store.create_schedule(Schedule(name, ScheduleKind.PERIODIC, "scrape", now - 30 * 24 * H,
                                       scheduling_period=period, cooldown_duration=H if name == "weekly" else None,
                                       last_good_start_at=last, last_good_end_at=last + run,
                                       average_good_duration=run), now)
    assert store.pick_schedules(node="n1", owner_name="a", tags=["t"], now=now,
                                rule=PickRule(lookahead=Lookahead())) == []


def test_the_api_and_the_metrics_say_what_is_held(store, clock):
    api = Api(store, clock)
    weekly_and_hourly(store, clock.now())
    weekly = api.ok("GET", "/api/v1/schedules/weekly")
    assert weekly["held"].startswith("held back: held for hourly, due in ")
    assert api.ok("GET", "/api/v1/schedules/hourly")["held"].startswith("a slot is kept for it: by n1/a, due in ")
    assert scrape(api)[("ostinato_schedule_holds", ())] == 1
    clock.advance(H)  # the hold expired
    assert api.ok("GET", "/api/v1/schedules/weekly")["held"] is None
    assert scrape(api)[("ostinato_schedule_holds", ())] == 0


def test_schedule_show_says_why_it_is_held_back(fresh_url):
    ok(fresh_url, "db", "init")
    with open_store(fresh_url) as store:
        weekly_and_hourly(store, datetime.now(UTC))
    assert "Lookahead: held back: held for hourly, due in " in ok(fresh_url, "schedule", "show", "weekly").output
    shown = json.loads(ok(fresh_url, "schedule", "show", "hourly", "--json").output)
    assert shown["held"].startswith("a slot is kept for it: by n1/a")


def test_the_console_says_why_a_schedule_is_held_back(store, clock):
    weekly_and_hourly(store, clock.now())
    client = TestClient(create_app(store, Settings(), clock))
    client.headers["Authorization"] = f"Bearer {tokens(store, clock)['read']}"
    assert said(get(client, "/dashboard/schedules/weekly").text, "held").startswith("held back: held for hourly, due in")
    assert said(get(client, "/dashboard/schedules/hourly").text, "held").startswith("a slot is kept for it: by n1/a")


def test_schedule_holds_lists_the_live_schedulers_and_the_holds(fresh_url):
    ok(fresh_url, "db", "init")
    assert "No scheduler heartbeats" in ok(fresh_url, "schedule", "holds").output
    now = datetime.now(UTC)
    with open_store(fresh_url) as store:
        store.heartbeat_scheduler("n1", "a", slots=1, run_ends=[], now=now)
        weekly_and_hourly(store, now)
    listed = json.loads(ok(fresh_url, "schedule", "holds", "--json").output)
    assert [(n["node"], n["slots"], n["running"]) for n in listed["schedulers"]] == [("n1", 1, 0)]
    assert [(h["node"], h["waits_for"]) for h in listed["holds"]] == [("n1", "hourly")]
    text = ok(fresh_url, "schedule", "holds").output
    assert "1 live scheduler" in text and "hourly" in text
