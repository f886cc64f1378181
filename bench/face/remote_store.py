"""What working through the API costs: store calls per second, direct on a SQLite file and
through ``RemoteStore`` to ``ostinato api serve`` (another process, over that same file).

For each grab size it creates ``--tasks`` ready tasks, then times ``grab_ready_tasks`` calls
until ``--calls`` are made (each takes ``size`` tasks and records their runs), then
``record_run_events`` reporting them in batches of the same size. Prints a table and,
with ``--json``, writes it.

    .venv/bin/python bench/face/remote_store.py --calls 300
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from ostinato.api.tokens import hash_secret, new_secret
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskRunStatus, TaskType
from ostinato.remote import RemoteStore
from ostinato.store import Store, open_store
from test_servers.postgres import free_port

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def fill(store: Store, count: int, tag: str) -> str:
    name = f"bench-{tag}"
    store.create_task_type(TaskType(name, "bench", "x:y", default_interval=timedelta(days=1), max_queue_length=10**9))
    for start in range(0, count, 10_000):
        store.create_tasks([NewTask(name, NOW - timedelta(seconds=i), TaskArguments((f"https://x/{tag}/{i}",)))
                            for i in range(start, min(count, start + 10_000))])
    return name


def measure(store: Store, name: str, calls: int, size: int) -> dict[str, float]:
    runs: list[int] = []
    started = time.perf_counter()
    for _ in range(calls):
        runs += [g.run.id for g in store.grab_ready_tasks(name, NOW, size, backend_id="bench")]
    grab_seconds = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(0, len(runs), size):
        store.record_run_events([RunEvent(r, TaskRunStatus.EVENTFUL, NOW) for r in runs[i:i + size]])
    record_seconds = time.perf_counter() - started
    assert len(runs) == calls * size, "not enough ready tasks"
    return {"grab_calls_per_s": calls / grab_seconds, "grabbed_tasks_per_s": len(runs) / grab_seconds,
            "record_calls_per_s": calls / record_seconds}


def serve(db: str, port: int, *options: str, settings: dict[str, str] | None = None) -> subprocess.Popen:
    """``ostinato api serve`` on ``db`` and ``port`` (with ``options``, and ``settings`` as OSTINATO_ variables,
    none of this process's), once its /health answers 200."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")} | (settings or {})
    process = subprocess.Popen([sys.executable, "-m", "ostinato", "--db", db, "api", "serve", "--port", str(port),
                                "--log-level", "warning", *options], env=env)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise SystemExit("the API did not start")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="grab_ready_tasks calls per measure")
    parser.add_argument("--sizes", default="1,100", help="tasks per grab, comma separated")
    parser.add_argument("--json", type=Path, help="write the results here")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{folder}/bench.db"
        secret = new_secret()
        with open_store(db) as store:
            store.init_schema()
            store.create_api_token("bench", "admin", hash_secret(secret), NOW, actor="bench")
            names = {(where, size): fill(store, options.calls * size, f"{where}-{size}")
                     for where in ("direct", "remote") for size in sizes}
        port = free_port()
        server = serve(db, port)
        try:
            with open_store(db) as direct, RemoteStore(f"http://127.0.0.1:{port}", secret) as remote:
                for size in sizes:
                    for where, store in (("direct", direct), ("remote", remote)):
                        figures = measure(store, names[(where, size)], options.calls, size)
                        results.append({"store": where, "grab_size": size, **figures})
        finally:
            server.terminate()
            server.wait(30)
    print(f"{'store':<8}{'grab size':>10}{'grab calls/s':>14}{'tasks/s':>12}{'record calls/s':>16}")
    for row in results:
        print(f"{row['store']:<8}{row['grab_size']:>10}{row['grab_calls_per_s']:>14.0f}"
              f"{row['grabbed_tasks_per_s']:>12.0f}{row['record_calls_per_s']:>16.0f}")
    if options.json:
        options.json.write_text(json.dumps({"calls": options.calls, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
