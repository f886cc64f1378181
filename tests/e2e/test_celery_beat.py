"""Celery beat over Ostinato, end to end with real parts: Debian's redis-server as the broker, a
Celery worker, PostgreSQL, and ``celery beat -S ostinato.integrations.celery.beat:OstinatoScheduler``
processes. Three beats at once send each fire time exactly once, counted from what the worker
received; a beat killed with its claims loses nothing (they go to another after the lease); a
schedule added through the command line and a newer beat_schedule are sent without a restart; a
beat_schedule entry Ostinato cannot honour stops the beat at start-up, naming the entry and the
field, with nothing written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from test_celery_path import stop_process
from waiting import tail, wait_for_line, wait_until

from ostinato.store.postgresql import PostgresStore
from test_servers.redis import RedisServer

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "src"
SCHEDULER = "ostinato.integrations.celery.beat:OstinatoScheduler"
LEASE = 3  # seconds: OSTINATO_BEAT_LEASE of beat_env
pytestmark = pytest.mark.postgresql


@pytest.fixture(scope="module")
def redis():
    with RedisServer() as server:
        yield server


def beat_env(dsn: str, broker: str, receipts: Path, variant: str = "short", **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{HERE}", "BEAT_BROKER": broker,
            "BEAT_RECEIPTS": str(receipts), "BEAT_VARIANT": variant, "OSTINATO_DB": dsn,
            "OSTINATO_BEAT_LEASE": f"{LEASE}s", "OSTINATO_BEAT_POLL": "0.2s", **extra}


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    handle = open(log, "ab")
    try:
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "beat_project", *args], env=env, cwd=log.parent,
                                stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        handle.close()


def start_beat(env: dict[str, str], log: Path) -> subprocess.Popen:
    return start(["beat", "-S", SCHEDULER, "-l", "info", "--pidfile", ""], env, log)


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen:
    proc = start(["worker", "-P", "threads", "-c", "4", "-l", "info"], env, log)
    wait_for_line(log, " ready.", timeout=60, alive=lambda: proc.poll() is None)
    return proc


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> int | None:
    stop_process(proc, sig)
    return proc.returncode


def receipts(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def receipts_so_far(path: Path) -> list[dict]:
    """What the worker has written while it runs: its complete lines (one it is writing is left out)."""
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.split("\n")[:-1]]


def fire_times(received: list[dict]) -> dict[str, list[datetime]]:
    by_schedule: dict[str, list[datetime]] = defaultdict(list)
    for item in received:
        by_schedule[item["fire"]["schedule"]].append(datetime.fromisoformat(item["fire"]["fire_time"]))
    return {name: sorted(times) for name, times in by_schedule.items()}


def test_three_beats_send_each_fire_time_once_and_pick_up_changes(pg_dsn, redis, tmp_path):
    got = tmp_path / "receipts.jsonl"
    env = beat_env(pg_dsn, redis.url, got)
    subprocess.run([sys.executable, "-m", "ostinato", "db", "upgrade"], env=env, check=True, capture_output=True)
    worker = start_worker(env, tmp_path / "worker.log")
    beats = [start_beat(env, tmp_path / f"beat{i}.log") for i in range(3)]
    try:
        first = f"/beat-{beats[0].pid}"  # the end of its sender's name
        wait_until(lambda: any(r["fire"]["sender"].endswith(first) for r in receipts_so_far(got)), timeout=60,
                   what="the first beat to send", detail=lambda: tail(tmp_path / "beat0.log"))
        stop(beats[0], signal.SIGKILL)  # its claims, if any, go to another beat after the lease
        killed_at = datetime.now(UTC)
        added = subprocess.run([sys.executable, "-m", "ostinato", "schedule", "add", "from-the-cli", "beat_project.record",
                                "from-the-cli", "--every", "2s", "--mode", "send"], env=env, capture_output=True,
                               text=True)
        assert added.returncode == 0, added.stderr

        def sent_past_the_lease() -> bool:
            """The second-level schedules sent without a gap from their first fire time to one well past the
            killed beat's lease (what it held was sent by another), and the schedule added sent too."""
            times = fire_times(receipts_so_far(got))
            after = killed_at + timedelta(seconds=LEASE + 1)
            return "from-the-cli" in times and len(times.get("every-1s", ())) >= 8 and all(
                name in times and times[name][-1] >= after
                and all((b - a).total_seconds() <= period for a, b in pairwise(times[name]))
                for name, period in [("every-1s", 1), ("every-2s", 2)])

        wait_until(sent_past_the_lease, timeout=60, interval=0.1, what="the beats to send past the killed one's lease",
                   detail=lambda: fire_times(receipts_so_far(got)))
        newer = start_beat({**env, "BEAT_VARIANT": "none"}, tmp_path / "beat-newer.log")  # a newer beat_schedule
        beats.append(newer)
        with PostgresStore(pg_dsn) as store:
            wait_until(lambda: store.get_schedule("every-1s").enabled is False, timeout=60, interval=0.1,
                       what="the newer beat_schedule (empty) to pause every-1s",
                       detail=lambda: tail(tmp_path / "beat-newer.log"))
            codes = [stop(b) for b in beats[1:]]
            sent_through = store.get_schedule("every-1s").fired_through
        wait_until(lambda: max(fire_times(receipts_so_far(got))["every-1s"]) == sent_through, timeout=30,
                   what=f"the worker to take what was sent last (every-1s through {sent_through})")
    finally:
        for beat in beats:
            stop(beat)
        stop(worker)
    assert codes == [0, 0, 0], [(tmp_path / f"beat{i}.log").read_text()[-2000:] for i in range(3)]
    for i in (1, 2):  # a clean start and stop: no traceback, no "Exception ignored" from a pool left behind
        logged = (tmp_path / f"beat{i}.log").read_text(errors="replace")
        assert "Traceback" not in logged and "Exception ignored" not in logged, logged[-3000:]
    received = receipts(got)
    keys = Counter((r["fire"]["schedule"], r["fire"]["fire_time"]) for r in received)
    assert [k for k, n in keys.items() if n > 1] == []  # no fire time sent twice
    assert all(r["beat"] for r in received) and len({r["fire"]["sender"] for r in received}) >= 2
    times = fire_times(received)
    for name, period in [("every-1s", 1), ("every-2s", 2)]:
        steps = {(b - a).total_seconds() for a, b in zip(times[name], times[name][1:], strict=False)}
        assert steps == {float(period)}, (name, times[name])  # none missed, none late past the grace
    assert len(times["every-1s"]) >= 8
    assert "from-the-cli" in times  # added while the beats ran
    with PostgresStore(pg_dsn) as store:  # the newest beat_schedule (empty) paused the entries: sends stopped
        assert {s.name: s.enabled for s in store.list_schedules()}["every-1s"] is False
        last = max(times["every-1s"])
        assert store.get_schedule("every-1s").fired_through == last


def test_an_entry_ostinato_cannot_honour_stops_the_beat_and_nothing_is_written(pg_dsn, redis, tmp_path):
    env = beat_env(pg_dsn, redis.url, tmp_path / "receipts.jsonl", "bad")
    subprocess.run([sys.executable, "-m", "ostinato", "db", "upgrade"], env=env, check=True, capture_output=True)
    log = tmp_path / "beat.log"
    beat = start_beat(env, log)
    try:
        beat.wait(60)
    finally:
        stop(beat)
    output = log.read_text(errors="replace")
    assert beat.returncode != 0, output[-3000:]
    assert "beat_schedule entry 'report': schedule.tz" in output and "did you mean Europe/Paris" in output, output[-3000:]
    # one line says it, no traceback (Celery would print it twice, the second a log line per character)
    assert output.count("beat_schedule entry 'report'") == 1 and "Traceback" not in output, output[-3000:]
    assert len(output.splitlines()) < 30, output[-3000:]
    with PostgresStore(pg_dsn) as store:
        assert store.list_schedules() == []
