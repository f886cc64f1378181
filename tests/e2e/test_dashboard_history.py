"""The console's history over HTTP, on every store: the history pass run over hours of a seeded store,
then ``/dashboard/history`` draws each series' charts (inline SVG, no script) for the 1h, 6h, 24h, 7d
and 30d windows, ``?series=`` narrows it to one, bad input is a 400 naming the field, and
``GET /api/v1/history`` gives the same samples as JSON to a read token."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from test_dashboard_helpers import seed, tokens

from ostinato.api import create_app
from ostinato.config import Settings
from ostinato.domain.schedules import RunStatus
from ostinato.services.history import HistoryPass

FIVE = timedelta(minutes=5)


@pytest.fixture
def sampled(store, clock):
    """Three hours of passes; ``archive-old`` runs and fails once in the second hour."""
    seed(store, clock)
    secrets = tokens(store, clock)
    history = HistoryPass(store, clock)
    for step in range(36):
        if step == 14:
            picked = store.pick_schedules(node="n", owner_name="a", tags=["t-old"], now=clock.now())
            assert "archive-old" in [s.name for s, _ in picked]
            for s, _ in picked:
                store.end_schedule_run(s.name, "t-old", status=RunStatus.FAILED, ended=clock.now() + timedelta(minutes=3))
        history.run_once()
        clock.advance(FIVE)
    return TestClient(create_app(store, Settings(), clock)), secrets


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_the_history_page_draws_each_series(sampled):
    client, secrets = sampled
    page = client.get("/dashboard/history", headers=bearer(secrets["read"]))
    assert page.status_code == 200 and "<script" not in page.text
    charts = re.findall(r'<svg class="history"[^>]*data-chart="([^"]+)"', page.text)
    assert "visit_type:git/1" in charts and "schedule:archive-old/1" in charts and "task_type:load-git/1" in charts
    # the failing schedule comes first among the schedules; its runs chart says it failed once
    schedules = re.findall(r'<article class="series" id="schedule:([^"]+)"', page.text)
    assert schedules[0] == "archive-old", schedules
    label = re.search(r'data-chart="schedule:archive-old/1"', page.text) and \
        re.search(r'aria-label="(Runs ended per interval[^"]*)"[^>]*data-chart="schedule:archive-old/1"', page.text)
    assert label and "failures: latest" in label.group(1) and "highest 1" in label.group(1), label
    assert re.search(r'<polyline points="[^"]+"', page.text)
    # runs and failures told apart: bars of runs, and the failed part hatched, of its own class, in the legend
    runs_chart = re.search(r'<svg class="history"[^>]*data-chart="schedule:archive-old/1".*?</svg>', page.text).group(0)
    assert len(re.findall(r'<rect class="bar runs"', runs_chart)) == 1, runs_chart
    assert len(re.findall(r'<rect class="bar failures" fill="url\(#hatch-[0-9a-f]+\)"', runs_chart)) == 1, runs_chart
    assert '<text x="196" y="130" class="failures">failures</text>' in runs_chart
    for window in ("1h", "6h", "7d", "30d"):
        assert client.get(f"/dashboard/history?window={window}", headers=bearer(secrets["read"])).status_code == 200
    one = client.get("/dashboard/history?series=visit_type:git", headers=bearer(secrets["read"])).text
    assert 'id="visit_type:git"' in one and 'id="schedule:' not in one


@pytest.mark.parametrize("query, says", [("window=1y", "window: expected one of 1h, 6h, 24h, 7d, 30d"),
                                         ("series=git", "series: expected kind:name")])
def test_bad_input_is_a_400_naming_the_field(sampled, query, says):
    client, secrets = sampled
    page = client.get(f"/dashboard/history?{query}", headers=bearer(secrets["read"]))
    assert page.status_code == 400 and says in page.text and "Traceback" not in page.text
    api = client.get(f"/api/v1/history?{query}", headers=bearer(secrets["read"]))
    assert api.status_code == 400 and api.json()["error"]["field"] in ("window", "series")


def test_the_samples_as_json_for_a_read_token(sampled, clock):
    client, secrets = sampled
    assert client.get("/api/v1/history").status_code == 401
    body = client.get("/api/v1/history?window=7d&series=schedule:archive-old", headers=bearer(secrets["read"])).json()
    assert body["resolution"] == 3600 and list(body["series"]) == ["schedule:archive-old"]
    hours = body["series"]["schedule:archive-old"]
    assert sum(h["runs"] for h in hours) == 1 and sum(h["failures"] for h in hours) == 1
    assert all("late" in h for h in hours)
    assert client.get("/dashboard/history").status_code == 401  # signed out: the sign-in form, no data


def test_the_last_hour_by_the_minute(sampled, clock):
    """The 1h window reads the one-minute samples: one per pass of the last hour (the fixture's passes
    come every five minutes), and the page draws them."""
    client, secrets = sampled
    body = client.get("/api/v1/history?window=1h&series=schedule:archive-old", headers=bearer(secrets["read"])).json()
    assert body["window"] == "1h" and body["resolution"] == 60
    minutes = body["series"]["schedule:archive-old"]
    assert len(minutes) == 12 and all("late" in m for m in minutes), minutes
    page = client.get("/dashboard/history?window=1h", headers=bearer(secrets["read"]))
    assert page.status_code == 200 and 'aria-current="page">last 1h<' in page.text
    assert 'data-chart="schedule:archive-old/1"' in page.text


def test_the_command_takes_one_sample(fresh_url):
    from cli_helpers import ok

    ok(fresh_url, "db", "init")
    ok(fresh_url, "task-type", "add", "load-git", "ostinato.examples:load_directory", "Load git", "--no-default-interval")
    ok(fresh_url, "schedule", "add", "notes", "load-git", "--every", "1h")
    said = ok(fresh_url, "history", "sample").stdout
    # a schedule and a task type: each a minute's sample, rolled up to its five minutes, its hour and its six hours
    assert said.startswith("Sampled 2 series: 8 samples written, 0 pruned"), said
