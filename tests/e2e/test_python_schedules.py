"""Schedules declared in Python (``ostinato.Schedules``), end to end: declared on functions with
every option, refused with the schedule and the field named, run in-process on the embedded SQLite
default, and run by several processes with different versions of the code against PostgreSQL,
where the newest declarations win and no two runs of a schedule overlap."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from waiting import wait_for_line, wait_until

import ostinato
from ostinato.config import local_actor
from ostinato.domain.clock import ManualClock
from ostinato.domain.errors import ValidationError
from ostinato.domain.firings import CatchUpKind
from ostinato.domain.schedules import RunStatus, ScheduleKind, ScheduleTiming, assess
from ostinato.store import open_store

H = timedelta(hours=1)


def cleanup(directory: str = "/tmp") -> None:
    """A declared job (at module level: found by its import path)."""


def test_every_option_is_declared_on_the_function():
    jobs = ostinato.Schedules("reports")

    declared = jobs.periodic(every="1h", cooldown="10m", kwargs={"directory": "/srv"}, blackout=["23:00-01:00"],
                             tz="Europe/Paris", dont_run_on=["laptop"], max_expected="30m", max_allowed="45m",
                             retry_backoff=["1m", "10m"])(cleanup)
    jobs.calendar("0 2 * * *", tz="Europe/Paris", max_duration="4h", catch_up=ostinato.CatchUp.all(3),
                  name="nightly-cleanup", mode="submit")(cleanup)
    assert declared is cleanup  # the function itself, still callable

    periodic, nightly = jobs.schedules  # by name
    assert periodic.name == "cleanup" and periodic.scheduling_period == H and periodic.cooldown_duration == H / 6
    assert periodic.arguments.kwargs == {"directory": "/srv"} and periodic.dont_run_on_nodes == ("laptop",)
    assert periodic.retry_backoff == (timedelta(minutes=1), timedelta(minutes=10)) and periodic.tz == "Europe/Paris"
    assert periodic.max_allowed_duration == 45 * H / 60 and len(periodic.blackout_periods) == 1
    assert nightly.name == "nightly-cleanup" and nightly.kind is ScheduleKind.CALENDAR
    assert nightly.catch_up.kind is CatchUpKind.ALL and nightly.mode.value == "submit"
    assert {s.task_type for s in jobs.schedules} == {f"{__name__}:cleanup"}


@pytest.mark.parametrize("declare, field", [
    (lambda j: j.periodic(every="soon", cooldown="1m"), "scheduling_period"),
    (lambda j: j.periodic(every="1h", cooldown="2h"), "cooldown_duration"),
    (lambda j: j.calendar("0 25 * * *", max_duration="1h"), "cron_schedule"),
    (lambda j: j.calendar("0 2 * * *", max_duration="1h", tz="Mars/Olympus"), "tz"),
    (lambda j: j.calendar("0 2 * * *", max_duration="1h", catch_up="sometimes"), "catch_up"),
    (lambda j: j.periodic(every="1h", cooldown="1m", catch_up="skip"), "catch_up"),
    (lambda j: j.periodic(every="1h", cooldown="1m", blackout=["23:00"]), "blackout[0]"),
    (lambda j: j.periodic(every="1h", cooldown="1m", retry_backoff="5m"), "retry_backoff"),
    (lambda j: j.periodic(every="1h", cooldown="1m", colour="blue"), "colour"),
])
def test_bad_declarations_name_the_schedule_and_the_field(declare, field):
    jobs = ostinato.Schedules("reports")
    with pytest.raises(ValidationError) as refused:
        declare(jobs)(cleanup)
    assert refused.value.field == field and refused.value.record == "schedule cleanup"
    assert jobs.schedules == ()


def test_a_nested_function_is_refused_it_has_no_import_path():
    with pytest.raises(ValidationError, match="top level"):
        ostinato.Schedules("reports").periodic(every="1h", cooldown="1m")(lambda: None)


SCRIPT = '''
import os, sys, time
import ostinato

VERSION = int(os.environ["JOBS_VERSION"])
jobs = ostinato.Schedules("jobs")


def tick(path, seconds=0.2):
    start = time.time()
    time.sleep(seconds)  # the job's work: a run that lasts, so that two at once would overlap
    with open(path, "a") as log:
        log.write(f"tick {start:.6f} {time.time():.6f} {os.getpid()} {VERSION}\\n")


def old_job(path):
    open(path, "a").write("old\\n")


period = "2s" if VERSION == 1 else "1s"
jobs.periodic(every=period, cooldown=period, args=[sys.argv[2]])(tick)
if VERSION == 1:
    jobs.periodic(every="1h", cooldown="1h", args=[sys.argv[2]])(old_job)

if __name__ == "__main__":
    import signal, threading
    stop = threading.Event()
    timer = threading.Timer(float(sys.argv[3]), stop.set)  # its run time, unless SIGTERM stops it first
    timer.start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with open(sys.argv[2], "a") as log:
        log.write(f"running {os.getpid()} {VERSION}\\n")
    jobs.run(sys.argv[1], node=f"node-{VERSION}", stop=stop)
    timer.cancel()
'''


def start(script: Path, db: str, log: Path, version: int, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "JOBS_VERSION": str(version), "OSTINATO_SCHEDULE_PING_INTERVAL": "0.5s"}
    return subprocess.Popen([sys.executable, str(script), db, str(log), str(seconds)], cwd=script.parent, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_run_in_process_on_the_embedded_default(tmp_path):
    script, log = tmp_path / "jobs.py", tmp_path / "ticks.log"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = start(script, f"sqlite:///{tmp_path}/jobs.db", log, 1, 4.5)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    ticks = [line.split() for line in log.read_text().splitlines() if line.startswith("tick")]
    assert 2 <= len(ticks) <= 3, ticks  # every 2 s for 4.5 s
    with open_store(f"sqlite:///{tmp_path}/jobs.db") as store:
        assert {r.status for r in store.list_schedule_runs("tick")} == {RunStatus.SUCCEEDED}
        assert store.get_schedule("tick").declared_by == "python:jobs"


def test_processes_with_two_versions_of_the_code_do_not_fight(pg_dsn, tmp_path):
    script, log = tmp_path / "jobs.py", tmp_path / "ticks.log"
    script.write_text(textwrap.dedent(SCRIPT))
    old = start(script, pg_dsn, log, 1, 60)
    processes = [old]
    try:
        wait_for_line(log, "old", timeout=60, alive=lambda: old.poll() is None)  # version 1 ran old_job
        new = start(script, pg_dsn, log, 2, 60)
        processes.append(new)
        with open_store(pg_dsn) as store:
            wait_until(lambda: store.get_schedule("tick").scheduling_period == timedelta(seconds=1), timeout=60,
                       interval=0.05, what="the new version's declarations")
        restarted_old = start(script, pg_dsn, log, 1, 60)  # an old process restarted during the deploy
        processes.append(restarted_old)
        wait_for_line(log, f"running {restarted_old.pid} ", timeout=60, alive=lambda: restarted_old.poll() is None)
        since = time.time()

        def ticked_three_times_since() -> bool:
            """Three runs of tick begun with the three processes up (and five in all)."""
            starts = [float(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("tick")]
            return len(starts) >= 5 and sum(start >= since for start in starts) >= 3

        wait_until(ticked_three_times_since, timeout=60, interval=0.05, what="three ticks with the three processes up",
                   detail=log.read_text)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)  # the stop event of jobs.run: a clean end
    outputs = [p.communicate(timeout=60)[0] for p in (old, new, restarted_old)]
    assert [p.returncode for p in (old, new, restarted_old)] == [0, 0, 0], outputs
    assert "not applied: newer ones" in outputs[2]
    with open_store(pg_dsn) as store:
        tick = store.get_schedule("tick")
        assert tick.scheduling_period == timedelta(seconds=1)  # the newest declaration holds
        assert store.get_schedule("old-job").enabled is False  # removed in version 2: paused, not deleted
        assert len(store.list_schedule_runs("old-job")) == 1
    ticks = sorted((float(a), float(b)) for _, a, b, *_ in (line.split() for line in log.read_text().splitlines()
                                                             if line.startswith("tick")))
    assert len(ticks) >= 5
    assert all(end <= next_start for (_, end), (next_start, _) in zip(ticks, ticks[1:], strict=False)), ticks  # never two at once


def test_a_periodic_declaration_without_cooldown_runs_once_a_period():
    jobs = ostinato.Schedules("reports")
    jobs.periodic(every="1h")(cleanup)
    [declared] = jobs.schedules
    assert declared.scheduling_period == H and declared.cooldown_duration is None


def test_a_script_run_as_main_stores_its_module_name_and_a_scheduler_elsewhere_runs_it(tmp_path):
    """`python jobs.py` declares `jobs:tick`, not `__main__:tick`: an `ostinato scheduler` that can import
    `jobs` (PYTHONPATH) runs the schedule after it, instead of failing it for want of a callable."""
    script, log, db = tmp_path / "jobs.py", tmp_path / "ticks.log", f"sqlite:///{tmp_path}/jobs.db"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = start(script, db, log, 1, 1.0)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    with open_store(db) as store:
        assert store.get_schedule("tick").task_type == "jobs:tick"
        assert {t.type for t in store.list_task_types()} >= {"jobs:tick", "jobs:old_job"}
        runs_before = len(store.list_schedule_runs("tick"))
        due = assess(store.get_schedule("tick"), datetime.now(UTC), ScheduleTiming()).start_times.can_start_by
    time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 0.05)  # until the tick is due: its 2 s cooldown
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "JOBS_VERSION": "1"}
    env = {k: v for k, v in env.items() if k != "OSTINATO_DB"}
    elsewhere = subprocess.run([sys.executable, "-c", "from ostinato.cli import main; main()", "--db", db, "scheduler",
                                "--once", "--node", "elsewhere"], cwd=tmp_path / "..", env=env, capture_output=True,
                               text=True, timeout=60)
    assert elsewhere.returncode == 0, elsewhere.stdout + elsewhere.stderr
    with open_store(db) as store:
        runs = store.list_schedule_runs("tick")
        assert len(runs) == runs_before + 1 and runs[0].status is RunStatus.SUCCEEDED, runs[0]
        assert runs[0].owner_node == "elsewhere"


def test_a_function_of_main_without_a_file_is_refused_saying_how(tmp_path):
    code = textwrap.dedent('''
        import ostinato
        jobs = ostinato.Schedules("stdin")
        def cleanup():
            pass
        try:
            jobs.periodic(every="1h")(cleanup)
        except ostinato.ValidationError as error:
            print(error)
    ''')
    done = subprocess.run([sys.executable, "-"], input=code, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("schedule cleanup: function: expected a function of a module other processes can "
                                  "import"), done.stdout
    assert "jobs.py" in done.stdout


def test_run_now_by_function_or_name_on_a_declared_schedule(tmp_path):
    jobs = ostinato.Schedules("reports")
    jobs.periodic(every="1h")(cleanup)
    clock = ManualClock(datetime(2030, 1, 1, tzinfo=UTC))
    with open_store(f"sqlite:///{tmp_path}/jobs.db") as store:
        store.init_schema()
        jobs.sync(store, clock=clock)
        assert store.pick_schedule(node="n", owner_name="a", tag="t1", now=clock.now())[0].name == "cleanup"
        store.end_schedule_run("cleanup", "t1", status=RunStatus.SUCCEEDED, ended=clock.now())
        clock.advance(timedelta(minutes=1))
        assert store.pick_schedule(node="n", owner_name="a", tag="t2", now=clock.now()) is None
        assert jobs.run_now(cleanup, store, clock=clock).run_requested_at == clock.now()
        assert [(e.actor, e.action) for e in store.list_audit()] == [(local_actor(), "schedule.run-now")]
        assert "@" in local_actor()
        assert store.pick_schedule(node="n", owner_name="a", tag="t3", now=clock.now())[0].name == "cleanup"
        jobs.run_now("cleanup", store, clock=clock, actor="deploy-bot")
        assert store.list_audit()[0].actor == "deploy-bot"
        with pytest.raises(ValidationError, match="job: expected a schedule declared in python:reports"):
            jobs.run_now("other", store, clock=clock)
