"""What the dashboard reads, on every store: each visit type's activity in the origin metrics
(visits in flight, visits of the last hour, eventful and uneventful), ``task_activity``
(ready tasks and runs in flight per type up to a cap, failed runs among the newest runs, the newest failures)
and ``recent_task_runs`` (a task type's newest runs, for its grid)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0
from helpers import GIT, HG, new

from ostinato.domain.errors import ValidationError
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.tasks import RunEvent, TaskPolicy, TaskPriority, TaskRunStatus
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
S = TaskRunStatus


def url(i: int) -> str:
    return f"https://forge.example/{i}"


def visit(store, i, at, *, snapshot=b"\x01" * 20, kind="full"):
    status = VisitStatus(url(i), 1, "git", JournalStatus(kind), at, snapshot)
    store.record_visit_statuses([status], FeedbackPolicy(), now=at)


# -- origin metrics: activity ---------------------------------------------------------
def test_origin_metrics_count_visits_in_flight_and_of_the_last_hour(store):
    lister = store.get_or_create_lister("github", "github.com", T0 - 100 * DAY)
    store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git", last_update=T0 - 2 * DAY)
                                            for i in range(1, 9)], T0 - 100 * DAY)
    # 1: eventful twice (first snapshot, then a new one) — its last visit 10 min ago
    visit(store, 1, T0 - 2 * HOUR, snapshot=b"\x01" * 20)
    visit(store, 1, T0 - 10 * MINUTE, snapshot=b"\x02" * 20)
    # 2: eventful 3 h ago, uneventful 20 min ago; 3: failed 30 min ago; 4: visited 2 h ago only
    visit(store, 2, T0 - 3 * HOUR)
    visit(store, 2, T0 - 20 * MINUTE)
    visit(store, 3, T0 - 30 * MINUTE, kind="failed", snapshot=None)
    visit(store, 4, T0 - 2 * HOUR)
    # 5, 6, 7 handed out and not reported; 7 reports after its grab; 8 never touched
    grabbed = store.grab_next_visits("git", [GrabRequest(VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST, 3)],
                                     T0 - 5 * MINUTE)
    assert sorted(v.url for v in grabbed) == [url(5), url(6), url(7)]
    visit(store, 7, T0 - MINUTE)

    [git] = store.update_origin_metrics(T0)
    assert git.visits_in_flight == 2                 # 5 and 6
    assert git.visits_last_hour == 4                 # 1, 2, 3 and 7
    assert git.eventful_visits_last_hour == 2        # 1 (new snapshot) and 7 (first snapshot)
    assert git.uneventful_visits_last_hour == 1      # 2
    assert git.eventful_ratio == pytest.approx(2 / 3)
    assert store.get_origin_metrics() == [git]
    # an hour later the window is empty; a grab whose in-flight timeout is over no longer counts
    [later] = store.update_origin_metrics(T0 + 2 * DAY)
    assert (later.visits_in_flight, later.visits_last_hour, later.eventful_visits_last_hour,
            later.uneventful_visits_last_hour, later.eventful_ratio) == (0, 0, 0, 0, None)


def test_activity_counts_an_origin_several_listers_list_once(store):
    github = store.get_or_create_lister("github", "github.com", T0 - 100 * DAY)
    mirror = store.get_or_create_lister("mirror", "mirror.example", T0 - 100 * DAY)
    for lister in (github, mirror):
        store.record_listed_origins(lister.id, [ListedOrigin(url(1), "git", last_update=T0 - DAY)], T0 - 90 * DAY)
    visit(store, 1, T0 - 10 * MINUTE)
    metrics = store.update_origin_metrics(T0)
    assert sorted(m.origins_known for m in metrics) == [1, 1]  # listed by both
    assert sum(m.visits_last_hour for m in metrics) == 1
    assert sum(m.eventful_visits_last_hour for m in metrics) == 1


# -- task activity --------------------------------------------------------------------
@pytest.fixture
def types(store):
    store.create_task_type(GIT)
    store.create_task_type(HG)


def fail_runs(store, task_type, statuses, at):
    runs = store.grab_ready_tasks(task_type, at, len(statuses))
    assert len(runs) == len(statuses)
    store.record_run_events([RunEvent(r.run.id, status, at) for r, status in zip(runs, statuses, strict=True)])
    return [r.run.id for r in runs]


def test_task_activity_counts_ready_tasks_per_type(store, types):
    store.create_tasks([new(f"r{i}", next_run=T0 - HOUR) for i in range(5)]
                       + [new("later", next_run=T0 + HOUR)]
                       + [new(f"p{i}", next_run=T0 - HOUR, priority=TaskPriority.HIGH, policy=TaskPolicy.ONESHOT)
                          for i in range(2)])
    store.grab_ready_tasks("load-git", T0, 1)  # scheduled: no longer ready
    activity = store.task_activity(T0)
    assert activity.ready == {"load-git": 6, "load-hg": 0}  # 4 plain + 2 prioritised
    assert store.task_activity(T0 + 2 * HOUR).ready["load-git"] == 7
    assert activity.in_flight == {"load-git": 1}
    capped = store.task_activity(T0, count_cap=3)
    assert capped.ready["load-git"] == 3 and capped.count_cap == 3
    assert activity.failed == {} and activity.recent_failures == ()
    store.grab_ready_tasks("load-git", T0, 3)
    store.grab_ready_tasks("load-git", T0, 2, priority=True)
    assert store.task_activity(T0).in_flight == {"load-git": 6}
    assert store.task_activity(T0, count_cap=4).in_flight == {"load-git": 4}


def test_task_activity_lists_recent_failures_newest_first(store, types):
    store.create_tasks([new(f"g{i}", next_run=T0 - HOUR) for i in range(4)]
                       + [new(f"h{i}", type="load-hg", next_run=T0 - HOUR) for i in range(2)])
    git_runs = fail_runs(store, "load-git", [S.FAILED, S.EVENTFUL, S.LOST, S.UNEVENTFUL], T0)
    hg_runs = fail_runs(store, "load-hg", [S.PERMFAILED, S.FAILED], T0 + MINUTE)
    activity = store.task_activity(T0 + HOUR, failures_limit=3)
    assert activity.failed == {"load-git": 2, "load-hg": 2}
    assert [(t, r.id, r.status) for t, r in activity.recent_failures] == [
        ("load-hg", hg_runs[1], S.FAILED), ("load-hg", hg_runs[0], S.PERMFAILED), ("load-git", git_runs[2], S.LOST)]
    # only the newest runs are looked at: the two hg runs
    narrow = store.task_activity(T0 + HOUR, runs_window=2)
    assert narrow.failed == {"load-hg": 2} and narrow.runs_window == 2
    assert [r.id for _, r in narrow.recent_failures] == [hg_runs[1], hg_runs[0]]


@pytest.mark.parametrize("field, value", [("count_cap", 0), ("runs_window", -1), ("failures_limit", "3")])
def test_task_activity_refuses_bad_bounds(store, field, value):
    with pytest.raises(ValidationError) as raised:
        store.task_activity(T0, **{field: value})
    assert raised.value.field == field


def test_recent_task_runs_are_a_types_newest_runs_newest_first(store, types):
    store.create_tasks([new(f"g{i}", next_run=T0 - HOUR) for i in range(4)]
                       + [new(f"h{i}", type="load-hg", next_run=T0 - HOUR) for i in range(2)])
    git_runs = fail_runs(store, "load-git", [S.FAILED, S.EVENTFUL, S.LOST], T0)
    hg_runs = fail_runs(store, "load-hg", [S.PERMFAILED, S.UNEVENTFUL], T0 + MINUTE)
    in_flight = [r.run.id for r in store.grab_ready_tasks("load-git", T0 + 2 * MINUTE, 1)]
    recent = store.recent_task_runs("load-git")
    assert [(r.id, r.status) for r in recent] == [(in_flight[0], S.SCHEDULED), (git_runs[2], S.LOST),
                                                 (git_runs[1], S.EVENTFUL), (git_runs[0], S.FAILED)]
    assert [r.id for r in store.recent_task_runs("load-git", limit=2)] == [in_flight[0], git_runs[2]]
    assert [r.id for r in store.recent_task_runs("load-hg")] == hg_runs[::-1]
    # only the newest runs of every type are looked at: the newest three are one git run and the two hg runs
    assert [r.id for r in store.recent_task_runs("load-git", window=3)] == in_flight
    assert store.recent_task_runs("load-svn") == []


@pytest.mark.parametrize("field, value", [("limit", 0), ("window", -1), ("limit", True)])
def test_recent_task_runs_refuse_bad_bounds(store, field, value):
    with pytest.raises(ValidationError) as raised:
        store.recent_task_runs("load-git", **{field: value})
    assert raised.value.field == field
