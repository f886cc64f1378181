"""The load of the API-reads benchmark (``bench/face/api_reads.py``): ``ostinato api serve`` started, and driven.

:func:`serve` starts one ``ostinato api serve --no-history`` on a free port (as ``bench/face/remote_store.py`` does),
with ``OSTINATO_DB`` the primary and, for the standby's run, ``OSTINATO_READ_DB`` the standby (every other
``OSTINATO_*`` variable of this environment left out). :func:`run_cell` drives it with C client threads, each
with its own ``httpx.Client`` (one kept-alive connection, ``Authorization: Bearer`` the read token) sending GETs
back to back for a fixed time, each request an endpoint drawn from a mix (:data:`ENDPOINTS`, weights
:data:`MIX`). It counts the answers, their latency, the non-2xx answers and transport errors, and the value of
each answer's ``X-Ostinato-Read-From``; and the CPU time, over the cell, of the API server process
(``/proc/PID/stat``), of each PostgreSQL server with its processes (``replica_lag_sampling.tree_cpu``) and of
this client process.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.chaos.replica_lag_sampling import tree_cpu
from bench.common.processes import stop_processes
from bench.face import remote_store
from bench.face.api_reads_seed import schedule_name
from bench.limits.origins_data import VISIT_TYPE, Dataset
from bench.scale import load_metrics
from test_servers.postgres import free_port

#: name -> what a request of it asks: (path, query) drawn from a random generator
Request = tuple[str, dict[str, Any]]


def endpoints(data: Dataset, schedules: int) -> dict[str, Callable[[random.Random], Request]]:
    """The GETs: a page of 100 schedules after a random one; the dashboard's page of a random seeded origin
    (its listing, visit stats, change rate and next visit: the API has no JSON route for one origin); the
    origin metrics; the Prometheus ``/metrics``; the dashboard's main page ``/``."""
    return {
        "schedules": lambda rng: ("/api/v1/schedules",
                                  {"limit": 100, "after": schedule_name(rng.randrange(0, schedules))}),
        "origin": lambda rng: ("/dashboard/origins", {"url": data.url(rng.randrange(data.n)), "visit_type": VISIT_TYPE}),
        "origin-metrics": lambda rng: ("/api/v1/origin-metrics", {}),
        "metrics": lambda rng: ("/metrics", {}),
        "dashboard": lambda rng: ("/", {}),
    }


#: the mix's weights: mostly programs reading lists and origins, a few scrapes and dashboard refreshes (a
#: Prometheus scrapes /metrics every 15-60 s, a dashboard refreshes every 30 s: their share of a busy server's
#: requests is small)
MIX = {"schedules": 30, "origin": 40, "origin-metrics": 20, "metrics": 5, "dashboard": 5}


def serve(port: int, primary: str, standby: str | None) -> subprocess.Popen:
    """``ostinato api serve`` on ``port`` over ``primary`` (its reads on ``standby`` when given), once it answers."""
    return remote_store.serve(primary, port, "--no-history", settings={"OSTINATO_READ_DB": standby} if standby else None)


def stop(process: subprocess.Popen) -> None:
    stop_processes({"api": process}, grace=30)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) of process ``pid`` so far."""
    return load_metrics.process_cpu([pid]).get(pid, 0.0)


def quantile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


class Cell:
    """One measure: C clients for ``seconds`` on a weighted mix of endpoints."""

    def __init__(self, base_url: str, secret: str, routes: dict[str, Callable[[random.Random], Request]],
                 weights: dict[str, int], clients: int, seconds: float, seed: int):
        self.base_url, self.secret, self.routes = base_url, secret, routes
        self.names = list(weights)
        self.cumulative = [sum(list(weights.values())[: i + 1]) for i in range(len(self.names))]
        self.clients, self.seconds, self.seed = clients, seconds, seed
        self.latencies: list[list[float]] = [[] for _ in range(clients)]
        self.per_endpoint: list[Counter] = [Counter() for _ in range(clients)]
        self.sources: list[Counter] = [Counter() for _ in range(clients)]
        self.errors: list[Counter] = [Counter() for _ in range(clients)]
        self.deadline = 0.0

    def _client(self, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        latencies, per_endpoint = self.latencies[index], self.per_endpoint[index]
        sources, errors = self.sources[index], self.errors[index]
        total = self.cumulative[-1]
        with httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {self.secret}"},
                          timeout=60) as client:
            while time.perf_counter() < self.deadline:
                pick = rng.random() * total
                name = next(n for n, c in zip(self.names, self.cumulative, strict=True) if pick < c)
                path, params = self.routes[name](rng)
                began = time.perf_counter()
                try:
                    answer = client.get(path, params=params)
                except httpx.HTTPError as exc:
                    errors[f"{name}: {type(exc).__name__}"] += 1
                    continue
                latencies.append(time.perf_counter() - began)
                per_endpoint[name] += 1
                if not 200 <= answer.status_code < 300:
                    errors[f"{name}: HTTP {answer.status_code}"] += 1
                sources[answer.headers.get("x-ostinato-read-from", "none")] += 1

    def run(self, server_pid: int, data_dirs: dict[str, Path]) -> dict[str, Any]:
        threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(self.clients)]
        before = (process_cpu(server_pid), {k: tree_cpu(d)["total"] for k, d in data_dirs.items()}, time.process_time())
        started = time.perf_counter()
        self.deadline = started + self.seconds
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        after = (process_cpu(server_pid), {k: tree_cpu(d)["total"] for k, d in data_dirs.items()}, time.process_time())
        latencies = sorted(x for part in self.latencies for x in part)
        answers = len(latencies)
        sources = sum(self.sources, Counter())
        errors = sum(self.errors, Counter())
        per_request = 1e3 / answers if answers else 0.0  # CPU seconds over the cell -> ms a request
        cpu = {"api_server": after[0] - before[0], "client": after[2] - before[2],
               **{k: after[1][k] - before[1][k] for k in data_dirs}}
        return {
            "clients": self.clients, "seconds": elapsed, "answers": answers,
            "requests_per_s": answers / elapsed, "errors": sum(errors.values()), "error_kinds": dict(errors),
            "latency_ms": {"p50": 1e3 * (quantile(latencies, 0.50) or 0), "p90": 1e3 * (quantile(latencies, 0.90) or 0),
                           "p99": 1e3 * (quantile(latencies, 0.99) or 0), "max": 1e3 * (latencies[-1] if latencies else 0)},
            "per_endpoint": dict(sum(self.per_endpoint, Counter())),
            "read_from": dict(sources), "standby_share": sources.get("standby", 0) / answers if answers else 0.0,
            "cpu_s": cpu, "cpu_ms_per_request": {k: v * per_request for k, v in cpu.items()},
            # what the API server alone could answer on one core, from its CPU a request (it is one process)
            "api_core_ceiling_requests_per_s": answers / cpu["api_server"] if cpu["api_server"] else None,
            "load_average_1min": os.getloadavg()[0],
        }


def run_cell(port: int, secret: str, routes: dict[str, Callable[[random.Random], Request]], weights: dict[str, int],
             clients: int, seconds: float, seed: int, server_pid: int, data_dirs: dict[str, Path]) -> dict[str, Any]:
    return Cell(f"http://127.0.0.1:{port}", secret, routes, weights, clients, seconds, seed).run(server_pid, data_dirs)


__all__ = ["MIX", "endpoints", "free_port", "run_cell", "serve", "stop"]
