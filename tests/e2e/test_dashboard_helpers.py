"""Helpers of the dashboard tests (no tests here): a store seeded with what the page shows, and
read/admin tokens on it."""

from __future__ import annotations

from datetime import timedelta

from ostinato.api.tokens import hash_secret, new_secret
from ostinato.domain.clock import ManualClock
from ostinato.domain.firings import CatchUp
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import RunMode, RunStatus, Schedule, ScheduleKind
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskRunStatus, TaskType
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.store import Store

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
MINUTE = timedelta(minutes=1)
#: the ERROR schedule's reason as the page writes it
STALE_TEXT = "no good run within its scheduling period"


def tokens(store: Store, clock: ManualClock) -> dict[str, str]:
    """A read and an admin token; their secrets by scope."""
    secrets = {"read": new_secret(), "admin": new_secret()}
    for scope, secret in secrets.items():
        store.create_api_token(f"dashboard-{scope}", scope, hash_secret(secret), clock.now(), actor="tests")
    return secrets


def periodic(name: str, created, period: timedelta, **kwargs) -> Schedule:
    return Schedule(name=name, kind=ScheduleKind.PERIODIC, task_type="load-git", created_at=created,
                    scheduling_period=period, **kwargs)


def seed(store: Store, clock: ManualClock) -> None:
    """Schedules in every condition, a visit type with activity and lag, task runs that failed.

    Schedules, at the clock's now: ``bills-ca`` ERROR (stale for 2 h), ``archive-old`` ERROR (stale
    for 9 h: the most overdue), ``flaky-sync`` WARNING (its last run failed), ``paused-job`` WARNING
    (paused), ``aaa-daily`` and ``zzz-daily`` OK."""
    now = clock.now()
    git = TaskType(type="load-git", description="Load git origins", backend_name="ostinato.examples:load_directory",
                   default_interval=DAY)
    store.create_task_type(git)
    store.create_task_type(TaskType(type="load-hg", description="Load hg origins",
                                    backend_name="ostinato.examples:load_directory", default_interval=DAY))
    store.create_schedule(periodic("flaky-sync", now - 2 * HOUR, DAY), now - 2 * HOUR)
    picked = store.pick_schedules(node="node-1", owner_name="scheduler-a", tags=["tag-flaky"], now=now - HOUR)
    assert [s.name for s, _ in picked] == ["flaky-sync"], picked
    assert store.end_schedule_run("flaky-sync", "tag-flaky", status=RunStatus.FAILED, ended=now - 50 * MINUTE,
                                  detail={"error": "connection refused by the bill server"})
    store.create_schedule(periodic("bills-ca", now - 3 * HOUR, HOUR), now - 3 * HOUR)
    store.create_schedule(periodic("archive-old", now - 10 * HOUR, HOUR), now - 10 * HOUR)
    store.create_schedule(periodic("paused-job", now, DAY, enabled=False), now)
    store.create_schedule(periodic("aaa-daily", now, DAY), now)
    store.create_schedule(periodic("zzz-daily", now, 2 * DAY), now)

    # git origins: lags of 30 min, 2 h, 3 h, 2 d and 40 d, two visited in the last hour (and changed again
    # 3 min ago), two handed out and not reported; an hg origin never visited
    lister = store.get_or_create_lister("github", "github.com", now - 100 * DAY)
    lags = [30 * MINUTE, 2 * HOUR, 3 * HOUR, 2 * DAY, 40 * DAY, 5 * DAY, 6 * DAY]
    store.record_listed_origins(lister.id, [ListedOrigin(f"https://forge.example/{i}", "git", last_update=now - lag)
                                            for i, lag in enumerate(lags)]
                                + [ListedOrigin("https://hg.example/never", "hg")], now - 100 * DAY)
    feedback = FeedbackPolicy()
    for i, at in ((5, now - 20 * MINUTE), (6, now - 10 * MINUTE)):
        store.record_visit_statuses([VisitStatus(f"https://forge.example/{i}", 1, "git", JournalStatus.FULL, at,
                                                 bytes([i]) * 20)], feedback, now=at)
    grabbed = store.grab_next_visits("git", [GrabRequest(VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST, 2)],
                                     now - 5 * MINUTE)
    assert len(grabbed) == 2
    store.record_listed_origins(lister.id, [ListedOrigin(f"https://forge.example/{i}", "git",
                                                         last_update=now - 3 * MINUTE)
                                            for i in (5, 6)], now - 2 * MINUTE)  # changed again since their visit
    store.update_origin_metrics(now)

    # tasks: two runs fail (one failed, one lost), one task stays ready
    store.create_tasks([NewTask(type="load-git", next_run=now - HOUR, arguments=TaskArguments((f"repo-{n}",), {}))
                        for n in range(3)])
    runs = store.grab_ready_tasks("load-git", now - 30 * MINUTE, 2)
    store.record_run_events([
        RunEvent(runs[0].run.id, TaskRunStatus.FAILED, now - 20 * MINUTE, metadata={"error": "disk full on worker-3"}),
        RunEvent(runs[1].run.id, TaskRunStatus.LOST, now - 10 * MINUTE, metadata={"lost": "no report from the executor"}),
    ])


def seed_fire_times(store: Store, clock: ManualClock) -> None:
    """``beat-minutely``, a schedule the beats send every minute with the catch-up rule ``all:3``:
    its beats were away for its first 10 fire times (claimed 30 s after the last of them: the last 3
    caught up, the 7 before skipped), then its next was sent on time."""
    now, second = clock.now(), timedelta(seconds=1)
    store.create_schedule(periodic("beat-minutely", now - 20 * MINUTE, MINUTE, mode=RunMode.SEND,
                                   catch_up=CatchUp.all(3)), now - 20 * MINUTE)
    for at in (now - 10 * MINUTE + 30 * second, now - 9 * MINUTE + second):
        claims = store.claim_firings(sender="node-1/beat-a", tag=f"tag-{at:%M}", now=at, lease=30 * second)
        store.mark_firings_sent(f"tag-{at:%M}", [(c.schedule, c.nominal_at) for c in claims], at + second)
