"""The dashboard's admin actions over HTTP, on every store: pause, resume and run now a schedule;
disable, enable and retry a task. An admin token's action is done and recorded in the audit trail
(who, when by the app's clock, what, how it went); a read token's is a 403 saying it needs an admin
token; a form without this session's CSRF token, or sent from another origin, is a 403 saying why in
one line; in every refusal nothing changes. A conflict (run now of a paused schedule) shows the
store's message, 409. The task page's partials are rendered through a page of this test's own."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.testclient import TestClient
from test_dashboard_helpers import HOUR, MINUTE, seed, seed_fire_times, tokens

from ostinato.api import create_app
from ostinato.api.console.actions import csrf_token
from ostinato.api.console.render import templates
from ostinato.api.console.signin import signed_in
from ostinato.api.console.signin_sessions import COOKIE
from ostinato.api.request_handling import bearer
from ostinato.api.tokens import hash_secret, new_secret
from ostinato.config import Settings
from ostinato.domain.errors import ConflictError
from ostinato.domain.firings import FiringStatus
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskPolicy, TaskRunStatus, TaskStatus, TaskType

OWN = "http://testserver"
FORM = re.compile(r'<form[^>]*action="(/dashboard/[^"]+)"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)">')


@pytest.fixture
def env(store, clock):
    seed(store, clock)
    secrets = tokens(store, clock)
    app = create_app(store, Settings(), clock)
    _add_task_stand_in(app, store)
    return app, secrets


def session(app, secret: str) -> TestClient:
    """A browser's session: signed in with ``secret``, its cookie kept."""
    client = TestClient(app)
    signed = client.post("/dashboard/login", data={"token": secret}, follow_redirects=False)
    assert signed.status_code == 303
    return client


def session_csrf(store, clock, client: TestClient) -> str:
    """The CSRF token of the session of ``client``'s cookie, made as the server makes it."""
    session_id = client.cookies[COOKIE]
    found = store.find_console_session(hash_secret(session_id), clock.now())
    return csrf_token(session_id, f"session {found['id']}")


def forms(html: str) -> dict[str, str]:
    """The page's action forms: their address and CSRF token."""
    return dict(FORM.findall(html))


def post(client: TestClient, path: str, csrf: str | None, *, origin: str | None = OWN, **headers: str):
    data = {} if csrf is None else {"csrf": csrf}
    sent = {**({"Origin": origin} if origin is not None else {}), **headers}
    return client.post(path, data=data, headers=sent, follow_redirects=False)


def text(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def section(html: str, name: str) -> str:
    return re.search(rf'<section id="{name}".*?</section>', html, flags=re.S).group(0)


def audit(store, target=None) -> list[tuple[str, str, str, str]]:
    """The trail, the tests' own token additions left out."""
    return [(e.actor, e.action, e.target, e.outcome) for e in store.list_audit(target=target)
            if e.action != "token.add"]


def schedule_state(store, name: str):
    s = store.get_schedule(name)
    return s.enabled, s.run_requested_at


def failed_one_shot(store, clock, status=TaskRunStatus.FAILED) -> tuple[int, int]:
    """A one-shot task whose only run failed (no retry left: the task is disabled); its id and its run's."""
    now = clock.now()
    [task] = store.create_tasks([NewTask(type="load-hg", next_run=now - HOUR, arguments=TaskArguments(("once",), {}),
                                         policy=TaskPolicy.ONESHOT)])
    [grabbed] = store.grab_ready_tasks("load-hg", now - 30 * MINUTE, 1)
    store.record_run_events([RunEvent(grabbed.run.id, status, now - 20 * MINUTE, metadata={"error": "boom"})])
    assert store.get_tasks([task.id])[0].status is TaskStatus.DISABLED
    return task.id, grabbed.run.id


# -- a stand-in of the task's page, which includes the partials as it does -------------------------
STAND_IN = templates.env.from_string(
    '<main>{% include "task_actions.html" ignore missing %}<table>{% for run in runs %}'
    '<tr class="task-run" id="run-{{ run.id }}" data-status="{{ run.status.value }}"><td>#{{ run.id }}</td>'
    '<td class="run-actions">{% include "run_actions.html" ignore missing %}</td></tr>{% endfor %}</table></main>')


def _add_task_stand_in(app, store) -> None:
    @app.get("/test/tasks/{task_id}")
    def stand_in(task_id: int, request: Request,
                 credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Response:
        token = signed_in(request, credentials)
        if isinstance(token, Response):
            return token
        [task] = store.get_tasks([task_id])
        runs = store.list_task_runs(task_id=task_id)
        return HTMLResponse(STAND_IN.render(request=request, task=task, runs=runs))


# -- schedules ---------------------------------------------------------------------------------------
def test_an_admin_pauses_resumes_and_runs_now_a_schedule_each_audited(env, store, clock):
    app, secrets = env
    admin = session(app, secrets["admin"])
    page = admin.get("/dashboard/schedules/aaa-daily")
    found = forms(page.text)
    assert set(found) == {"/dashboard/schedules/aaa-daily/pause", "/dashboard/schedules/aaa-daily/run-now"}
    assert "No action recorded yet" in section(page.text, "actions")

    paused = post(admin, "/dashboard/schedules/aaa-daily/pause", found["/dashboard/schedules/aaa-daily/pause"])
    assert paused.status_code == 303 and paused.headers["location"] == "/dashboard/schedules/aaa-daily?done=paused#actions"
    assert schedule_state(store, "aaa-daily") == (False, None)
    after = admin.get(paused.headers["location"])
    actions = text(section(after.text, "actions"))
    assert "✔ Paused: no scheduler starts it until it is resumed" in actions
    assert "dashboard-admin schedule.pause done: paused" in actions
    assert set(forms(after.text)) == {"/dashboard/schedules/aaa-daily/resume"}  # and no run now while paused
    assert "Run now: not while paused" in actions
    paused_at = clock.now()

    clock.advance(5 * MINUTE)
    resumed = post(admin, "/dashboard/schedules/aaa-daily/resume", forms(after.text)["/dashboard/schedules/aaa-daily/resume"])
    assert resumed.status_code == 303 and "done=resumed" in resumed.headers["location"]
    assert schedule_state(store, "aaa-daily") == (True, None)

    clock.advance(MINUTE)
    asked = post(admin, "/dashboard/schedules/aaa-daily/run-now", found["/dashboard/schedules/aaa-daily/run-now"])
    assert asked.status_code == 303 and "done=run-requested" in asked.headers["location"]
    assert schedule_state(store, "aaa-daily") == (True, clock.now())
    assert "Run asked for" in admin.get(asked.headers["location"]).text

    events = store.list_audit(target="schedule:aaa-daily")
    assert [(e.actor, e.action, e.outcome) for e in events] == [
        ("dashboard-admin", "schedule.run-now", "done: a run asked for now"),
        ("dashboard-admin", "schedule.resume", "done: resumed"),
        ("dashboard-admin", "schedule.pause", "done: paused")]
    assert [e.at for e in events] == [clock.now(), clock.now() - MINUTE, paused_at]  # the app's clock

    main = admin.get("/").text
    rows = re.findall(r'<tr class="audit-event[^"]*".*?</tr>', section(main, "actions"), flags=re.S)
    assert [re.search(r'data-action="([^"]+)"', r).group(1) for r in rows] == [
        "schedule.run-now", "schedule.resume", "schedule.pause", "token.add", "token.add"]  # the tests' own tokens
    assert '<a href="/dashboard/schedules/aaa-daily">schedule:aaa-daily</a>' in rows[0]


def test_pausing_a_paused_schedule_changes_nothing_and_says_so(env, store):
    app, secrets = env
    admin = session(app, secrets["admin"])
    csrf = forms(admin.get("/dashboard/schedules/paused-job").text)["/dashboard/schedules/paused-job/resume"]
    again = post(admin, "/dashboard/schedules/paused-job/pause", csrf)  # a stale page's button
    assert again.status_code == 303 and "done=already-paused" in again.headers["location"]
    assert "It was already paused: nothing changed." in admin.get(again.headers["location"]).text
    assert audit(store) == [("dashboard-admin", "schedule.pause", "schedule:paused-job",
                             "done: unchanged, it was already paused")]


def test_run_now_of_a_paused_schedule_shows_the_stores_message(env, store, clock):
    app, secrets = env
    seed_fire_times(store, clock)
    admin = session(app, secrets["admin"])
    csrf = forms(admin.get("/dashboard/schedules/paused-job").text)["/dashboard/schedules/paused-job/resume"]
    name = "paused-job"
    with pytest.raises(ConflictError) as expected:
        store.request_schedule_run(name, clock.now(), actor="test")
    before = schedule_state(store, name)
    refused = post(admin, f"/dashboard/schedules/{name}/run-now", csrf)
    assert refused.status_code == 409
    shown = text(re.search(r'<p class="message" role="alert" id="refused">.*?</p>', refused.text, flags=re.S).group(0))
    assert shown == f"✖ Not done: {expected.value}"
    assert f"schedule {name}" in refused.text and "<h2 id=\"fire-times-title\">" in refused.text  # its own page
    assert schedule_state(store, name) == before
    [event] = store.list_audit(target=f"schedule:{name}")
    assert event.action == "schedule.run-now" and event.outcome == f"refused: {expected.value}"
    # the refusal's page, refreshed (a GET of the action's address), goes back to the schedule's page
    again = admin.get("/dashboard/schedules/paused-job/run-now", follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == "/dashboard/schedules/paused-job"
    assert len(audit(store)) == 1


def test_run_now_of_a_beat_sent_schedule_hands_a_fire_time_of_its_own_to_the_beats(env, store, clock):
    app, secrets = env
    seed_fire_times(store, clock)
    admin = session(app, secrets["admin"])
    page = admin.get("/dashboard/schedules/beat-minutely").text
    csrf = forms(page)["/dashboard/schedules/beat-minutely/run-now"]  # the button is offered
    before = {(f.nominal_at, f.status) for f in store.list_firings("beat-minutely", limit=100)}
    done = post(admin, "/dashboard/schedules/beat-minutely/run-now", csrf)
    assert done.status_code == 303 and "done=fire-time-handed" in done.headers["location"]
    assert "the beats send it once, at their next tick" in admin.get(done.headers["location"]).text
    added = {(f.nominal_at, f.status) for f in store.list_firings("beat-minutely", limit=100)} - before
    assert added == {(clock.now(), FiringStatus.CLAIMED)}
    [event] = store.list_audit(target="schedule:beat-minutely")
    assert event.actor == "dashboard-admin" and "handed to the beats" in event.outcome


def test_a_missing_schedule_is_a_404_and_nothing_is_recorded(env, store):
    app, secrets = env
    admin = session(app, secrets["admin"])
    csrf = forms(admin.get("/dashboard/schedules/aaa-daily").text)["/dashboard/schedules/aaa-daily/pause"]
    missing = post(admin, "/dashboard/schedules/nothing-here/pause", csrf)
    assert missing.status_code == 404 and "schedule not found: nothing-here" in text(missing.text)
    assert audit(store) == []


# -- who may act -------------------------------------------------------------------------------------
def test_a_read_session_sees_no_button_and_its_posts_are_refused(env, store, clock):
    app, secrets = env
    reader = session(app, secrets["read"])
    page = reader.get("/dashboard/schedules/aaa-daily").text
    assert forms(page) == {} and 'name="csrf"' not in page and "<button" not in section(page, "actions")
    forged = session_csrf(store, clock, reader)  # even with a well-made form
    before = schedule_state(store, "aaa-daily")
    for answer in (post(reader, "/dashboard/schedules/aaa-daily/pause", forged),
                   post(TestClient(app), "/dashboard/schedules/aaa-daily/run-now", None, origin=None,
                        Authorization=f"Bearer {secrets['read']}")):
        assert answer.status_code == 403
        assert text(answer.text).count("schedule.") == 1
        assert "needs an admin token: token 'dashboard-read' has the read scope" in text(answer.text)
    task_id, run_id = failed_one_shot(store, clock)
    for path in (f"/dashboard/tasks/{task_id}/enable", f"/dashboard/task-runs/{run_id}/retry"):
        assert post(reader, path, forged).status_code == 403
    assert schedule_state(store, "aaa-daily") == before
    assert store.get_tasks([task_id])[0].status is TaskStatus.DISABLED
    assert audit(store) == []


def test_without_a_valid_token_a_post_gets_the_sign_in_form(env, store):
    app, _ = env
    before = schedule_state(store, "aaa-daily")
    for headers in ({}, {"Cookie": f"{COOKIE}=not-a-token"}):
        answer = TestClient(app).post("/dashboard/schedules/aaa-daily/pause", headers={"Origin": OWN, **headers},
                                      follow_redirects=False)
        assert answer.status_code == 401 and 'action="/dashboard/login"' in answer.text
    assert schedule_state(store, "aaa-daily") == before and audit(store) == []


def test_a_form_without_this_sessions_csrf_token_or_from_elsewhere_is_refused(env, store, clock):
    app, secrets = env
    admin = session(app, secrets["admin"])
    csrf = forms(admin.get("/dashboard/schedules/aaa-daily").text)["/dashboard/schedules/aaa-daily/pause"]
    other_secret = new_secret()
    store.create_api_token("other-admin", "admin", hash_secret(other_secret), clock.now(), actor="tests")
    other = session(app, other_secret)
    path = "/dashboard/schedules/aaa-daily/pause"
    cases = {
        "no CSRF token": (post(admin, path, None), "csrf: the form carries no CSRF token: reload the page and try again"),
        "an empty one": (post(admin, path, ""), "csrf: the form carries no CSRF token"),
        "a wrong one": (post(admin, path, csrf[:-2] + "xx"), "csrf: the form's CSRF token is not this session's"),
        "another session's": (post(admin, path, session_csrf(store, clock, other)),
                              "csrf: the form's CSRF token is not this session's"),
        "not ASCII": (post(admin, path, "é" * 43), "csrf: the form's CSRF token is not this session's"),
        "a foreign Origin": (post(admin, path, csrf, origin="https://evil.example"),
                             "origin: the form was sent from https://evil.example (Origin), not from this dashboard "
                             "(http://testserver)"),
        "Origin null": (post(admin, path, csrf, origin="null"), "origin: the form was sent from null (Origin)"),
        "another port": (post(admin, path, csrf, origin="http://testserver:8080"), "origin: the form was sent from"),
        "another scheme": (post(admin, path, csrf, origin="https://testserver"), "origin: the form was sent from"),
        "a foreign Referer": (post(admin, path, csrf, origin=None, Referer="https://evil.example/page"),
                              "origin: the form was sent from https://evil.example (Referer)"),
        "neither": (post(admin, path, csrf, origin=None),
                    "origin: the form must be sent from this dashboard's own page (the request has neither"),
    }
    for case, (answer, line) in cases.items():
        assert answer.status_code == 403, case
        message = text(re.search(r'<p class="message" role="alert" id="refused">.*?</p>', answer.text, flags=re.S).group(0))
        assert message.startswith("✖ Not done (403): " + line), (case, message)
        assert "\n" not in message
    assert schedule_state(store, "aaa-daily") == (True, None) and audit(store) == []
    # the Referer of this site's own page does instead of an Origin
    done = post(admin, path, csrf, origin=None, Referer=f"{OWN}/dashboard/schedules/aaa-daily?done=x")
    assert done.status_code == 303 and schedule_state(store, "aaa-daily") == (False, None)


def test_a_program_with_an_admin_bearer_token_needs_no_form_token(env, store):
    app, secrets = env
    program = TestClient(app)
    answer = post(program, "/dashboard/schedules/zzz-daily/pause", None, origin=None,
                  Authorization=f"Bearer {secrets['admin']}")
    assert answer.status_code == 303 and schedule_state(store, "zzz-daily")[0] is False
    assert audit(store) == [("dashboard-admin", "schedule.pause", "schedule:zzz-daily", "done: paused")]


def test_a_get_of_an_action_changes_nothing(env, store):
    app, secrets = env
    admin = session(app, secrets["admin"])
    for path, back in (("/dashboard/schedules/aaa-daily/pause", "/dashboard/schedules/aaa-daily"),
                       ("/dashboard/tasks/1/disable", "/dashboard/tasks/1"),
                       ("/dashboard/task-runs/1/retry", "/dashboard/task-runs/1")):
        answer = admin.get(path, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"] == back
    assert schedule_state(store, "aaa-daily") == (True, None) and audit(store) == []
    assert store.get_tasks([1])[0].status is not TaskStatus.DISABLED


# -- tasks ---------------------------------------------------------------------------------------------
def test_an_admin_disables_and_enables_a_task_each_audited(env, store, clock):
    app, secrets = env
    admin = session(app, secrets["admin"])
    [task] = store.create_tasks([NewTask(type="load-git", next_run=clock.now() + HOUR, arguments=TaskArguments(("x",), {}))])
    page = admin.get(f"/test/tasks/{task.id}").text
    found = forms(page)
    assert set(found) == {f"/dashboard/tasks/{task.id}/disable"}
    assert "it does not run until enabled" in text(section(page, "actions"))
    disabled = post(admin, f"/dashboard/tasks/{task.id}/disable", found[f"/dashboard/tasks/{task.id}/disable"])
    assert disabled.status_code == 303 and disabled.headers["location"] == f"/dashboard/tasks/{task.id}?done=disabled#actions"
    assert store.get_tasks([task.id])[0].status is TaskStatus.DISABLED

    clock.advance(MINUTE)
    page = admin.get(f"/test/tasks/{task.id}?done=disabled").text
    assert "✔ Disabled: the task does not run until it is enabled." in text(page)
    assert set(forms(page)) == {f"/dashboard/tasks/{task.id}/enable"}
    enabled = post(admin, f"/dashboard/tasks/{task.id}/enable", forms(page)[f"/dashboard/tasks/{task.id}/enable"])
    assert enabled.status_code == 303 and "done=enabled" in enabled.headers["location"]
    after = store.get_tasks([task.id])[0]
    assert after.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED and after.next_run == task.next_run  # its own next run
    again = post(admin, f"/dashboard/tasks/{task.id}/enable", forms(page)[f"/dashboard/tasks/{task.id}/enable"])
    assert "done=already-enabled" in again.headers["location"]

    target = f"task:{task.id}"
    assert [(e.action, e.outcome, e.at) for e in store.list_audit(target=target)] == [
        ("task.enable", "done: unchanged, it was pending", clock.now()),
        ("task.enable", f"done: pending again at its next run ({task.next_run.isoformat()}), retries refilled",
         clock.now()),
        ("task.disable", "done: disabled", clock.now() - MINUTE)]
    recorded = text(section(admin.get(f"/test/tasks/{task.id}").text, "actions"))
    assert "dashboard-admin task.disable done: disabled" in recorded


def test_retry_makes_a_failed_or_lost_one_shot_task_run_again_now(env, store, clock):
    app, secrets = env
    admin = session(app, secrets["admin"])
    for status in (TaskRunStatus.FAILED, TaskRunStatus.LOST, TaskRunStatus.PERMFAILED):
        task_id, run_id = failed_one_shot(store, clock, status)
        page = admin.get(f"/test/tasks/{task_id}").text
        row = re.search(rf'<tr class="task-run" id="run-{run_id}".*?</tr>', page, flags=re.S).group(0)
        [(path, csrf)] = forms(row).items()
        assert path == f"/dashboard/task-runs/{run_id}/retry" and 'title="Run its task again now' in row
        clock.advance(MINUTE)
        retried = post(admin, path, csrf)
        assert retried.status_code == 303 and retried.headers["location"] == f"/dashboard/tasks/{task_id}?done=retried#actions"
        task = store.get_tasks([task_id])[0]
        assert task.status is TaskStatus.NEXT_RUN_NOT_SCHEDULED and task.next_run == clock.now()
        assert store.peek_ready_tasks("load-hg", clock.now(), 10)[0].id == task_id  # a runner takes it now
        [event] = store.list_audit(target=f"task:{task_id}")
        assert (event.action, event.outcome, event.at) == (
            "task.retry", f"done: pending again now, retries refilled (after run #{run_id}, {status.value})", clock.now())
        # the task is pending again: its run shows no button any more, and a stale page's retry is refused
        assert f"/dashboard/task-runs/{run_id}/retry" not in admin.get(f"/test/tasks/{task_id}").text
        stale = post(admin, path, csrf)
        assert stale.status_code == 409 and f"task {task_id} is already pending" in text(stale.text)
        assert store.get_tasks([task_id])[0] == task
        assert store.list_audit(target=f"task:{task_id}")[0].outcome.startswith(f"refused: task {task_id} is already pending")
        store.set_task_status([task_id], TaskStatus.DISABLED)  # out of the way of the next one's peek


def test_retry_refuses_a_run_that_did_not_fail_and_bad_or_unknown_ids(env, store, clock):
    app, secrets = env
    admin = session(app, secrets["admin"])
    csrf = forms(admin.get("/dashboard/schedules/aaa-daily").text)["/dashboard/schedules/aaa-daily/pause"]
    [grabbed] = store.grab_ready_tasks("load-git", clock.now(), 1)
    store.record_run_events([RunEvent(grabbed.run.id, TaskRunStatus.EVENTFUL, clock.now())])
    eventful = post(admin, f"/dashboard/task-runs/{grabbed.run.id}/retry", csrf)
    assert eventful.status_code == 409
    assert f"run #{grabbed.run.id} is eventful: only a failed, permfailed or lost run is retried" in text(eventful.text)
    unknown = post(admin, "/dashboard/task-runs/999999/retry", csrf)
    assert unknown.status_code == 404 and "task run not found: 999999" in text(unknown.text)
    bad = post(admin, "/dashboard/task-runs/abc/retry", csrf)
    assert bad.status_code == 400 and "run: expected a task run's id (a positive whole number), got 'abc'" in text(bad.text)
    bad_task = post(admin, "/dashboard/tasks/0/disable", csrf)
    assert bad_task.status_code == 400 and "task: expected a task's id (a positive whole number), got '0'" in text(bad_task.text)
    assert post(admin, "/dashboard/tasks/999999/disable", csrf).status_code == 404
    big = admin.post("/dashboard/tasks/1/disable", content=b"csrf=" + b"x" * 5000, follow_redirects=False,
                     headers={"Origin": OWN, "Content-Type": "application/x-www-form-urlencoded"})
    assert big.status_code == 400 and "body: the form may carry at most 4096 bytes" in text(big.text)
    assert [e[1] for e in audit(store)] == ["task.retry"]  # the conflict only
    assert store.get_tasks([1])[0].status is not TaskStatus.DISABLED


def test_the_run_partial_says_why_there_is_no_retry_for_a_pending_task(env, store, clock):
    app, secrets = env
    admin = session(app, secrets["admin"])
    failed = next(r for r in store.list_task_runs(status=[TaskRunStatus.FAILED]))
    page = admin.get(f"/test/tasks/{failed.task}").text  # a recurring task: its retry already due
    row = re.search(rf'<tr class="task-run" id="run-{failed.id}".*?</tr>', page, flags=re.S).group(0)
    assert forms(row) == {} and "its task runs again at its next run" in text(row)
    reader = session(app, secrets["read"])
    task_id, run_id = failed_one_shot(store, clock)
    read_page = reader.get(f"/test/tasks/{task_id}").text
    assert forms(read_page) == {} and "<button" not in read_page
    assert "No action recorded yet" in read_page


def test_the_pages_escape_what_they_show(env, store, clock):
    app, _ = env
    secret = new_secret()
    store.create_api_token("<b>eve</b>", "admin", hash_secret(secret), clock.now(), actor="tests")
    admin = session(app, secret)
    csrf = forms(admin.get("/dashboard/schedules/aaa-daily").text)["/dashboard/schedules/aaa-daily/pause"]
    assert post(admin, "/dashboard/schedules/aaa-daily/pause", csrf).status_code == 303
    shown = admin.get("/dashboard/schedules/aaa-daily?done=%3Cscript%3Ealert(1)%3C/script%3E").text
    assert "&lt;b&gt;eve&lt;/b&gt;" in shown and "<b>eve</b>" not in shown
    assert "<script" not in shown and "alert(1)" not in shown  # an unknown code says nothing
    main = admin.get("/").text
    assert "&lt;b&gt;eve&lt;/b&gt;" in section(main, "actions") and "<b>eve</b>" not in main


def test_the_task_page_shows_its_actions_to_an_admin_only(env, store, clock):
    app, secrets = env
    task_id, run_id = failed_one_shot(store, clock)
    admin = session(app, secrets["admin"])
    page = admin.get(f"/dashboard/tasks/{task_id}")
    assert page.status_code == 200
    found = forms(page.text)
    assert set(found) == {f"/dashboard/tasks/{task_id}/enable", f"/dashboard/task-runs/{run_id}/retry"}
    row = re.search(rf'<tr class="run[^"]*" id="run-{run_id}".*?</tr>', page.text, flags=re.S).group(0)
    assert f'action="/dashboard/task-runs/{run_id}/retry"' in row  # in the failed run's own row
    retried = post(admin, f"/dashboard/task-runs/{run_id}/retry", found[f"/dashboard/task-runs/{run_id}/retry"])
    after = admin.get(retried.headers["location"])
    assert after.status_code == 200 and "✔ Retry asked for: the task is pending again now" in text(after.text)
    assert set(forms(after.text)) == {f"/dashboard/tasks/{task_id}/disable"}
    assert f"dashboard-admin task.retry done: pending again now, retries refilled (after run #{run_id}, failed)" in \
        text(section(after.text, "actions"))
    reader = session(app, secrets["read"]).get(f"/dashboard/tasks/{task_id}").text
    assert forms(reader) == {} and 'name="csrf"' not in reader
    assert "task.retry" in text(section(reader, "actions"))  # what was done, shown to every session


def test_the_trail_as_the_command_line_lists_it(sqlite_store, clock):
    from cli_helpers import ok, ok_json

    app = create_app(sqlite_store, Settings(), clock)
    seed(sqlite_store, clock)
    secrets = tokens(sqlite_store, clock)
    for name in ("aaa-daily", "zzz-daily"):
        assert post(TestClient(app), f"/dashboard/schedules/{name}/pause", None, origin=None,
                    Authorization=f"Bearer {secrets['admin']}").status_code == 303
        clock.advance(MINUTE)
    listed = ok_json(sqlite_store.path, "audit", "list", "--target", "schedule:aaa-daily")
    assert [(e["actor"], e["action"], e["target"], e["outcome"], e["at"]) for e in listed] == [
        ("dashboard-admin", "schedule.pause", "schedule:aaa-daily", "done: paused", (clock.now() - 2 * MINUTE).isoformat())]
    table = ok(sqlite_store.path, "audit", "list", "--limit", "1").stdout
    assert "1 event" in table and "zzz-daily" in table and "aaa-daily" not in table


def test_enable_of_a_task_disabled_while_its_run_is_in_flight_says_why_and_changes_nothing(env, store, clock):
    app, secrets = env
    store.create_task_type(TaskType("load-in-flight", "Load", "x:y", default_interval=timedelta(days=1)))
    [task] = store.create_tasks([NewTask("load-in-flight", clock.now(), TaskArguments(("https://a",)))])
    [grabbed] = store.grab_ready_tasks("load-in-flight", clock.now(), 1)
    store.disable_tasks([task.id], clock.now(), actor="ana")
    admin = session(app, secrets["admin"])
    page = f"/dashboard/tasks/{task.id}"
    refused = post(admin, f"{page}/enable", forms(admin.get(page).text)[f"{page}/enable"])
    assert refused.status_code == 409 and "a run still in flight" in refused.text
    assert store.get_tasks([task.id])[0].status is TaskStatus.DISABLED and grabbed.run.id
