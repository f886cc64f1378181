"""`ostinato run --metrics-port` as a real process on a SQLite store: its metrics are scraped
over HTTP and show the runs it dispatched and their outcomes."""

from __future__ import annotations

import signal
import socket
import urllib.request
from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families
from test_run_command import ostinato, wait_for

from ostinato.domain.tasks import NewTask, TaskArguments, TaskType
from ostinato.store import open_store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_run_serves_its_metrics(tmp_path):
    db = f"sqlite:///{tmp_path}/m.db"
    out = tmp_path / "out.txt"
    port = free_port()
    with open_store(db) as store:
        store.init_schema()
        store.create_task_type(TaskType("rec", "record", "callables:record", default_interval=timedelta(hours=1),
                                        max_queue_length=50))
        now = datetime.now(UTC)
        store.create_tasks([NewTask("rec", now, TaskArguments((str(out), f"k{i}"))) for i in range(3)])
    proc = ostinato("run", "--workers", "2", "--metrics-port", str(port), db=db)
    dispatched = ("ostinato_dispatches_total", (("loop", "runner"), ("policy", "recurring"), ("task_type", "rec"),
                                                ("visit_type", "")))
    ended = ("ostinato_outcomes_total", (("kind", "run"), ("status", "eventful")))
    try:
        wait_for(lambda: scrape(port).get(ended, 0) >= 3)
        samples = scrape(port)
    finally:
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=60)[0]
        proc.kill()
    assert proc.returncode == 0, output
    assert samples[dispatched] == 3
    assert samples[("ostinato_pick_seconds_count", (("loop", "runner"),))] >= 1
    assert samples[("ostinato_loop_seconds_count", (("loop", "orchestrator"),))] >= 1
    assert ("ostinato_queue_depth", (("queue", "rec"),)) in samples
