"""The load benchmark's data: what the store holds before the services start, and the journal.

- :func:`seed`: the task types (a loader ``load-<type>`` per visit type, a recurring task
  type, the schedules' task type), the recurring tasks (due over their first interval), the
  periodic schedules (periods 1–60 min, each already in its period at a random phase, so that
  the runs spread evenly instead of all starting at once) and the listed origins, recorded in
  large batches through ``record_listed_origins`` (the bulk path of ``bench/limits/origins.py``);
- :func:`journal_statuses`: the visit statuses a loader fleet would have published for those
  origins, produced to the broker before the measurement.

The callables are those of ``load_jobs.py``. Everything is drawn from a seeded
``random.Random``; origin ``i`` has url :func:`origin_url` and visit type :func:`visit_type`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import Schedule, ScheduleKind
from ostinato.domain.tasks import NewTask, TaskArguments, TaskType
from ostinato.domain.visits import JournalStatus, VisitStatus
from ostinato.store.interface import Store

VISIT_TYPES = ("git", "hg", "svn", "pypi")
SCHEDULE_TYPE = "load-bench-schedule"
TASK_TYPE = "bench-sync"
LOADER_QUEUE = 1000
ORIGIN_BATCH = 20_000
TASK_BATCH = 10_000
LISTERS = (("gitlab", "forge-a.example"), ("gitea", "forge-b.example"))


@dataclass(frozen=True)
class Workload:
    origins: int
    schedules: int
    tasks: int
    statuses: int
    seed: int


def origin_url(i: int) -> str:
    return f"https://forge-{i % 97}.example/{visit_type(i)}/project-{i}"


def visit_type(i: int) -> str:
    return VISIT_TYPES[i % len(VISIT_TYPES)]


def seed(store: Store, workload: Workload, now: datetime, say: Callable[[str], None]) -> dict[str, float]:
    """Fill the store; returns the seconds each part took."""
    rng = random.Random(workload.seed)
    timings: dict[str, float] = {}
    began = time.monotonic()
    for vt in VISIT_TYPES:
        store.create_task_type(TaskType(f"load-{vt}", f"the {vt} loader (trivial)", "load_jobs:load",
                                        max_queue_length=LOADER_QUEUE))
    store.create_task_type(TaskType(SCHEDULE_TYPE, "a schedule's trivial job", "load_jobs:schedule_job"))
    store.create_task_type(TaskType(
        TASK_TYPE, "a recurring trivial task", "load_jobs:task_job", default_interval=timedelta(minutes=2),
        min_interval=timedelta(minutes=1), max_interval=timedelta(minutes=10), backoff_factor=1.5,
        max_queue_length=500, num_retries=3, retry_delay=timedelta(minutes=1)))
    for start in range(0, workload.tasks, TASK_BATCH):
        store.create_tasks([
            NewTask(TASK_TYPE, now + timedelta(seconds=rng.uniform(0, 120)), TaskArguments((f"task-{i}",)))
            for i in range(start, min(start + TASK_BATCH, workload.tasks))])
    timings["tasks_s"] = time.monotonic() - began
    say(f"  {workload.tasks:,} recurring tasks in {timings['tasks_s']:.1f}s")

    began = time.monotonic()
    for i in range(workload.schedules):
        period = timedelta(seconds=rng.uniform(60, 3600))
        # already in its period: last succeeded a random part of a period ago, for one second
        last_start = now - period * rng.random()
        store.create_schedule(Schedule(
            f"load-{i:05d}", ScheduleKind.PERIODIC, SCHEDULE_TYPE, now - timedelta(days=1),
            arguments=TaskArguments((f"load-{i:05d}",)), scheduling_period=period,
            cooldown_duration=period * 0.9, max_allowed_duration=timedelta(minutes=5),
            last_good_start_at=last_start, last_good_end_at=last_start + timedelta(seconds=1),
            last_start_at=last_start, last_end_at=last_start + timedelta(seconds=1), failure_count=0,
            average_good_duration=timedelta(seconds=1)), now)
        if i % 2000 == 1999:
            say(f"  {i + 1:,} schedules after {time.monotonic() - began:.0f}s")
    timings["schedules_s"] = time.monotonic() - began
    say(f"  {workload.schedules:,} schedules in {timings['schedules_s']:.1f}s")

    began = time.monotonic()
    listers = [store.get_or_create_lister(name, instance, now).id for name, instance in LISTERS]
    for number, start in enumerate(range(0, workload.origins, ORIGIN_BATCH)):
        store.record_listed_origins(listers[number % len(listers)], list(_origins(rng, start, min(
            start + ORIGIN_BATCH, workload.origins), now)), now)
        if number % 10 == 9:
            say(f"  {start + ORIGIN_BATCH:,} origins after {time.monotonic() - began:.0f}s")
    timings["origins_s"] = time.monotonic() - began
    say(f"  {workload.origins:,} listed origins in {timings['origins_s']:.1f}s "
        f"({workload.origins / timings['origins_s']:,.0f}/s)")
    return timings


def _origins(rng: random.Random, start: int, stop: int, now: datetime) -> Iterator[ListedOrigin]:
    for i in range(start, stop):
        # 80 % of the forges give a last update over the past two years
        updated = now - timedelta(hours=rng.uniform(1, 2 * 365 * 24)) if rng.random() < 0.8 else None
        yield ListedOrigin(origin_url(i), visit_type(i), last_update=updated)


def journal_statuses(workload: Workload, now: datetime) -> list[VisitStatus]:
    """``statuses`` visit statuses of the seeded origins (origin ``i % origins``, visit ``1 + i //
    origins``), dated over the past year: 80 % full (a new snapshot half the time), 10 % partial,
    5 % failed, 5 % not found."""
    rng = random.Random(workload.seed + 1)
    statuses = []
    for i in range(workload.statuses):
        origin = i % workload.origins
        visit = 1 + i // workload.origins
        roll = rng.random()
        if roll < 0.8:
            status = JournalStatus.FULL
        elif roll < 0.9:
            status = JournalStatus.PARTIAL
        elif roll < 0.95:
            status = JournalStatus.FAILED
        else:
            status = JournalStatus.NOT_FOUND
        snapshot = None
        if status in (JournalStatus.FULL, JournalStatus.PARTIAL):
            snapshot = rng.randbytes(20) if rng.random() < 0.5 else origin.to_bytes(20, "big")
        when = now - timedelta(days=365) + timedelta(seconds=visit * 3600 + rng.randrange(360 * 86400))
        statuses.append(VisitStatus(origin_url(origin), visit, visit_type(origin), status, when, snapshot))
    return statuses
