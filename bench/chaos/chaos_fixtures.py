"""The chaos harness's workload: schedules, task types and tasks, a lister's origins.

Everything is drawn from one seeded ``random.Random``, so two runs with the same
``--seed`` set up the same work. The callables are those of ``chaos_jobs.py``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import Schedule, ScheduleKind
from ostinato.domain.tasks import NewTask, TaskArguments, TaskType
from ostinato.store.postgresql import PostgresStore

SCHEDULE_TYPE = "chaos-schedule"
TASK_TYPE = "chaos-task"
LOADER_TYPE = "load-git"
#: share of schedules that fail at random, and how often they do
FLAKY_SHARE, FLAKY_RATE = 0.1, 0.2
ORIGIN_BATCH = 10_000


@dataclass(frozen=True)
class Workload:
    schedules: int
    origins: int
    tasks: int
    seed: int

    #: the longest period and run time, for the recovery bound
    max_period: float = 60.0
    max_run: float = 15.0


@dataclass(frozen=True)
class ScheduleSpec:
    name: str
    period: float
    run_time: float
    fail_rate: float


def schedule_specs(workload: Workload) -> list[ScheduleSpec]:
    """Periods 10–60 s; run times 0.1–15 s and at most a quarter of the period; the cooldown is a third, so
    a run ends at most 5/6 of a period after the previous good start: a sixth of the period to spare (with
    a third as the run's limit there was none, and a schedule whose run took a whole third was late, by
    the scheduler's own latency, at every run); some flaky."""
    rng = random.Random(workload.seed)
    specs = []
    for i in range(workload.schedules):
        period = rng.uniform(10.0, workload.max_period)
        run_time = rng.uniform(0.1, min(workload.max_run, period / 4))
        flaky = rng.random() < FLAKY_SHARE
        specs.append(ScheduleSpec(f"chaos-{i:04d}", period, run_time, FLAKY_RATE if flaky else 0.0))
    return specs


def set_up(store: PostgresStore, workload: Workload, record_dir: Path, now: datetime) -> list[ScheduleSpec]:
    """Create the task types, the tasks, the schedules and the origins; returns the schedules' specs."""
    store.create_task_type(TaskType(SCHEDULE_TYPE, "a chaos schedule's job", "chaos_jobs:schedule_job"))
    store.create_task_type(TaskType(
        TASK_TYPE, "a chaos task", "chaos_jobs:task_job", default_interval=timedelta(seconds=15),
        min_interval=timedelta(seconds=10), max_interval=timedelta(seconds=60), backoff_factor=1.5,
        max_queue_length=100, num_retries=3, retry_delay=timedelta(seconds=5)))
    store.create_task_type(TaskType(LOADER_TYPE, "the simulated loader", "chaos_jobs:load", max_queue_length=200))
    rng = random.Random(workload.seed + 1)
    store.create_tasks([
        NewTask(TASK_TYPE, now + timedelta(seconds=rng.uniform(0, 15)),
                TaskArguments((f"task-{i}", round(rng.uniform(0.05, 2.0), 3), 0.1 if i % 10 == 0 else 0.0,
                               workload.seed)))
        for i in range(workload.tasks)])
    specs = schedule_specs(workload)
    for spec in specs:
        store.create_schedule(Schedule(
            spec.name, ScheduleKind.PERIODIC, SCHEDULE_TYPE, now,
            arguments=TaskArguments((str(record_dir), spec.name, round(spec.run_time, 3), spec.fail_rate,
                                     workload.seed)),
            scheduling_period=timedelta(seconds=spec.period), cooldown_duration=timedelta(seconds=spec.period / 3),
            max_allowed_duration=timedelta(seconds=spec.run_time * 3 + 30)), now)
    lister = store.get_or_create_lister("chaos-forge", "main", now)
    extra = {"record_dir": str(record_dir), "seed": workload.seed}
    for start in range(0, workload.origins, ORIGIN_BATCH):
        stop = min(start + ORIGIN_BATCH, workload.origins)
        store.record_listed_origins(lister.id, [
            ListedOrigin(f"https://forge.example/repo/{i}", "git", extra,
                         last_update=now - timedelta(hours=rng.uniform(1, 24 * 90)) if i % 4 else None)
            for i in range(start, stop)], now)
    return specs
