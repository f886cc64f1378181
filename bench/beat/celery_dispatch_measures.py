"""What bench/beat/celery_dispatch.py measures with besides the clock: the broker (a Redis client for the
checks), CPU seconds per process from /proc, and the check that a queue holds exactly the messages sent."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import redis

from bench.beat.celery_dispatch_peer import BACKEND_NAME, URL_PREFIX
from ostinato.integrations.celery.app import HEADER, QueueDepths
from test_servers.redis import RedisServer


class Broker:
    """The Redis server and a plain client for the checks."""

    def __init__(self, server: RedisServer) -> None:
        self.server = server
        self.url = server.url
        self.client = redis.Redis.from_url(server.url)
        self.version = self.client.info("server")["redis_version"]

    def flush(self) -> None:
        self.client.flushall()

    def messages(self, queue: str) -> list[dict[str, Any]]:
        """Every message of the list ``queue``, oldest first (kombu LPUSHes and BRPOPs)."""
        raw: list[bytes] = []
        length = self.client.llen(queue)
        for start in range(0, length, 10_000):
            raw.extend(self.client.lrange(queue, start, start + 9_999))
        return [json.loads(m) for m in reversed(raw)]

    def used_memory(self) -> int:
        return int(self.client.info("memory")["used_memory"])


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each of these processes (all its threads), from /proc."""
    found = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    return found


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu_by_pid(pids).values())


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


class CpuMeter:
    """CPU seconds spent by the dispatching process, Redis and PostgreSQL (the postmaster and its children)
    during a phase: unlike the wall time, hardly changed by other work sharing the machine's cores.

    Per process: a process that appears during the phase counts from zero; one that ends during it
    (an autovacuum worker) is left out, rather than subtracted."""

    def __init__(self, redis_pid: int, postmaster_pid: int | None) -> None:
        self.redis_pid, self.postmaster_pid = redis_pid, postmaster_pid
        self.dispatcher_pid = os.getpid()

    def sample(self) -> dict[str, dict[int, float]]:
        sample = {"dispatcher": cpu_by_pid([self.dispatcher_pid]), "redis": cpu_by_pid([self.redis_pid])}
        if self.postmaster_pid is not None:
            sample["postgresql"] = cpu_by_pid([self.postmaster_pid, *children_of(self.postmaster_pid)])
        return sample

    def per_task(self, before: dict[str, dict[int, float]], n: int) -> dict[str, float]:
        """CPU microseconds per task of each part since ``before``."""
        after = self.sample()
        return {part: sum(cpu - before.get(part, {}).get(pid, 0.0) for pid, cpu in pids.items()) / n * 1e6
                for part, pids in after.items()}


def check_messages(broker: Broker, queue: str, app: Any, n: int, want_ids: set[str], *, header: bool) -> dict[str, Any]:
    """The queue holds exactly ``want_ids`` as task ids, each a call with one URL argument; raise otherwise."""
    llen = broker.client.llen(queue)
    depths = QueueDepths(app, cache_seconds=0)
    try:
        depth = depths.depth(queue)
    finally:
        depths.close()
    messages = broker.messages(queue)
    ids = [m["headers"]["id"] for m in messages]
    problems = []
    if llen != n or depth != n:
        problems.append(f"queue {queue}: LLEN {llen:,}, QueueDepths {depth:,}, expected {n:,}")
    if len(set(ids)) != len(ids):
        problems.append(f"queue {queue}: {len(ids) - len(set(ids)):,} task ids twice")
    if set(ids) != want_ids:
        problems.append(f"queue {queue}: {len(set(ids) - want_ids):,} unexpected task ids, "
                        f"{len(want_ids - set(ids)):,} missing")
    names = {m["headers"].get("task") for m in messages}
    if names != {BACKEND_NAME}:
        problems.append(f"queue {queue}: task names {sorted(map(str, names))}")
    bad_args = 0
    for m in messages:
        args, kwargs, _embed = json.loads(base64.b64decode(m["body"]))
        if len(args) != 1 or not str(args[0]).startswith(URL_PREFIX) or kwargs:
            bad_args += 1
    if bad_args:
        problems.append(f"queue {queue}: {bad_args:,} messages without the one URL argument")
    if header and any(m["headers"].get(HEADER, {}).get("kind") != "run" for m in messages):
        problems.append(f"queue {queue}: messages without Ostinato's run header")
    if problems:
        raise SystemExit("check failed: " + "; ".join(problems))
    sizes = [len(json.dumps(m, separators=(",", ":"))) for m in messages]
    return {"llen": llen, "queue_depths": depth, "task_ids_match": True,
            "message_bytes_mean": sum(sizes) / max(1, len(sizes))}
