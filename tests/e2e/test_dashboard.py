"""The dashboard at ``/`` over HTTP, on every store: no token no data, the sign-in cookie, schedules
worst first with their reasons, each visit type's numbers and lag picture, task types, recent
failures, and a page made for phones (viewport) that runs no script."""

from __future__ import annotations

import re
from html import unescape

import pytest
from fastapi.testclient import TestClient
from test_dashboard_helpers import STALE_TEXT, seed, seed_fire_times, tokens

from ostinato.api import create_app
from ostinato.api.console.signin_sessions import COOKIE
from ostinato.config import Settings


@pytest.fixture
def seeded(store, clock):
    seed(store, clock)
    secrets = tokens(store, clock)
    client = TestClient(create_app(store, Settings(), clock))
    return client, secrets


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def rows(html: str, kind: str) -> list[str]:
    """The ``<tr>`` elements of one kind (``schedule``, ``task-type``, ``failure``), in page order."""
    return re.findall(rf'<tr class="{kind}[^"]*".*?</tr>', html, flags=re.S)


def text(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def test_no_token_no_data(seeded, store, clock):
    client, secrets = seeded
    for answer in (client.get("/"), client.get("/", headers={"Cookie": f"{COOKIE}=not-a-token"}),
                   client.get("/", headers=bearer("not-a-token"))):
        assert answer.status_code == 401
        assert 'action="/dashboard/login"' in answer.text and "bills-ca" not in answer.text
        assert answer.headers["cache-control"] == "no-store"
    assert "the session is over" in client.get("/", headers={"Cookie": f"{COOKIE}=not-a-token"}).text
    store.revoke_api_token("dashboard-read", clock.now(), actor="tests")
    revoked = client.get("/", headers=bearer(secrets["read"]))
    assert revoked.status_code == 401 and "was revoked" in revoked.text and "bills-ca" not in revoked.text


def test_sign_in_opens_a_session_in_an_httponly_cookie(seeded):
    client, secrets = seeded
    wrong = client.post("/dashboard/login", data={"token": "guess"}, follow_redirects=False)
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers and "unknown token" in wrong.text
    empty = client.post("/dashboard/login", data={"token": ""}, follow_redirects=False)
    assert empty.status_code == 400 and "token" in empty.text
    signed = client.post("/dashboard/login", data={"token": secrets["read"]}, follow_redirects=False)
    assert signed.status_code == 303 and signed.headers["location"] == "/"
    cookie = signed.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert secrets["read"] not in signed.headers["location"] and secrets["read"] not in cookie
    page = client.get("/")  # the client keeps the cookie
    assert page.status_code == 200 and "bills-ca" in page.text and "signed in as dashboard-read" in page.text
    client.post("/dashboard/logout", follow_redirects=False)
    assert client.get("/").status_code == 401


def test_an_admin_token_or_a_bearer_header_also_opens_it(seeded):
    client, secrets = seeded
    assert client.get("/", headers=bearer(secrets["admin"])).status_code == 200
    assert client.post("/dashboard/login", data={"token": secrets["admin"]}, follow_redirects=False).status_code == 303
    assert client.get("/").status_code == 200


def test_schedules_worst_first_with_their_reasons(seeded):
    client, secrets = seeded
    page = client.get("/", headers=bearer(secrets["read"]))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    schedules = rows(page.text, "schedule")
    names = [re.search(r'data-name="([^"]+)"', row).group(1) for row in schedules]
    # ERROR (most overdue first), WARNING (deadline first; paused has none), OK (deadline first)
    assert names == ["archive-old", "bills-ca", "flaky-sync", "paused-job", "aaa-daily", "zzz-daily"]
    first = text(schedules[0])
    assert first.startswith("✖ ERROR archive-old") and STALE_TEXT in first and "[stale]" in first
    assert "▲ WARNING" in text(schedules[2]) and "its last run failed" in text(schedules[2])
    assert "paused" in text(schedules[3])
    assert "✔ OK" in text(schedules[4])
    summary = text(re.search(r'<ul class="summary".*?</ul>', page.text, flags=re.S).group(0))
    assert summary == "✖ ERROR 2 ▲ WARNING 2 ✔ OK 2"
    assert "<title>✖ ERROR · Ostinato</title>" in page.text


def test_visit_types_with_their_numbers_and_lag_picture(seeded):
    client, secrets = seeded
    html = client.get("/", headers=bearer(secrets["read"])).text
    card = re.search(r'<article class="card visit-type" data-visit-type="git".*?</article>', html, flags=re.S).group(0)
    numbers = dict(re.findall(r"<dt>([^<]+)</dt><dd>([^<]+)</dd>", card))
    assert numbers["Queue depth (in flight)"] == "2"
    assert numbers["Visits per hour"] == "2"
    assert numbers["Eventful ratio"] == "100 %"
    assert numbers["Never visited"] == "5"
    assert numbers["With pending changes"] == "7"
    svg = re.search(r"<svg class=\"lag\".*?</svg>", card, flags=re.S).group(0)
    assert 'role="img"' in svg and "<title>Lag histogram of git</title>" in svg
    assert 'aria-label="Lag of the 7 git origins with pending changes, by bucket:' in svg
    bars = dict(re.findall(r'<rect class="bar"[^>]*data-bucket="([^"]+)" data-count="(\d+)"', svg))
    assert {unescape(k): int(v) for k, v in bars.items()} == {"<1h": 3, "<6h": 2, "<3d": 1, "<90d": 1}
    assert "url(#hatch-" in svg  # a pattern, not a colour alone
    hg = re.search(r'data-visit-type="hg".*?</article>', html, flags=re.S).group(0)
    assert "<dt>Never visited</dt><dd>1</dd>" in hg and '<rect class="bar"' not in hg


def test_task_types_and_recent_failures(seeded, store, clock):
    client, secrets = seeded
    html = client.get("/", headers=bearer(secrets["read"])).text
    task_types = {re.search(r'data-task-type="([^"]+)"', r).group(1): text(r) for r in rows(html, "task-type")}
    ready = store.task_activity(clock.now()).ready["load-git"]
    assert task_types["load-git"] == f"load-git {ready} 0 ✖ 2" and ready >= 1
    assert task_types["load-hg"] == "load-hg 0 0 0"
    failures = [text(r) for r in rows(html, "failure")]
    assert len(failures) == 3
    assert "task run" in failures[0] and "LOST" in failures[0] and "no report from the executor" in failures[0]
    assert "FAILED" in failures[1] and "disk full on worker-3" in failures[1]
    assert "schedule run" in failures[2] and "flaky-sync" in failures[2] and "connection refused" in failures[2]


def test_made_for_phones_and_runs_no_script(seeded):
    client, secrets = seeded
    page = client.get("/", headers=bearer(secrets["read"]))
    html = page.text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert re.search(r'<meta http-equiv="refresh" content="\d+">', html)
    assert "<script" not in html and "<style" not in html and " style=" not in html
    assert '<link rel="stylesheet" href="/dashboard/static/dashboard.css">' in html
    policy = page.headers["content-security-policy"]
    assert "script-src" not in policy  # default-src 'none': no script at all
    assert "default-src 'none'" in policy and "style-src 'self';" in policy and "unsafe-inline" not in policy
    assert "/" not in client.get("/openapi.json").json()["paths"]


def test_the_style_sheets_are_served_to_anyone_and_revalidated(seeded):
    client, _ = seeded
    for name in ("dashboard.css", "drill.css", "actions.css"):
        sheet = client.get(f"/dashboard/static/{name}")
        assert sheet.status_code == 200 and sheet.headers["content-type"] == "text/css; charset=utf-8", name
        assert sheet.headers["cache-control"] == "no-cache" and sheet.headers["x-content-type-options"] == "nosniff"
        again = client.get(f"/dashboard/static/{name}", headers={"If-None-Match": sheet.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
    assert "@media (max-width: 48em)" in client.get("/dashboard/static/dashboard.css").text
    for missing in ("login.html", "../app.py", "nothing.css"):
        assert client.get(f"/dashboard/static/{missing}").status_code == 404, missing


def test_an_empty_store_says_what_to_do(sqlite_store, clock):
    secrets = tokens(sqlite_store, clock)
    html = TestClient(create_app(sqlite_store, Settings(), clock)).get("/", headers=bearer(secrets["read"])).text
    assert "No schedules yet" in html and "ostinato metrics update" in html and "No task types yet" in html
    assert "No failed or lost run" in html and "<title>✔ OK · Ostinato</title>" in html


def test_a_schedules_page_says_what_was_caught_up_and_skipped(seeded, store, clock):
    client, secrets = seeded
    seed_fire_times(store, clock)
    main = client.get("/", headers=bearer(secrets["read"])).text
    assert '<a href="/dashboard/schedules/beat-minutely">' in main
    page = client.get("/dashboard/schedules/beat-minutely", headers=bearer(secrets["read"]))
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store" and "<script" not in page.text
    html = page.text
    assert "run missed fire times, at most 3 (all:3)" in text(html)
    firings = [(re.search(r'data-what="([^"]+)"', row).group(1), text(row)) for row in rows(html, "firing")]
    assert [what for what, _ in firings] == ["sent", "caught up", "caught up", "caught up", "skipped"]
    assert "skipped 7 fire times" in firings[-1][1] and "node-1/beat-a" in firings[-1][1]
    assert text(re.search(r'<li id="caught-up-count">.*?</li>', html).group(0)) == "Caught up: 3"
    assert text(re.search(r'<li id="skipped-count">.*?</li>', html).group(0)) == "Skipped: 7"
    assert "No run yet: the beats send it" in html


def test_a_schedules_page_needs_a_token_and_a_schedule(seeded):
    client, secrets = seeded
    unsigned = client.get("/dashboard/schedules/flaky-sync")
    assert unsigned.status_code == 401 and "flaky-sync" not in unsigned.text.replace("/dashboard/schedules", "")
    missing = client.get("/dashboard/schedules/nothing-here", headers=bearer(secrets["read"]))
    assert missing.status_code == 404 and "No schedule named nothing-here" in missing.text
    runs = client.get("/dashboard/schedules/flaky-sync", headers=bearer(secrets["read"])).text
    assert "its last run failed" in runs and "A periodic schedule the scheduler runs has no fire times" in runs
    assert [re.search(r'data-status="([^"]+)"', row).group(1) for row in rows(runs, "run")] == ["failed"]
    assert "connection refused" in text(rows(runs, "run")[0])  # the failed run says why, on its row
