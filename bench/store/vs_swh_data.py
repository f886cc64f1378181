"""The data of the Ostinato / swh-scheduler comparison (bench/store/vs_swh.py), shared by both sides.

Pure Python with no import of ostinato or swh: the Ostinato side (in the
project's virtual environment) and the peer's driver (``bench/store/vs_swh_peer.py``,
in the peer's virtual environment) both import this file and generate the same
records from the same ``(seed, n, now)``, as plain dicts. Each side converts
them to its own model objects outside its timed region.

Every record is a function of the seed and its index, so a batch is generated
on demand and nothing of size N is held.

- **Listed origins** (N, one lister, visit type ``git``): 80 % have a
  ``last_update`` over the past 5 years (recent ones more common), 20 % have
  none; 10 % are forks; 10 % have an extra loader argument.
- **Visit statuses** (N, in the journal's ``origin_visit_status`` shape, all
  ``full``): a first visit of half the origins (a new snapshot: eventful), in a
  pseudo-random journal order, then a second visit of the same origins (the same
  snapshot: uneventful), in another order. First visits lie between 2 years and
  2 days ago, second visits between the first and 1 day ago, so that every
  cooldown that follows a visit is over at ``now``.
- **A re-listing** (the lister's next run, N records in the same batches): the
  same origins, of which 10 % have a new ``last_update`` within the hour
  before ``now`` (they changed since), the others say what they said.
- **Tasks** (``--tasks``, one recurring task type): one URL argument each,
  ``next_run`` spread over the day before ``now``.
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime, timedelta
from typing import Any

VISIT_TYPE = "git"
LISTER_NAME = "bench-forge"
LISTER_INSTANCE = "forge.example.org"
TASK_TYPE = "load-bench"
URL_PREFIX = "https://forge.example.org/"

WITH_LAST_UPDATE = 0.80
FORKS = 0.10
EXTRA_ARGUMENTS = 0.10
LAST_UPDATE_SPAN = timedelta(days=5 * 365)
FIRST_VISIT_OLDEST = timedelta(days=2 * 365)
FIRST_VISIT_NEWEST = timedelta(days=2)
SECOND_VISIT_NEWEST = timedelta(days=1)
CHANGED_SINCE_LISTED = 0.10

#: The task type both systems get (the task model's fields).
TASK_TYPE_FIELDS: dict[str, Any] = {
    "type": TASK_TYPE,
    "description": "benchmark: load a repository",
    "backend_name": "bench.load",
    "default_interval": timedelta(days=1),
    "min_interval": timedelta(hours=12),
    "max_interval": timedelta(days=64),
    "backoff_factor": 2.0,
    "max_queue_length": 10_000_000,
    "num_retries": 3,
    "retry_delay": timedelta(hours=1),
}

MASK64 = (1 << 64) - 1


def mix64(x: int) -> int:
    """splitmix64: a well-spread 64-bit hash, so that a record depends on its index only."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def bits(h: int, shift: int, width: int) -> float:
    """Bits ``shift .. shift + width`` of ``h`` as a number in [0, 1)."""
    return ((h >> shift) & ((1 << width) - 1)) / (1 << width)


class Permutation:
    """``p -> (a p + c) mod n``: a cheap pseudo-random order of 0..n-1."""

    def __init__(self, n: int, key: int) -> None:
        self.n = max(1, n)
        a = max(1, int(self.n * 0.6180339887)) + key % max(1, self.n // 100)
        while math.gcd(a, self.n) != 1:
            a += 1
        self.a, self.c = a % self.n or 1, mix64(key) % self.n

    def __call__(self, p: int) -> int:
        return (self.a * p + self.c) % self.n


class Dataset:
    """N listed origins and N visit statuses, generated batch by batch."""

    def __init__(self, n: int, seed: int, now: datetime) -> None:
        self.n, self.seed, self.now = n, seed, now
        self.key = mix64(seed)
        self.visited = (n + 1) // 2  # origins with a first visit (eventful)
        self.second_visits = n - self.visited  # the first ones of those get a second (uneventful) visit
        self.order = Permutation(n, mix64(self.key + 1))  # journal order of first visits -> origin index
        self.second_order = Permutation(self.second_visits, mix64(self.key + 2))
        self.owners = max(1, n // 10)

    # -- listed origins
    def url(self, i: int) -> str:
        return f"{URL_PREFIX}user{(i * 2654435761) % self.owners}/project-{i}"

    def listed_origin(self, i: int) -> dict[str, Any]:
        h = mix64(self.key + 4 * i)
        last_update = None
        if bits(h, 32, 10) < WITH_LAST_UPDATE:
            last_update = self.now - LAST_UPDATE_SPAN * bits(h, 0, 32) ** 2
        extra: dict[str, Any] = {}
        if bits(h, 52, 8) < EXTRA_ARGUMENTS:
            extra = {"default_branch": ("main", "master", "develop", "trunk")[(h >> 60) & 3]}
        is_fork = bits(h, 42, 10) < FORKS
        return {
            "url": self.url(i),
            "visit_type": VISIT_TYPE,
            "extra_loader_arguments": extra,
            "last_update": last_update,
            "enabled": True,
            "is_fork": is_fork,
            "forked_from_url": self.url((i * 40503 + 17) % self.n) if is_fork else None,
        }

    def listed_batches(self, batch: int) -> int:
        return -(-self.n // batch)

    def listed_batch(self, k: int, batch: int) -> list[dict[str, Any]]:
        return [self.listed_origin(i) for i in range(k * batch, min((k + 1) * batch, self.n))]

    def relisted_origin(self, i: int) -> dict[str, Any]:
        """Origin ``i`` as the lister's next run lists it: changed within the hour before ``now``, or as before."""
        origin = self.listed_origin(i)
        h = mix64(self.key + 4 * i + 3)
        if bits(h, 32, 10) < CHANGED_SINCE_LISTED:
            origin["last_update"] = self.now - timedelta(hours=1) * bits(h, 0, 32)
        return origin

    def relisted_batch(self, k: int, batch: int) -> list[dict[str, Any]]:
        return [self.relisted_origin(i) for i in range(k * batch, min((k + 1) * batch, self.n))]

    # -- visit statuses
    def snapshot(self, i: int) -> bytes:
        return hashlib.sha1(f"{self.seed}/{i}".encode()).digest()

    def first_visit(self, i: int) -> dict[str, Any]:
        h = mix64(self.key + 4 * i + 1)
        when = self.now - FIRST_VISIT_NEWEST - (FIRST_VISIT_OLDEST - FIRST_VISIT_NEWEST) * bits(h, 0, 32)
        return {"origin": self.url(i), "visit": 1, "type": VISIT_TYPE, "status": "full", "date": when,
                "snapshot": self.snapshot(i)}

    def second_visit(self, i: int) -> dict[str, Any]:
        first = self.first_visit(i)
        h = mix64(self.key + 4 * i + 2)
        latest = self.now - SECOND_VISIT_NEWEST
        when = first["date"] + (latest - first["date"]) * (0.01 + 0.99 * bits(h, 0, 32))
        return {**first, "visit": 2, "date": when}

    def status_batches(self, batch: int) -> int:
        return -(-self.visited // batch) + -(-self.second_visits // batch)

    def status_batch(self, k: int, batch: int) -> list[dict[str, Any]]:
        """Batch ``k`` of the N statuses: the first visits in journal order, then the second visits in another order."""
        first_batches = -(-self.visited // batch)
        if k < first_batches:
            return [self.first_visit(self.order(p)) for p in range(k * batch, min((k + 1) * batch, self.visited))]
        k -= first_batches
        return [self.second_visit(self.order(self.second_order(q)))
                for q in range(k * batch, min((k + 1) * batch, self.second_visits))]

    def index_of(self, url: str) -> int:
        return int(url.rsplit("-", 1)[1])


class TaskData:
    """``n`` recurring tasks of ``TASK_TYPE``."""

    def __init__(self, n: int, seed: int, now: datetime) -> None:
        self.n, self.now, self.key = n, now, mix64(seed + 1_000_003)

    def task(self, i: int) -> dict[str, Any]:
        next_run = self.now - timedelta(seconds=1) - timedelta(days=1) * bits(mix64(self.key + i), 0, 32)
        return {"type": TASK_TYPE, "arguments": {"args": [f"{URL_PREFIX}task/{i}"], "kwargs": {}}, "next_run": next_run}

    def batches(self, batch: int) -> int:
        return -(-self.n // batch)

    def batch(self, k: int, batch: int) -> list[dict[str, Any]]:
        return [self.task(i) for i in range(k * batch, min((k + 1) * batch, self.n))]
