"""Two runner processes on one PostgreSQL never dispatch the same task twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from waiting import wait_until

from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskStatus, TaskType
from ostinato.store.postgresql import PostgresStore

HERE = Path(__file__).parent


def test_concurrent_grabs_are_disjoint(pg_dsn):
    now = datetime.now(UTC)
    with PostgresStore(pg_dsn) as setup:
        setup.create_task_type(TaskType("t", "t", "x:y", default_interval=timedelta(days=1)))
        setup.create_tasks([NewTask("t", now, TaskArguments((i,))) for i in range(5000)])
    stores = [PostgresStore(pg_dsn) for _ in range(4)]
    grabbed: list[list[int]] = [[] for _ in stores]
    barrier = threading.Barrier(len(stores))

    def grab(index: int) -> None:
        barrier.wait()
        while batch := stores[index].grab_ready_tasks("t", now, 37, backend_id=f"r{index}"):
            grabbed[index].extend(g.task.id for g in batch)

    threads = [threading.Thread(target=grab, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    all_ids = [i for ids in grabbed for i in ids]
    assert len(all_ids) == 5000 and len(set(all_ids)) == 5000
    assert sum(1 for ids in grabbed if ids) >= 2  # they did race


def test_two_runner_processes_never_run_a_task_twice(pg_dsn, tmp_path):
    out = tmp_path / "executed.txt"
    n = 600
    now = datetime.now(UTC)
    with PostgresStore(pg_dsn) as store:
        store.create_task_type(TaskType("rec", "record a key", "callables:record", max_queue_length=10))
        store.create_tasks([NewTask("rec", now, TaskArguments((str(out), f"k{i}", 0.005)), policy=TaskPolicy.ONESHOT)
                            for i in range(n)])
        env = {**os.environ, "PYTHONPATH": str(HERE), "OSTINATO_DB": pg_dsn, "OSTINATO_BATCH_SIZE": "10",
               "OSTINATO_POLL_INTERVAL": "0.05s", "OSTINATO_WORKERS": "3"}
        procs = [subprocess.Popen([sys.executable, "-m", "ostinato", "runner"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
        try:
            # every task done, or a runner gone (its exit status is checked below)
            wait_until(lambda: any(p.poll() is not None for p in procs)
                       or len(store.search_tasks(status=[TaskStatus.COMPLETED], limit=n + 1)) == n,
                       timeout=120, interval=0.1, what=f"the {n} tasks to be done")
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            outputs = [p.communicate(timeout=60)[0] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        runs = store.list_task_runs(limit=10 * n)
    assert len(runs) == n
    assert Counter(r.task for r in runs).most_common(1)[0][1] == 1
    assert {r.status.value for r in runs} == {"eventful"}
    lines = out.read_text().split()
    keys = Counter(lines[0::2])
    assert len(keys) == n and keys.most_common(1)[0][1] == 1  # each executed exactly once
    assert len({r.backend_id for r in runs}) == 2  # both processes took part
