"""The dashboard's drill-down pages over HTTP, on every store: a visit type and its listers, a lister
and its listed origins (paged), an origin with its visits, change rate and why its next visit comes
when it does, a task type and its tasks (paged), a task and its runs newest first with a failed run's
error and traceback; the main page's links to them; 404 for what does not exist, 400 for bad input,
and the sign-in before any of it."""

from __future__ import annotations

import re
from html import unescape

import jinja2
import pytest
from fastapi.testclient import TestClient
from test_dashboard_helpers import DAY, HOUR, MINUTE, seed, tokens

from ostinato.api import create_app
from ostinato.api.console import gather_drill as drill
from ostinato.api.console.render import templates
from ostinato.api.console.signin_sessions import COOKIE
from ostinato.config import Settings
from ostinato.domain.clock import ManualClock
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskPolicy, TaskRunStatus, TaskType
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStats, VisitStatus
from ostinato.store import Store

#: the URL whose characters a link must encode (a space, &, ?, # and a non-ASCII letter)
ODD_URL = "https://forge.example/a b?x=1&y=é#top"
RATED_URL = "https://forge.example/rated"
BROKEN_URL = "https://forge.example/broken"
TRACEBACK = ["loader.py:41 in fetch: pack = remote.fetch(url)", "pack.py:12 in write: out.write(chunk)"]


def seed_drill(store: Store, clock: ManualClock) -> dict[str, int]:
    """What the drill-down pages show beyond :func:`seed`: an origin whose change rate was learnt from
    five visits (its loader counts no changes), one disabled after three failed visits, one whose URL
    needs encoding; a task type ``fetch-mirror`` whose task ran three times, eventful, uneventful,
    then failed with a traceback, and a one-shot task that failed for good. Returns ids by name."""
    now = clock.now()
    lister = store.get_or_create_lister("github", "github.com", now - 100 * DAY)
    store.record_listed_origins(lister.id, [ListedOrigin(RATED_URL, "git"),
                                            ListedOrigin(BROKEN_URL, "git", last_update=now - 5 * DAY),
                                            ListedOrigin(ODD_URL, "git", last_update=now - HOUR,
                                                         extra_loader_arguments={"depth": 1})], now - 50 * DAY)
    feedback = FeedbackPolicy()
    visits = [(40, "a"), (30, "b"), (20, "b"), (10, "c"), (2, "d")]  # days ago, snapshot: changed 3 times of 4
    for number, (days, snapshot) in enumerate(visits, 1):
        at = now - days * DAY
        store.record_visit_statuses([VisitStatus(RATED_URL, number, "git", JournalStatus.FULL, at, snapshot.encode() * 20)],
                                    feedback, now=at)
    for number, days in enumerate((3, 2, 1), 1):
        at = now - days * DAY
        store.record_visit_statuses([VisitStatus(BROKEN_URL, number, "git", JournalStatus.FAILED, at)], feedback, now=now)
    store.update_origin_metrics(now)

    store.create_task_type(TaskType(type="fetch-mirror", description="Fetch a mirror", backend_name="jobs:fetch_mirror",
                                    default_interval=HOUR, num_retries=2, retry_delay=10 * MINUTE,
                                    max_queue_length=500))
    [mirror] = store.create_tasks([NewTask(type="fetch-mirror", next_run=now - 6 * HOUR,
                                           arguments=TaskArguments(("https://mirror.example/",), {"depth": 2}))])
    outcomes = [(TaskRunStatus.EVENTFUL, {"items": 3}), (TaskRunStatus.UNEVENTFUL, {}),
                (TaskRunStatus.FAILED, {"error": "OSError: [Errno 28] No space left on device", "traceback": TRACEBACK,
                                        "visit_status": "failed"})]
    runs = []
    for index, (status, metadata) in enumerate(outcomes):
        start = now - (5 - 2 * index) * HOUR
        [grabbed] = store.grab_ready_tasks("fetch-mirror", start, 1, backend_id="worker-1")
        runs.append(grabbed.run.id)
        store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.STARTED, start + MINUTE, "worker-1"),
                                 RunEvent(grabbed.run.id, status, start + 3 * MINUTE, metadata=metadata)])
    [gone] = store.create_tasks([NewTask(type="fetch-mirror", next_run=now - 2 * HOUR, policy=TaskPolicy.ONESHOT,
                                         arguments=TaskArguments(("https://gone.example/",), {}))])
    [grabbed] = store.grab_ready_tasks("fetch-mirror", now - 30 * MINUTE, 1)
    assert grabbed.task.id == gone.id
    store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.PERMFAILED, now - 25 * MINUTE,
                                      metadata={"error": "no file here"})])
    return {"lister": lister.id, "mirror": mirror.id, "gone": gone.id, "eventful": runs[0], "uneventful": runs[1],
            "failed": runs[2], "permfailed": grabbed.run.id}


@pytest.fixture
def drilled(store, clock):
    seed(store, clock)
    ids = seed_drill(store, clock)
    secrets = tokens(store, clock)
    client = TestClient(create_app(store, Settings(), clock))
    client.headers["Authorization"] = f"Bearer {secrets['read']}"
    return client, ids, secrets


def rows(html: str, kind: str) -> list[str]:
    return re.findall(rf'<tr class="{kind}[" ][^>]*>.*?</tr>', html, flags=re.S)


def text(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<style>.*?</style>|<[^>]+>", " ", fragment, flags=re.S)).split())


def section(html: str, name: str) -> str:
    return re.search(rf'<section id="{name}".*?</section>', html, flags=re.S).group(0)


def hrefs(html: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"]+)"', html)]


def get(client: TestClient, path: str, status: int = 200, **params):
    answer = client.get(path, params=params or None, follow_redirects=False)
    assert answer.status_code == status, (path, answer.status_code, text(answer.text)[:500])
    assert answer.headers["cache-control"] == "no-store" and "default-src 'none'" in answer.headers["content-security-policy"]
    assert "<script" not in answer.text and "Traceback" not in answer.text
    return answer


def test_the_main_page_links_down(drilled):
    client, ids, _ = drilled
    links = hrefs(get(client, "/").text)
    assert "/dashboard/visit-types/git" in links and "/dashboard/visit-types/hg" in links
    assert "/dashboard/task-types/load-git" in links and "/dashboard/task-types/fetch-mirror" in links
    assert f"/dashboard/task-runs/{ids['failed']}" in links and f"/dashboard/task-runs/{ids['permfailed']}" in links
    moved = get(client, f"/dashboard/task-runs/{ids['failed']}", 303)
    assert moved.headers["location"] == f"/dashboard/tasks/{ids['mirror']}#run-{ids['failed']}"


def test_a_visit_type_sums_its_metrics_and_lists_its_listers(drilled):
    client, ids, _ = drilled
    html = get(client, "/dashboard/visit-types/git").text
    card = re.search(r'<article class="card visit-type".*?</article>', html, flags=re.S).group(0)
    numbers = dict(re.findall(r"<dt>([^<]+)</dt><dd>([^<]+)</dd>", card))
    # seed's 7 origins, and the rated, broken and odd ones (broken: disabled; odd: never visited)
    assert numbers["Known (enabled)"] == "10 (9)" and numbers["Never visited"] == "6"
    assert numbers["Queue depth (in flight)"] == "2"
    assert "<title>Lag histogram of git</title>" in card
    [lister] = rows(html, "lister")
    assert f'href="/dashboard/listers/{ids["lister"]}?visit_type=git"' in lister
    assert text(lister).startswith("github github.com (lister")
    ratios = {re.search(r'data-policy="([^"]+)"', r).group(1): text(r) for r in rows(html, "ratio")}
    assert ratios["already_visited_order_by_lag"].endswith("49 49 %")
    assert "load-git" in text(section(html, "picking"))
    hg = text(get(client, "/dashboard/visit-types/hg").text)
    assert "Never visited 1" in hg and "No origin with pending changes" in hg


def test_a_lister_pages_its_origins(drilled, monkeypatch):
    client, ids, _ = drilled
    monkeypatch.setattr(drill, "ORIGINS_PAGE", 4)
    html = get(client, f"/dashboard/listers/{ids['lister']}").text
    assert text(section(html, "lister")).startswith(f"Lister {ids['lister']} Name github Instance github.com")
    assert [re.search(r'data-visit-type="([^"]+)"', r).group(1) for r in rows(html, "metrics")] == ["git", "hg"]
    seen, found, page, pages = [], [], html, 0
    while True:
        pages += 1
        found += rows(page, "origin")
        seen += [unescape(re.search(r'data-url="([^"]+)"', r).group(1)) for r in rows(page, "origin")]
        following = [h for h in hrefs(section(page, "origins")) if "after=" in h]
        if not following:
            break
        page = get(client, following[0]).text
    assert pages == 3 and seen == sorted(seen) and len(seen) == 11 and seen[-1] == "https://hg.example/never"
    assert ODD_URL in seen
    # the odd URL's link carries it encoded, and leads to its page
    [odd] = [r for r in found if ODD_URL in unescape(r)]
    [link] = [h for h in hrefs(odd) if h.startswith("/dashboard/origins?")]
    assert link == "/dashboard/origins?url=https%3A%2F%2Fforge.example%2Fa+b%3Fx%3D1%26y%3D%C3%A9%23top&visit_type=git"
    assert ODD_URL in text(get(client, link).text)


def test_a_lister_filtered_by_visit_type_reads_a_bounded_page(drilled, monkeypatch):
    client, ids, _ = drilled
    path = f"/dashboard/listers/{ids['lister']}"
    hg = get(client, path, visit_type="hg").text
    assert [text(r).split()[0] for r in rows(hg, "origin")] == ["https://hg.example/never"]
    monkeypatch.setattr(drill, "_ORIGINS_CHUNK", 2)
    monkeypatch.setattr(drill, "ORIGINS_READ", 4)  # 10 git listings come first, by URL
    first = get(client, path, visit_type="hg").text
    assert rows(first, "origin") == [] and "None on this page: 4 listings of other visit types passed over" in text(first)
    page, pages = first, 1
    while not rows(page, "origin"):
        [following] = [h for h in hrefs(section(page, "origins")) if "after=" in h]
        assert "visit_type=hg" in following
        page, pages = get(client, following).text, pages + 1
    assert pages == 3 and [text(r).split()[0] for r in rows(page, "origin")] == ["https://hg.example/never"]


def why(client: TestClient, url: str, visit_type: str | None = "git") -> tuple[str, str]:
    html = get(client, "/dashboard/origins", url=url, **({"visit_type": visit_type} if visit_type else {})).text
    return text(re.search(r'<p class="why".*?</p>', html, flags=re.S).group(0)), html


def test_an_origin_says_when_its_next_visit_comes_and_why(drilled):
    client, _, _ = drilled
    said, html = why(client, "https://forge.example/0")
    assert said == ("▶ Eligible now: never visited: queued by last_update (never_visited_oldest_update_first); a grab "
                    "takes it when its turn comes in that order and its loader's queue has room")
    picks = {re.search(r'data-policy="([^"]+)"', r).group(1): text(r) for r in rows(html, "policy")}
    assert picks["already_visited_order_by_lag"].endswith("✖ no not picked: never visited successfully")
    assert "No visit recorded yet" in html

    said, html = why(client, "https://forge.example/5")  # visited 20 min ago, listed as changed since
    assert said.startswith("○ In cooldown until 2026-01-01 23:40 UTC (in 11 h 40 min): visited 2026-01-01 11:40 UTC")
    assert said.endswith("(20 min ago) (absolute_cooldown); then: changes pending since last_update "
                         "(already_visited_order_by_lag)")
    assert "<code>absolute_cooldown</code> 12 h after a visit" in html  # the settings' cooldowns, said
    visits = {re.search(r'data-outcome="([^"]+)"', r).group(1): text(r) for r in rows(html, "visit")}
    assert visits["last"].startswith("Last visit: ✔ successful 2026-01-01 11:40 UTC")
    assert visits["uneventful"].endswith("never")  # a first visit is eventful
    assert "Successful visits 1" in text(section(html, "visits"))
    assert "The store keeps no history of each visit" in html

    said, _ = why(client, "https://forge.example/4")  # grabbed 5 min ago, not reported
    assert "grabbed 2026-01-01 11:55 UTC (5 min ago) and its visit has not reported yet" in said
    assert said.endswith("then: never visited: queued by last_update (never_visited_oldest_update_first)")

    said, _ = why(client, "https://hg.example/never", None)  # its one visit type, found without being named
    assert said.startswith("▶ Eligible now: never loaded: queued by first_seen (origins_without_last_update)")

    said, _ = why(client, BROKEN_URL)
    assert said == ("✖ Not visited: disabled in every listing, after 3 failed visits in a row (max_failures 3); "
                    "enabled again when a lister lists it again")


def test_an_origin_shows_its_learnt_change_rate(drilled):
    client, _, _ = drilled
    said, html = why(client, RATED_URL)  # no last_update: the third tier, at its next visit target
    assert said.startswith("○ Next due 2026-01-03 12:00 UTC (in 2 d): due at its next_visit_target "
                           "(origins_without_last_update)"), said
    rate = text(section(html, "change-rate"))
    assert re.search(r"Learnt: [0-9.]+ changes a day \(one every [0-9]+ d( [0-9]+ h)?\) ?, from [0-9.]+ changes seen over "
                     r"[0-9.]+ days", rate), rate
    assert "Next optimal visit 2026-" in rate and "threshold μ" in rate and "the default: not steered yet" in rate
    beliefs = [text(r) for r in rows(html, "belief")]
    assert beliefs and all(re.fullmatch(r"[0-9.e-]+ changes a day \(one every .+\) [0-9]+ %", b) for b in beliefs), beliefs
    assert sum(int(b.rsplit(" ", 2)[-2]) for b in beliefs) >= 95
    facts = text(section(html, "visits"))
    assert "Successful visits 5" in facts and "Failures in a row 0" in facts
    _, plain = why(client, "https://forge.example/0")
    assert "Not learnt yet: a rate is learnt from the second successful visit on" in text(section(plain, "change-rate"))
    listings = rows(get(client, "/dashboard/origins", url=ODD_URL, visit_type="git").text, "listing")
    assert len(listings) == 1 and '{"depth": 1}' in text(listings[0])


def test_a_task_type_shows_its_definition_and_pages_its_tasks(drilled, monkeypatch):
    client, ids, _ = drilled
    html = get(client, "/dashboard/task-types/fetch-mirror").text
    facts = dict(re.findall(r"<dt>([^<]+)</dt><dd>(.*?)</dd>", section(html, "definition"), flags=re.S))
    assert text(facts["Backend"]) == "jobs:fetch_mirror" and text(facts["Default interval"]) == "1 h"
    assert text(facts["Retries"]) == "2, 10 min apart" and text(facts["Queue length"]) == "500"
    tasks = [re.search(r'data-task-id="(\d+)"', r).group(1) for r in rows(html, "task")]
    assert tasks == [str(ids["mirror"]), str(ids["gone"])]
    assert f'href="/dashboard/tasks/{ids["mirror"]}"' in html
    assert "✖ failed" in text(rows(html, "task")[1])  # the one-shot task that failed for good
    monkeypatch.setattr(drill, "TASKS_PAGE", 2)
    first = get(client, "/dashboard/task-types/load-git").text
    assert len(rows(first, "task")) == 2 and "the origins of visit type git" in text(first)
    [following] = [h for h in hrefs(section(first, "tasks")) if "after=" in h]
    second = get(client, following).text
    assert [text(r).split()[0] for r in rows(second, "task")] == ["#3"] and "First page" in second


def test_a_task_shows_its_runs_newest_first_with_the_error_and_traceback(drilled, monkeypatch):
    client, ids, _ = drilled
    html = get(client, f"/dashboard/tasks/{ids['mirror']}").text
    facts = text(section(html, "task"))
    assert f"Task {ids['mirror']}" in facts and "Type fetch-mirror" in facts and 'Args "https://mirror.example/"' in facts
    assert "Keyword args depth=2" in facts and "Interval 1 h" in facts and "Retries left 1" in facts
    # its run failed at 11:03, a retry left: due again after retry_delay, 10 min
    assert "ready since 2026-01-01 11:13 UTC (47 min ago): a runner takes it at its next pass" in facts
    runs = rows(html, "run")
    assert [re.search(r'data-run-id="(\d+)"', r).group(1) for r in runs] == [
        str(ids["failed"]), str(ids["uneventful"]), str(ids["eventful"])]
    failed = runs[0]
    assert f'id="run-{ids["failed"]}"' in failed and "state-ERROR" in failed
    assert re.search(r'<code class="error-type">OSError</code>', failed)
    assert text(re.search(r'<span class="error-message">.*?</span>', failed).group(0)) == \
        "[Errno 28] No space left on device"
    [frames] = re.findall(r'<pre class="traceback">(.*?)</pre>', failed, flags=re.S)
    assert frames.split("\n") == [f"at {frame}" for frame in TRACEBACK]
    assert 'result: visit_status="failed"' in text(failed) and "✖ failed" in text(failed)
    assert "2 min" in text(failed) and "worker-1" in text(failed)
    assert text(runs[2]).endswith('result: items=3') and "✔ eventful" in text(runs[2])
    gone = text(rows(get(client, f"/dashboard/tasks/{ids['gone']}").text, "run")[0])
    assert "✖ failed for good" in gone and "error: no file here" in gone  # an error that names no type

    monkeypatch.setattr(drill, "RUNS_SHOWN", 2)  # paged back by run id
    first = get(client, f"/dashboard/tasks/{ids['mirror']}").text
    assert len(rows(first, "run")) == 2
    [older] = [h for h in hrefs(section(first, "runs")) if "before=" in h]
    assert older == f"/dashboard/tasks/{ids['mirror']}?before={ids['uneventful']}"
    back = get(client, older).text
    assert [re.search(r'data-run-id="(\d+)"', r).group(1) for r in rows(back, "run")] == [str(ids["eventful"])]
    assert "Newest runs" in back and "before=" not in "".join(h for h in hrefs(section(back, "runs")))
    monkeypatch.setattr(drill, "RUNS_READ", 1)  # a task with more runs than a page reads: said, not hidden
    monkeypatch.setattr(drill, "RUNS_WALKED", 2)
    cut = get(client, f"/dashboard/tasks/{ids['mirror']}").text
    assert [re.search(r'data-run-id="(\d+)"', r).group(1) for r in rows(cut, "run")] == [
        str(ids["uneventful"]), str(ids["eventful"])]
    assert "This task has more than 2 runs and a page reads at most that many" in text(cut)


def test_the_admin_partials_get_the_task_and_each_run(drilled, monkeypatch):
    """The task page includes task_actions.html after the task's facts and run_actions.html in each run's
    row, with ``task`` and ``run`` (here partials of this test's own, ahead of the real ones)."""
    client, ids, _ = drilled
    partials = jinja2.DictLoader({"task_actions.html": '<p id="task-partial">task {{ task.id }} {{ task.status.value }}</p>',
                                  "run_actions.html": '<i class="run-partial">run {{ run.id }} of {{ task.id }}</i>'})
    monkeypatch.setattr(templates.env, "loader", jinja2.ChoiceLoader([partials, templates.env.loader]))
    html = get(client, f"/dashboard/tasks/{ids['mirror']}").text
    assert text(re.search(r'<p id="task-partial">.*?</p>', section(html, "task")).group(0)) == \
        f"task {ids['mirror']} next_run_not_scheduled"
    assert [text(r) for r in re.findall(r'<i class="run-partial">.*?</i>', html)] == [
        f"run {run} of {ids['mirror']}" for run in (ids["failed"], ids["uneventful"], ids["eventful"])]


def test_what_does_not_exist_is_a_404_page(drilled):
    client, _, _ = drilled
    for path, params, said in [
        ("/dashboard/visit-types/svn", {}, "No visit type named svn."),
        ("/dashboard/listers/4242", {}, "No lister numbered 4242."),
        ("/dashboard/origins", {"url": "https://nowhere.example/x", "visit_type": "git"},
         "No origin named https://nowhere.example/x of visit type git."),
        ("/dashboard/origins", {"url": "https://forge.example/0", "visit_type": "hg"},
         "No origin named https://forge.example/0 of visit type hg."),
        ("/dashboard/task-types/load-svn", {}, "No task type named load-svn."),
        ("/dashboard/tasks/4242", {}, "No task numbered 4242."),
        ("/dashboard/task-runs/4242", {}, "No task run numbered 4242."),
    ]:
        answer = get(client, path, 404, **params)
        message = text(re.search(r'<p class="message" role="alert">.*?</p>', answer.text, flags=re.S).group(0))
        assert message.startswith(f"✖ {said} Back to the dashboard"), message
        assert "<title>✖ not found" in answer.text and 'href="/"' in answer.text


def test_bad_input_is_a_400_saying_it_in_one_line(drilled):
    client, ids, _ = drilled
    for path, params, said in [
        ("/dashboard/tasks/abc", {}, "task_id: expected a whole number from 1 to 9223372036854775807, got 'abc'"),
        ("/dashboard/tasks/0", {}, "task_id: expected a whole number from 1 to 9223372036854775807, got '0'"),
        ("/dashboard/tasks/99999999999999999999", {}, "task_id: expected a whole number from 1 to 9223372036854775807, "
                                                      "got '99999999999999999999'"),
        (f"/dashboard/tasks/{ids['mirror']}", {"before": "x"}, "before: expected a whole number from 1 to "
                                                               "9223372036854775807, got 'x'"),
        ("/dashboard/listers/x", {}, "lister_id: expected a whole number from 1 to 9223372036854775807, got 'x'"),
        (f"/dashboard/listers/{ids['lister']}", {"after": "https://forge.example/1"},
         "after_type: expected a non-empty value"),
        ("/dashboard/task-types/load-git", {"after": "-1"}, "after: expected a whole number from 1 to "
                                                            "9223372036854775807, got '-1'"),
        ("/dashboard/task-runs/one", {}, "run_id: expected a whole number from 1 to 9223372036854775807, got 'one'"),
        ("/dashboard/origins", {}, "url: expected the origin's URL, as in "
                                   "/dashboard/origins?url=https%3A%2F%2F…&visit_type=git"),
        ("/dashboard/origins", {"url": " "}, "url: expected the origin's URL"),
        ("/dashboard/origins", {"url": "https://forge.example/\x00"}, "url: expected text without NUL characters"),
        ("/dashboard/origins", {"url": "https://forge.example/0", "visit_type": "g" * 101},
         "visit_type: expected at most 100 bytes of UTF-8"),
    ]:
        answer = get(client, path, 400, **params)
        [message] = re.findall(r'<p class="message" role="alert">(.*?)</p>', answer.text, flags=re.S)
        assert "\n" not in message and text(message).startswith(f"✖ Bad request: {said}"), (path, text(message))


def test_no_token_no_page(drilled):
    client, ids, secrets = drilled
    del client.headers["Authorization"]
    paths = ["/dashboard/visit-types/git", f"/dashboard/listers/{ids['lister']}", "/dashboard/task-types/fetch-mirror",
             f"/dashboard/tasks/{ids['mirror']}", f"/dashboard/task-runs/{ids['failed']}", "/dashboard/tasks/abc",
             "/dashboard/origins?url=https%3A%2F%2Fforge.example%2F0&visit_type=git"]
    for path in paths:
        answer = client.get(path, follow_redirects=False)
        assert answer.status_code == 401 and 'action="/dashboard/login"' in answer.text, path
        assert "forge.example" not in answer.text and "mirror" not in answer.text and "OSError" not in answer.text
    assert client.post("/dashboard/login", data={"token": secrets["read"]}, follow_redirects=False).status_code == 303
    assert client.cookies[COOKIE] != secrets["read"]  # a session's id, not the secret
    assert all(client.get(path, follow_redirects=False).status_code in (200, 303, 400) for path in paths)


def test_the_pages_are_made_for_phones(drilled):
    client, ids, _ = drilled
    for path in ("/dashboard/visit-types/git", f"/dashboard/listers/{ids['lister']}", f"/dashboard/tasks/{ids['mirror']}",
                 "/dashboard/task-types/fetch-mirror", f"/dashboard/origins?url={RATED_URL}&visit_type=git"):
        html = get(client, path).text
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
        assert '<link rel="stylesheet" href="/dashboard/static/dashboard.css">' in html and "<style" not in html
        assert 'table class="reflow"' in html
        assert '<a href="/">Ostinato</a>' in html and "signed in as dashboard-read" in html
    assert client.get("/openapi.json").json()["paths"].keys().isdisjoint(
        {"/dashboard/tasks/{task_id}", "/dashboard/origins", "/dashboard/visit-types/{visit_type}"})
    assert "@media (max-width: 48em)" in client.get("/dashboard/static/dashboard.css").text



def test_change_rate_optimal_says_its_order(store, clock):
    """With the settings' ratios giving every visit to change_rate_optimal, an origin's page says where
    that policy's three walks put it."""
    seed(store, clock)
    seed_drill(store, clock)
    ratios = {"change_rate_optimal": 1, "already_visited_order_by_lag": 0, "never_visited_oldest_update_first": 0,
              "origins_without_last_update": 0}
    client = TestClient(create_app(store, Settings(policy_ratios={"git": ratios}), clock))
    client.headers["Authorization"] = f"Bearer {tokens(store, clock)['read']}"
    said, html = why(client, RATED_URL)
    assert said.startswith("▶ Eligible now: queued by its next optimal visit (change_rate_optimal)"), said
    [row] = rows(html, "policy")
    assert "next_optimal_visit 2026-01-0" in text(row) and "due or not" in text(row)
    said, _ = why(client, "https://forge.example/0")
    assert said.startswith("▶ Eligible now: never visited: queued by first_seen (change_rate_optimal)"), said
    said, _ = why(client, "https://forge.example/6")
    # a change its forge reported is no order to visit: it brings the next optimal visit forward
    assert said.endswith("then: queued by its next optimal visit (change_rate_optimal)"), said
    ratio_rows = {re.search(r'data-policy="([^"]+)"', r).group(1): text(r)
                  for r in rows(get(client, "/dashboard/visit-types/git").text, "ratio")}
    assert ratio_rows["change_rate_optimal"].endswith("1 100 %") and ratio_rows["origins_without_last_update"].endswith("0 0 %")


def test_the_outlook_of_the_other_policies(clock):
    """The rules of the walks this seed's settings do not reach: a second visit minimum_interval after
    the first, oldest_scheduled_first, stop_after_success, and no policy left."""
    now = clock.now()
    once = VisitStats("https://x.example/", "git", last_visit=now - HOUR, last_successful=now - HOUR,
                      successful_visits=1, last_status_date=now - HOUR, last_scheduled=now - 2 * HOUR)
    bare = drill.ListingFacts(True, now - 10 * DAY, None, False, 1)
    outlook = drill.next_visit_outlook(once, bare, {"origins_without_last_update": 2}, now, minimum_interval=DAY,
                                       max_failures=3)
    assert outlook.state == "waiting" and outlook.eligible_at == now + 23 * HOUR
    assert outlook.headline == ("Next due 2026-01-02 11:00 UTC (in 23 h): loaded once: due minimum_interval after its "
                                "visit (origins_without_last_update)")
    outlook = drill.next_visit_outlook(once, bare, {"oldest_scheduled_first": 1, "stop_after_success": 1}, now,
                                       minimum_interval=DAY, max_failures=3)
    assert outlook.state == "eligible" and outlook.headline.startswith(
        "Eligible now: queued by last scheduled (oldest_scheduled_first)")
    assert [v.short for v in outlook.policies] == ["queued by last scheduled", "not picked: visited successfully once"]
    updated = drill.ListingFacts(True, now - 10 * DAY, now - 2 * HOUR, False, 1)  # no change since its visit
    outlook = drill.next_visit_outlook(once, updated, {"already_visited_order_by_lag": 1,
                                                       "never_visited_oldest_update_first": 1}, now,
                                       minimum_interval=DAY, max_failures=3)
    assert outlook.state == "not picked" and outlook.eligible_at is None
    assert outlook.headline == ("Not picked by any policy of its visit type: no change reported since its last "
                                "successful visit; visited successfully already")
    unlisted = drill.next_visit_outlook(once, drill.ListingFacts.of([]), {"oldest_scheduled_first": 1}, now,
                                        minimum_interval=DAY, max_failures=3)
    assert unlisted.state == "disabled" and "no lister lists it" in unlisted.headline
