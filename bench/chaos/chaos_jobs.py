"""The work the chaos harness gives Ostinato: a schedule's job, a task and a loader.

The ``ostinato`` processes import this module by its import path
(``chaos_jobs:schedule_job`` …, with ``bench/chaos/`` on PYTHONPATH). Each callable
keeps its own record in the harness's directory, independent of Ostinato's
tables, with single ``O_APPEND`` writes (atomic, so many processes may append
to one file):

- ``schedule_runs.log``: ``start NAME TOKEN PID T`` when a job begins, and
  ``end NAME TOKEN PID T_FIRST T_LAST STOPPED`` when it returns. The job works
  in steps of ``STEP`` seconds and looks at its ``stop`` event before each
  step; ``T_FIRST``/``T_LAST`` are the first and last moments it found itself
  free to work. A run that never wrote its end died with its process; its
  ``progress/TOKEN`` file holds its latest ``T_LAST`` (overwritten in place at
  each step), so the harness knows when it last worked even when it was
  paused, resumed and killed before it could write its end.
- ``journal.jsonl``: one visit status per visit, as a loader publishes it to
  the journal (origin, visit type, date, status, snapshot); with a broker
  (``chaos_journal``), written once the broker has acknowledged it, with its
  partition and offset;
- ``visits.log``: ``start TOKEN URL PID T`` when a visit begins and
  ``end TOKEN T`` when it ends, for the check that no origin is handed out
  twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from datetime import UTC, datetime

from bench.chaos.chaos_journal import publish
from ostinato.execution.registry import OriginNotFound

#: seconds of work between two looks at the stop event
STEP = 0.05


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def schedule_job(record_dir: str, name: str, seconds: float, fail_rate: float = 0.0, seed: int = 0,
                 stop=None) -> bool:
    """Work ``seconds`` in steps, stopping early when asked; fail at random with ``fail_rate``."""
    log = os.path.join(record_dir, "schedule_runs.log")
    token = os.urandom(6).hex()
    first = time.time()
    _append(log, f"start {name} {token} {os.getpid()} {first:.6f}\n")
    last, stopped = first, False
    deadline = first + seconds
    progress_dir = os.path.join(record_dir, "progress")
    os.makedirs(progress_dir, exist_ok=True)
    progress = os.open(os.path.join(progress_dir, token), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            now = time.time()  # read before the look: a step is recorded only if it was allowed when it began
            if stop is not None and stop.is_set():
                stopped = True
                break
            last = now
            os.pwrite(progress, f"{last:017.6f}".encode(), 0)  # one width: a rewrite leaves no old digits
            if last >= deadline:
                break
            time.sleep(min(STEP, deadline - last))
    finally:
        os.close(progress)
    _append(log, f"end {name} {token} {os.getpid()} {first:.6f} {last:.6f} {int(stopped)}\n")
    if not stopped and fail_rate and random.Random(f"{seed}:{name}:{first:.3f}").random() < fail_rate:
        raise RuntimeError(f"{name}: a failure on purpose (fail_rate {fail_rate})")
    return True


def task_job(key: str, seconds: float, fail_rate: float = 0.0, seed: int = 0) -> bool:
    """A task run: sleep ``seconds``; fail at random with ``fail_rate``; eventful one time in three."""
    time.sleep(seconds)
    draw = random.Random(f"{seed}:{key}:{time.time():.3f}")
    if draw.random() < fail_rate:
        raise RuntimeError(f"{key}: a failure on purpose")
    return draw.random() < 1 / 3


def load(url: str, lister_name=None, lister_instance_name=None, record_dir: str = "", seed: int = 0,
         **extra) -> dict:
    """A simulated loader: a short visit whose status is drawn from the url and the hour; the status
    goes to the journal (the harness's broker, when it runs one) and to the harness's journal file."""
    token = os.urandom(6).hex()
    if record_dir:
        _append(os.path.join(record_dir, "visits.log"), f"start {token} {url} {os.getpid()} {time.time():.6f}\n")
    time.sleep(random.uniform(0.002, 0.03))
    digest = hashlib.sha1(f"{seed}:{url}".encode()).digest()
    draw = digest[0] / 256
    date = datetime.now(UTC)
    if draw < 0.03:
        status, snapshot = "not_found", None
    elif draw < 0.10:
        status, snapshot = "failed", None
    else:
        changes = digest[1] % 3 == 0
        snapshot = hashlib.sha1(f"{url}:{date.hour if changes else 0}".encode()).hexdigest()
        status = "full"
    if record_dir:
        record = {"origin": url, "type": "git", "date": date.isoformat(), "status": status, "visit": 1,
                  "snapshot": snapshot}
        at = publish(url, record)
        if at is not None:
            record.update(partition=at[0], offset=at[1])
        _append(os.path.join(record_dir, "journal.jsonl"), json.dumps(record) + "\n")
        _append(os.path.join(record_dir, "visits.log"), f"end {token} {time.time():.6f}\n")
    if status == "not_found":
        raise OriginNotFound(url)
    if status == "failed":
        raise RuntimeError(f"{url}: the simulated forge did not answer")
    return {"status": status, "snapshot": snapshot, "visit": 1}
