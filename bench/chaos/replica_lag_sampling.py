"""What the replica-lag benchmark (``bench/chaos/replica_lag.py``) measures while it feeds: the standby's lag, sampled.

:class:`LagSampler` is a thread that, every ``every`` seconds, reads on the primary ``pg_stat_replication``
(``write_lag``, ``flush_lag``, ``replay_lag``, the byte distance ``pg_current_wal_lsn() - replay_lsn``, the sync
state) and on the standby ``now() - pg_last_xact_replay_timestamp()`` and the read routing's own measure (0 when the
standby has replayed all it received, else that age: ``ostinato.store.read_routing``, which decides whether a read
goes to the standby). :func:`summary` makes the median / p90 / max of a phase's samples; :func:`tree_cpu` reads a
server's CPU time (its postmaster and every process it started) from ``/proc``.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

PRIMARY_SAMPLE = """
SELECT pg_current_wal_lsn()::text,
       extract(epoch FROM write_lag), extract(epoch FROM flush_lag), extract(epoch FROM replay_lag),
       pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint,
       pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)::bigint,
       sync_state
FROM pg_stat_replication
"""
STANDBY_SAMPLE = """
SELECT extract(epoch FROM now() - pg_last_xact_replay_timestamp()),
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END,
       pg_last_wal_replay_lsn()::text
"""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(slots=True)
class Sample:
    """One reading of both servers, ``at`` seconds (``time.time()``); lags in seconds, distances in bytes."""

    at: float
    wal_lsn: str
    write_lag: float | None
    flush_lag: float | None
    replay_lag: float | None
    replay_bytes: int | None
    flush_bytes: int | None
    sync_state: str | None
    standby_replay_age: float | None
    routing_lag: float | None
    standby_replay_lsn: str | None


class LagSampler(threading.Thread):
    """Samples both servers every ``every`` seconds until :meth:`stop`; a failed reading is counted, not fatal."""

    def __init__(self, primary_dsn: str, standby_dsn: str, every: float = 0.5) -> None:
        super().__init__(name="lag-sampler", daemon=True)
        self.primary_dsn, self.standby_dsn, self.every = primary_dsn, standby_dsn, every
        self.samples: list[Sample] = []
        self.failures = 0
        self._halt = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.primary_dsn, autocommit=True) as primary, \
                psycopg.connect(self.standby_dsn, autocommit=True) as standby:
            next_at = time.monotonic()
            while not self._halt.is_set():
                try:
                    self.samples.append(read_both(primary, standby))
                except psycopg.Error:
                    self.failures += 1
                next_at += self.every
                self._halt.wait(max(0.0, next_at - time.monotonic()))

    def stop(self) -> list[Sample]:
        self._halt.set()
        self.join(timeout=30)
        return self.samples


def read_both(primary: psycopg.Connection, standby: psycopg.Connection) -> Sample:
    at = time.time()
    row = primary.execute(PRIMARY_SAMPLE).fetchone()
    if row is None:  # no standby connected at this instant
        lsn = primary.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        row = (lsn, None, None, None, None, None, None)
    age, routing, replayed = standby.execute(STANDBY_SAMPLE).fetchone()
    f = _float
    return Sample(at, row[0], f(row[1]), f(row[2]), f(row[3]), row[4], row[5], row[6], f(age), f(routing), replayed)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def quantiles(values: list[float]) -> dict[str, float | None]:
    """Median, p90 and max of ``values`` (None where there is nothing)."""
    if not values:
        return {"median": None, "p90": None, "max": None, "samples": 0}
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return {"median": statistics.median(ordered), "p90": p90, "max": ordered[-1], "samples": len(ordered)}


def summary(samples: list[Sample], start: float, end: float, max_lag: float) -> dict[str, Any]:
    """The lags of the samples taken between ``start`` and ``end`` (the feed), and how they stand to ``max_lag``
    (the default ``read_max_lag``): a missing pg_stat_replication lag counts as 0 (PostgreSQL clears them once
    the standby has caught up and nothing is sent)."""
    within = [s for s in samples if start <= s.at <= end]

    def column(name: str, none_is_zero: bool = True) -> list[float]:
        values = [getattr(s, name) for s in within]
        return [0.0 if v is None else float(v) for v in values if v is not None or none_is_zero]

    routing = column("routing_lag")
    return {
        "samples": len(within),
        "write_lag_s": quantiles(column("write_lag")),
        "flush_lag_s": quantiles(column("flush_lag")),
        "replay_lag_s": quantiles(column("replay_lag")),
        "replay_bytes": quantiles(column("replay_bytes", none_is_zero=False)),
        "flush_bytes": quantiles(column("flush_bytes", none_is_zero=False)),
        "standby_replay_age_s": quantiles(column("standby_replay_age", none_is_zero=False)),
        "routing_lag_s": quantiles(routing),
        "samples_over_read_max_lag": sum(1 for v in routing if v > max_lag),
        "under_read_max_lag": bool(routing) and max(routing) <= max_lag,
        "sync_states": sorted({s.sync_state for s in within if s.sync_state}),
    }


def samples_json(samples: list[Sample], origin: float) -> list[dict[str, Any]]:
    """The samples for the JSON, their time counted from ``origin``."""
    return [asdict(s) | {"at": round(s.at - origin, 3)} for s in samples]


def tree_cpu(data_dir: Path) -> dict[str, float]:
    """CPU seconds (user + system) of the server whose data directory is ``data_dir``: ``total`` for its
    postmaster and every child, those that exited included, and ``startup`` for the startup process (the one that replays WAL on a standby)."""
    try:
        postmaster = int((data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return {"total": 0.0, "startup": 0.0}
    total = startup = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        pid, parent = int(entry.name), int(fields[1])
        if pid != postmaster and parent != postmaster:
            continue
        seconds = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        if pid == postmaster:  # with its children that exited (the backends of writers gone), reaped by it
            seconds += (int(fields[13]) + int(fields[14])) / CLOCK_TICKS
        total += seconds
        if b"startup" in cmdline:
            startup += seconds
    return {"total": total, "startup": startup}
