"""Three scheduler processes on one PostgreSQL run 50 short schedules; two are killed
(SIGKILL) and restarted at random moments. No two runs of one schedule ever overlap, and
once the survivors have stolen the dead ones' work no schedule is left in ERROR."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from waiting import wait_until

from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind, ScheduleTiming, State, assess
from ostinato.domain.tasks import TaskArguments, TaskType
from ostinato.store.postgresql import PostgresStore

HERE = Path(__file__).parent
SCHEDULES = 50


def start(node: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ostinato", "scheduler", "--node", node, "--capacity", "6"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_killed_schedulers_never_cause_overlapping_runs(pg_dsn, tmp_path):
    out = tmp_path / "intervals.txt"
    rng = random.Random(7)
    now = datetime.now(UTC)
    with PostgresStore(pg_dsn) as store:
        store.create_task_type(TaskType("job", "a short job", "callables:interval"))
        for i in range(SCHEDULES):
            store.create_schedule(Schedule(
                f"s{i:02d}", ScheduleKind.PERIODIC, "job", now,
                arguments=TaskArguments((str(out), f"s{i:02d}", rng.uniform(0.1, 0.6))),
                scheduling_period=timedelta(seconds=40), cooldown_duration=timedelta(seconds=1)), now)
    env = {**os.environ, "PYTHONPATH": str(HERE), "OSTINATO_DB": pg_dsn,
           "OSTINATO_SCHEDULE_PING_INTERVAL": "0.3s", "OSTINATO_SCHEDULE_PING_TIMEOUT": "1.5s",
           "OSTINATO_SCHEDULE_STEAL_GRACE": "1s", "OSTINATO_SCHEDULE_RETRY_BACKOFF": "0.5s,1s,2s"}
    procs = {node: start(node, env) for node in ("n1", "n2", "n3")}
    kills = 0
    try:
        deadline = time.monotonic() + 16
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(1.0, 3.0))  # the behaviour under test: a kill at a random moment of the runs
            node = rng.choice(["n1", "n2"])  # n3 always survives
            procs[node].send_signal(signal.SIGKILL)
            procs[node].wait()
            kills += 1
            time.sleep(rng.uniform(0.0, 1.0))  # and a restart some random time after it
            procs[node] = start(node, env)
            restarted = datetime.now(UTC)
        # the survivors steal what the dead left (ping timeout + grace + backoff): every schedule has had a good
        # run begun after the last restart
        with PostgresStore(pg_dsn) as store:
            def not_run_since() -> list[str]:
                return [s.name for s in store.list_schedules(limit=SCHEDULES)
                        if s.last_good_start_at is None or s.last_good_start_at < restarted]

            wait_until(lambda: not not_run_since(), timeout=60, interval=0.1,
                       what="every schedule to have a good run after the last restart", detail=not_run_since)
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
    assert kills >= 4
    runs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for line in out.read_text().splitlines():
        name, begin, end, _pid = line.split()
        runs[name].append((float(begin), float(end)))
    assert len(runs) == SCHEDULES, sorted(runs)  # every schedule ran
    for name, intervals in runs.items():
        intervals.sort()
        for (_, end), (begin, _) in zip(intervals, intervals[1:], strict=False):
            assert begin >= end, f"{name}: a run began at {begin} before the previous one ended at {end}"
    with PostgresStore(pg_dsn) as store:
        check = datetime.now(UTC)
        schedules = store.list_schedules(limit=SCHEDULES)
        assert [s.name for s in schedules if assess(s, check, ScheduleTiming()).condition.state is State.ERROR] == []
        lost = sum(1 for s in schedules for r in store.list_schedule_runs(s.name, limit=1000)
                   if r.status is RunStatus.LOST)
    assert lost >= 1  # the kills did leave runs for the protocol to clean up
