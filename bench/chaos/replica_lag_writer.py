"""One writer of the replica-lag benchmark (``bench/chaos/replica_lag.py``), as its own process:
``python replica_lag_writer.py DSN ORIGINS STATUSES WRITERS INDEX BATCH NOW``.

It takes the first STATUSES visit statuses of the journal of ``origins_data.Dataset(ORIGINS, 7, NOW)`` and keeps
those of its share of the origins (origin index modulo WRITERS equals INDEX: what a journal client gets from the
partitions keyed by origin), connects a ``PostgresStore`` to DSN, prints ``ready`` and waits for a line on stdin;
then it hands its statuses to ``store.record_visit_statuses(batch, FeedbackPolicy(), now=…)`` in batches of BATCH,
as the journal client does, and prints ``batch START END STATUSES`` for each (wall-clock seconds, comparable
between the writers), then ``cpu SECONDS`` (its own CPU time while feeding) and exits.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.limits.origins_data import Dataset
from ostinato.domain.visits import FeedbackPolicy, VisitStatus
from ostinato.store.postgresql import PostgresStore


def my_statuses(data: Dataset, total: int, writers: int, index: int) -> list[VisitStatus]:
    """The first ``total`` statuses of the journal whose origin falls to writer ``index`` of ``writers``."""
    mine: list[VisitStatus] = []
    taken = 0
    for statuses in data.status_batches(10_000):
        for status in statuses[: total - taken]:
            if data.index_of(status.origin) % writers == index:
                mine.append(status)
        taken += min(len(statuses), total - taken)
        if taken >= total:
            break
    return mine


def main() -> None:
    dsn, origins, total, writers, index, batch, now = sys.argv[1:8]
    data = Dataset(int(origins), 7, datetime.fromisoformat(now))
    mine = my_statuses(data, int(total), int(writers), int(index))
    store = PostgresStore(dsn)
    policy = FeedbackPolicy()
    size = int(batch)
    print("ready", flush=True)
    sys.stdin.readline()
    cpu = time.process_time()
    for start in range(0, len(mine), size):
        chunk = mine[start: start + size]
        began = time.time()
        store.record_visit_statuses(chunk, policy, now=datetime.now(UTC))
        print(f"batch {began:.6f} {time.time():.6f} {len(chunk)}", flush=True)
    print(f"cpu {time.process_time() - cpu:.3f}", flush=True)
    store.close()


if __name__ == "__main__":
    main()
