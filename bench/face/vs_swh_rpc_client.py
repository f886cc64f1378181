"""The client of bench/face/vs_swh_rpc.py: swh-scheduler 3.6's own ``RemoteScheduler``, in the peer's environment.

``bench/face/vs_swh_rpc.py`` starts this script once per server with the peer venv's
Python and drives it in JSON lines (``bench/common/peer_protocol.py``). It talks to one
RPC server, swh-scheduler's own or Ostinato's ``swh-rpc serve``, through the
protocol's client (``swh.scheduler.api.client.RemoteScheduler``), builds its
input from ``bench/store/vs_swh_data.py`` (the same records for both servers),
converts them to the peer's model objects outside the timed region, and times
only the client calls (request, the server's work, the answer decoded).

Nothing of the peer is imported by the project: this file runs only in the
benchmark's separate environment (``.bench-venvs/swh-scheduler-3.6.0``).
"""

from __future__ import annotations

import platform
import sys
import time
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.peer_protocol import serve
from bench.store.vs_swh_data import LISTER_INSTANCE, LISTER_NAME, TASK_TYPE, TASK_TYPE_FIELDS, VISIT_TYPE, Dataset, TaskData


class Client:
    def __init__(self, url: str, token: str | None, n: int, tasks: int, seed: int, now: str) -> None:
        from swh.scheduler.api.client import RemoteScheduler

        self.now = datetime.fromisoformat(now)
        self.data = Dataset(n, seed, self.now)
        self.tasks = TaskData(tasks, seed, self.now)
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self.scheduler = RemoteScheduler(url=url, timeout=600, session_kwargs={"headers": headers} if headers else None)
        # where the server says a call's time went (its Server-Timing header; swh's server sends none), and the
        # exchange: from the request sent to the answer's headers read (requests' ``elapsed``), the server's clock
        # as the client sees it, without the client's own encoding and decoding (both servers build the whole
        # answer before they send its headers)
        self.phases: dict[str, float] = {}
        self.scheduler.session.hooks["response"].append(self._server_timing)
        self.lister = self.scheduler.get_or_create_lister(name=LISTER_NAME, instance_name=LISTER_INSTANCE)
        self.versions = {
            "python": platform.python_version(),
            **{name: metadata.version(name) for name in ("swh.scheduler", "swh.core", "swh.model")},
        }

    def _server_timing(self, response: Any, *args: Any, **kwargs: Any) -> None:
        self.phases["exchange"] = self.phases.get("exchange", 0.0) + response.elapsed.total_seconds() * 1000
        for part in response.headers.get("server-timing", "").split(","):
            name, _, duration = part.strip().partition(";dur=")
            if name and duration:
                self.phases[name] = self.phases.get(name, 0.0) + float(duration)

    def timing(self) -> dict[str, float]:
        """The phases of the calls since the last time asked (milliseconds), and forget them."""
        phases, self.phases = self.phases, {}
        return phases

    def record_listed(self, k: int, batch: int, again: bool = False) -> dict[str, Any]:
        """Batch ``k`` of the listing, or with ``again`` of the lister's next run (``Dataset.relisted_batch``)."""
        from swh.scheduler.model import ListedOrigin

        records = self.data.relisted_batch(k, batch) if again else self.data.listed_batch(k, batch)
        origins = [ListedOrigin(lister_id=self.lister.id, **record) for record in records]
        start = time.perf_counter()
        self.timing()
        recorded = self.scheduler.record_listed_origins(origins)
        return {"seconds": time.perf_counter() - start, "count": len(origins), "written": len(recorded),
                "timing": self.timing()}

    def visit_stats(self, k: int, batch: int) -> dict[str, Any]:
        """``visit_stats_upsert`` of the stats a first (eventful, successful) visit gives, as swh's journal client
        computes them: batch ``k`` of the first visits, in journal order."""
        from swh.scheduler.model import LastVisitStatus, OriginVisitStats

        stats = []
        for p in range(k * batch, min((k + 1) * batch, self.data.visited)):
            m = self.data.first_visit(self.data.order(p))
            stats.append(OriginVisitStats(url=m["origin"], visit_type=m["type"], last_visit=m["date"],
                                          last_visit_status=LastVisitStatus.successful, last_successful=m["date"],
                                          last_snapshot=m["snapshot"]))
        self.timing()
        start = time.perf_counter()
        self.scheduler.origin_visit_stats_upsert(stats)
        return {"seconds": time.perf_counter() - start, "count": len(stats), "timing": self.timing()}

    def grab(self, policy: str, count: int, dry_run: bool) -> dict[str, Any]:
        self.timing()
        start = time.perf_counter()
        visits = self.scheduler.grab_next_visits(VISIT_TYPE, count, policy=policy, timestamp=self.now,
                                                 tablesample=None, dry_run=dry_run)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "count": len(visits), "urls": [v.url for v in visits], "timing": self.timing()}

    def create_task_type(self) -> dict[str, Any]:
        from swh.scheduler.model import TaskType

        self.scheduler.create_task_type(TaskType(**TASK_TYPE_FIELDS))
        return {"count": 1}

    def create_tasks(self, k: int, batch: int) -> dict[str, Any]:
        from swh.scheduler.model import Task, TaskArguments

        tasks = [Task(type=t["type"], arguments=TaskArguments(args=t["arguments"]["args"], kwargs=t["arguments"]["kwargs"]),
                      next_run=t["next_run"]) for t in self.tasks.batch(k, batch)]
        self.timing()
        start = time.perf_counter()
        created = self.scheduler.create_tasks(tasks)
        return {"seconds": time.perf_counter() - start, "count": len(created), "timing": self.timing()}

    def grab_tasks(self, count: int) -> dict[str, Any]:
        """What swh's runner does per batch: ``grab_ready_tasks``, then ``mass_schedule_task_runs``."""
        from swh.scheduler.model import TaskRun

        self.timing()
        start = time.perf_counter()
        tasks = self.scheduler.grab_ready_tasks(TASK_TYPE, timestamp=self.now, num_tasks=count)
        grab_s = time.perf_counter() - start
        grab_timing = self.timing()
        runs = [TaskRun(task=t.id, backend_id=f"bench-{t.id}", scheduled=self.now) for t in tasks]
        runs_s = 0.0
        if runs:
            start = time.perf_counter()
            self.scheduler.mass_schedule_task_runs(runs)
            runs_s = time.perf_counter() - start
        runs_timing = self.timing()
        return {"seconds": grab_s + runs_s, "grab_seconds": grab_s, "runs_seconds": runs_s, "count": len(tasks),
                "ids": [t.id for t in tasks], "grab_timing": grab_timing, "runs_timing": runs_timing,
                "timing": {k: grab_timing.get(k, 0.0) + runs_timing.get(k, 0.0) for k in {*grab_timing, *runs_timing}}}


if __name__ == "__main__":
    sys.exit(serve(Client))
