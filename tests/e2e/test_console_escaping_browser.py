"""What the console shows is shown as text, checked in a real headless Chromium (Debian's ``chromium``
through Playwright): a store seeded, through its verbs, with an XSS probe in every field a page shows
(lister and instance names, origin URLs and visit types, extra loader arguments, task type names and
definitions, task arguments, run errors, tracebacks, results and backends, schedule owners and errors,
beat senders, audit actors, targets and outcomes, the token's name) and a ``javascript:`` URL where a
URL goes. Every page is visited with the content security policy *bypassed* (so that escaping alone is
tested, not the policy that would also stop a script): no dialog opens, no injected element exists,
the probe reads literally, and no link or form leads to a ``javascript:`` URL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import quote

import pytest
from browser_helpers import serve
from playwright.sync_api import Page

from ostinato.api import create_app
from ostinato.api.tokens import hash_secret, new_secret
from ostinato.config import Settings
from ostinato.domain.audit import AuditEvent
from ostinato.domain.firings import CatchUp
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import RunMode, RunStatus, Schedule, ScheduleKind
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskRunStatus, TaskType
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.services.history import HistoryPass

PROBE = """<img src=x onerror=alert(1)>"'><script>alert(1)</script>"""
JS_URL = "javascript:alert(1)"
IMG = "<img src=x onerror=alert(1)>"
#: a name whose link must encode it: a ? or a # left as they are would cut it
ODD = "odd?type=1&x=2#top"
#: a schedule's name takes letters, digits and _ . @ : - only: the closest to a probe it may be
JS_NAME = "javascript:alert"
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


def seed_probes(store, clock) -> dict[str, object]:
    """The probe in every field a page shows, through the store's verbs; the ids and names of what holds it."""
    now = clock.now()
    lister = store.get_or_create_lister(PROBE, PROBE, now - 30 * 24 * HOUR)
    store.record_listed_origins(lister.id, [
        ListedOrigin(PROBE, "git", last_update=now - HOUR),
        ListedOrigin(JS_URL, "git", last_update=now - 2 * HOUR, is_fork=True, forked_from_url=JS_URL),
        ListedOrigin("https://forge.example/probe", PROBE, last_update=now - HOUR,
                     extra_loader_arguments={PROBE: PROBE, "url": JS_URL}),
    ], now - 20 * 24 * HOUR)
    feedback = FeedbackPolicy()
    for url, visit_type in ((PROBE, "git"), ("https://forge.example/probe", PROBE)):
        store.record_visit_statuses([VisitStatus(url, 1, visit_type, JournalStatus.FULL, now - 3 * HOUR, b"s" * 20)],
                                    feedback, now=now - 3 * HOUR)
    store.update_origin_metrics(now)

    for name in (PROBE, "load-" + PROBE, "load-git", ODD):
        store.create_task_type(TaskType(type=name, description=PROBE, backend_name=PROBE, default_interval=HOUR))
    [task] = store.create_tasks([NewTask(type=PROBE, next_run=now - 2 * HOUR,
                                         arguments=TaskArguments((PROBE, JS_URL), {PROBE: PROBE, "url": JS_URL}))])
    [grabbed] = store.grab_ready_tasks(PROBE, now - HOUR, 1, backend_id=PROBE)
    store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.FAILED, now - 50 * MINUTE, metadata={
        "error": f"ValueError: {PROBE}", "traceback": [PROBE, JS_URL], PROBE: PROBE, "link": JS_URL})])

    store.create_schedule(Schedule(name=JS_NAME, kind=ScheduleKind.PERIODIC, task_type=PROBE, created_at=now - 3 * HOUR,
                                   scheduling_period=HOUR), now - 3 * HOUR)
    [(picked, run)] = store.pick_schedules(node=PROBE, owner_name=PROBE, tags=["probe-tag"], now=now - 2 * HOUR)
    store.end_schedule_run(picked.name, run.owner_tag, status=RunStatus.FAILED, ended=now - 110 * MINUTE,
                           detail={"error": PROBE, "traceback": [PROBE], PROBE: JS_URL})
    store.create_schedule(Schedule(name="beat-probe", kind=ScheduleKind.PERIODIC, task_type=PROBE,
                                   created_at=now - 20 * MINUTE, scheduling_period=MINUTE, mode=RunMode.SEND,
                                   catch_up=CatchUp.all(3)), now - 20 * MINUTE)
    claims = store.claim_firings(sender=PROBE, tag="beat-tag", now=now - MINUTE, lease=30 * timedelta(seconds=1))
    store.mark_firings_sent("beat-tag", [(c.schedule, c.nominal_at) for c in claims], now - MINUTE)

    store.record_audit(AuditEvent(now - 5 * MINUTE, PROBE, "schedule.pause", f"schedule:{JS_NAME}", f"done: {PROBE}"))
    store.record_audit(AuditEvent(now - 4 * MINUTE, PROBE, "task.retry", f"task:{task.id}", f"refused: {PROBE}"))
    store.record_audit(AuditEvent(now - 3 * MINUTE, PROBE, "task.enable", f"task:{PROBE}", PROBE))
    history = HistoryPass(store, clock)
    for _ in range(3):
        history.run_once()
        clock.advance(5 * MINUTE)
    return {"lister": lister.id, "task": task.id, "run": grabbed.run.id}


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str, dict[str, object]]]:
    ids = seed_probes(sqlite_store, clock)
    secret = new_secret()
    sqlite_store.create_api_token(PROBE, "admin", hash_secret(secret), clock.now(), actor="tests")  # "signed in as" the probe
    with serve(create_app(sqlite_store, Settings(), clock), "console-escaping-uvicorn") as base:
        yield base, secret, ids


def pages(ids: dict[str, object]) -> list[tuple[str, str]]:
    """Every page, and the text it must show literally."""
    q = lambda text: quote(text, safe="")
    return [
        ("/", PROBE),
        (f"/dashboard/schedules/{q(JS_NAME)}", PROBE),
        ("/dashboard/schedules/beat-probe", PROBE),
        ("/dashboard/visit-types/git", PROBE),
        (f"/dashboard/visit-types/{q(PROBE)}", PROBE),
        (f"/dashboard/listers/{ids['lister']}", PROBE),
        (f"/dashboard/listers/{ids['lister']}?visit_type=git", PROBE),
        (f"/dashboard/origins?url={q(PROBE)}&visit_type=git", PROBE),
        (f"/dashboard/origins?url={q(JS_URL)}&visit_type=git", PROBE),
        (f"/dashboard/origins?url={q('https://forge.example/probe')}&visit_type={q(PROBE)}", PROBE),
        (f"/dashboard/origins?url={q(PROBE)}&visit_type=nothing", PROBE),  # a 404 naming what it looked for
        (f"/dashboard/task-types/{q(PROBE)}", PROBE),
        (f"/dashboard/task-types/{q('load-' + PROBE)}", PROBE),
        (f"/dashboard/tasks/{ids['task']}", PROBE),
        (f"/dashboard/task-runs/{ids['run']}", PROBE),
        ("/dashboard/history", PROBE),
        (f"/dashboard/history?series={q('schedule:' + JS_NAME)}", PROBE),
        (f"/dashboard/history?series={q('task_type:' + PROBE)}", PROBE),
        (f"/dashboard/history?series={q(PROBE)}", PROBE),  # a 400 quoting the bad series
        (f"/dashboard/schedules/{q(IMG)}", IMG),  # a 404 naming it (a name with no slash: a path's segment)
    ]


def inert(page: Page, path: str, shown: str | None, dialogs: list[str]) -> None:
    assert dialogs == [], (path, dialogs)
    injected = page.locator("img, script, iframe, object, embed, [onerror], [onload], [onclick]")
    assert injected.count() == 0, (path, injected.first.evaluate("e => e.outerHTML"))
    if shown is not None:
        assert shown in page.locator("body").inner_text(), path
    targets = page.evaluate("""() => [...document.querySelectorAll('a[href], form[action]')]
        .map(e => e.tagName === 'A' ? e.protocol : new URL(e.action).protocol)""")
    assert set(targets) <= {"http:"}, (path, targets)  # never javascript:


def test_every_field_renders_inert_on_every_page(served, chromium):
    base, secret, ids = served
    context = chromium.new_context(bypass_csp=True)  # escaping alone, not the policy that would also stop it
    try:
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{base}/")
        page.get_by_label("Token secret").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/")
        assert f"signed in as {PROBE}" in page.locator("header").inner_text()
        for path, shown in pages(ids):
            page.goto(f"{base}{path}")
            inert(page, path, shown, dialogs)
        # every link of these pages, followed: each lands on a page (not a 404 of a name cut at a ? or a /)
        for start in ("/", f"/dashboard/tasks/{ids['task']}", f"/dashboard/listers/{ids['lister']}",
                      "/dashboard/history", f"/dashboard/origins?url={quote(PROBE, safe='')}&visit_type=git"):
            page.goto(f"{base}{start}")
            here = page.url
            hrefs = page.evaluate("() => [...new Set([...document.querySelectorAll('a[href]')]"
                                  ".map(a => a.href.split('#')[0]))]")
            for href in hrefs:
                if href.startswith(base) and "/docs" not in href and href != here.split("#")[0]:
                    answer = page.goto(href)
                    assert answer is not None and answer.status == 200, (start, href, answer and answer.status)
                    inert(page, href, None, dialogs)
    finally:
        context.close()
