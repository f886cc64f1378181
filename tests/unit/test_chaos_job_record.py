"""The chaos harness's record of when a schedule's job worked (bench/chaos/chaos_jobs.py, bench/chaos/chaos_checks.py).

A run killed before it wrote its end used to count as working until the kill. A scheduler frozen
(SIGSTOP) past its lease, resumed and killed a moment later then looked like a run that worked
through the freeze, beside the run that took its schedule over: an overlap that never happened.
The job now keeps its last free moment in a progress file, and the check reads it.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository's root: bench.*

from waiting import wait_until

from bench.chaos.chaos_checks import job_intervals, overlaps
from bench.chaos.chaos_jobs import schedule_job


def _progress(record_dir: Path) -> dict[str, float]:
    return {p.name: float(p.read_text()) for p in (record_dir / "progress").iterdir()}


def test_a_finished_job_leaves_its_last_step_in_its_progress_file(tmp_path):
    schedule_job(str(tmp_path), "tidy", 0.12)
    (run,) = job_intervals(tmp_path, killed={})
    assert run.end == "record"
    assert _progress(tmp_path) == {run.token: run.last}


def test_a_stopped_job_records_no_step_after_the_stop(tmp_path):
    stop = threading.Event()
    worker = threading.Thread(target=schedule_job, args=(str(tmp_path), "tidy", 30.0), kwargs={"stop": stop})
    worker.start()
    progress = tmp_path / "progress"
    wait_until(lambda: progress.is_dir() and any(p.stat().st_size for p in progress.iterdir()), timeout=10,
               interval=0.01, what="the job's first step")  # it is working when stopped
    stop.set()
    worker.join(5)
    (run,) = job_intervals(tmp_path, killed={})
    assert run.end == "record" and run.last - run.first < 1.0
    assert _progress(tmp_path)[run.token] == run.last


def test_a_killed_run_ends_at_its_last_free_moment_not_at_the_kill(tmp_path):
    """Run a: started at 100, last free at 101, frozen, then killed at 130. Run b took the schedule
    over at 120. With the progress file, a ended at 101: no overlap; without it, a kill at 130."""
    pid_a, pid_b = 4001, 4002
    (tmp_path / "progress").mkdir()
    (tmp_path / "progress" / "aaaa").write_text(f"{101.0:017.6f}")
    (tmp_path / "schedule_runs.log").write_text(
        f"start tidy aaaa {pid_a} 100.000000\n"
        f"start tidy bbbb {pid_b} 120.000000\n"
        f"end tidy bbbb {pid_b} 120.000000 125.000000 0\n")
    runs = {r.token: r for r in job_intervals(tmp_path, killed={pid_a: 130.0})}
    assert (runs["aaaa"].last, runs["aaaa"].end) == (101.0, "progress")
    assert overlaps(list(runs.values())) == []

    # a step taken after the resume is in the file, and is an overlap
    (tmp_path / "progress" / "aaaa").write_text(f"{129.9:017.6f}")
    runs = job_intervals(tmp_path, killed={pid_a: 130.0})
    assert [(a.token, b.token) for a, b in overlaps(runs)] == [("aaaa", "bbbb")]


def test_a_run_killed_before_its_first_step_did_no_work(tmp_path):
    (tmp_path / "schedule_runs.log").write_text(f"start tidy cccc {os.getpid() + 1} 50.000000\n")
    (run,) = job_intervals(tmp_path, killed={os.getpid() + 1: 80.0})
    assert (run.first, run.last, run.end) == (50.0, 50.0, "killed")
