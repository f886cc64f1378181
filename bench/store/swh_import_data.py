"""The records an swh-scheduler source database is filled with, for the importer's benchmark
(``bench/store/swh_import.py``) and its end-to-end test (``tests/e2e/test_swh_import.py``).

Pure Python, importing neither ostinato nor swh: the peer's driver (``bench/store/swh_import_peer.py``,
in the peer's virtual environment) turns these plain dicts into the peer's model objects and
hands them to the peer's own API. Every record is a function of its index and ``now``, so a
batch is made on demand and nothing of size N is held. Every table and edge the importer reads
is covered at any size:

- **listers**: three with origins (with a state and a finished listing, with neither, with a
  state) and one without any;
- **listed origins** (N): git origins of two forge listers and cran origins of a package lister;
  most with a ``last_update``, some without; forks (with and without the origin they fork), some
  with extra loader arguments, some disabled; one in 50 of the first forge's origins is listed
  by the second forge too;
- **visit statuses**, as the journal carries them (``origin_visit_status``), by the origin's
  index modulo 10: 0–3 one eventful ``full`` visit; 4–5 two visits, the second uneventful
  (4: ``partial``); 6 a ``full`` visit without a snapshot (a failure); 7 ``not_found`` twice;
  8 three failures (which the peer disables); 9 never visited. Non-final statuses
  (``created``, ``ongoing``) are mixed in. Visits lie between 400 days and 1 day before
  ``now``, the newest of an origin in ``RECENT`` within the last 6 hours (its cooldown not over);
- **grabs** (``origins_without_last_update`` and ``oldest_scheduled_first``, real ones) an hour
  before ``now``: ``last_scheduled``, the queues' heads, visits in flight;
- **task types**: a recurring loader, a lister type with a backoff factor of 1, a one-shot type
  with retries and no retry delay;
- **tasks** (M): recurring and one-shot, every priority; then runs for some of them, ended in
  every status, some left scheduled or started, some tasks disabled.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

LISTERS: list[dict[str, Any]] = [
    {"name": "gitlab", "instance_name": "gitlab.example.org", "state": {"last_page": 42, "cursor": "c3VyZQ=="},
     "finished": True},
    {"name": "github", "instance_name": "github", "state": None, "finished": False},
    {"name": "cran", "instance_name": "cran", "state": {"since": "2026-01-01"}, "finished": True},
    {"name": "sourceforge", "instance_name": "sourceforge", "state": None, "finished": False},
]
#: which lister lists origin i (i modulo 3), and its visit type
ORIGIN_LISTERS = ((0, "git"), (1, "git"), (2, "cran"))
SHARED_EVERY = 50
RECENT = 97  # one origin in RECENT was visited within hours: its cooldown is not over

TASK_TYPES: list[dict[str, Any]] = [
    {"type": "load-git", "description": "Update an origin of type git", "backend_name": "swh.loader.git.tasks.UpdateGitRepository",
     "default_interval": timedelta(days=64), "min_interval": timedelta(hours=12), "max_interval": timedelta(days=64),
     "backoff_factor": 2.0, "max_queue_length": 5000, "num_retries": 3, "retry_delay": timedelta(hours=1)},
    {"type": "list-gitlab-full", "description": "Full update of a GitLab instance's list of origins",
     "backend_name": "swh.lister.gitlab.tasks.FullGitLabRelister", "default_interval": timedelta(days=90),
     "min_interval": timedelta(days=90), "max_interval": timedelta(days=90), "backoff_factor": 1.0,
     "max_queue_length": None, "num_retries": None, "retry_delay": None},
    {"type": "index-mimetype", "description": "Mimetype indexer task", "backend_name": "swh.indexer.tasks.ContentMimetype",
     "default_interval": None, "min_interval": None, "max_interval": None, "backoff_factor": None,
     "max_queue_length": 2000, "num_retries": 2, "retry_delay": None},
]
PRIORITIES = (None, "high", "normal", "low")
#: how runs end, for the tasks with runs: (status, None) stays scheduled, ("started", None) stays started
RUN_ENDS = ("eventful", "uneventful", "failed", "permfailed", "lost", "scheduled", "started")


def _h(*parts: Any) -> int:
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "big")


def _frac(*parts: Any) -> float:
    return _h(*parts) / 2**64


class SourceData:
    """N listed origins with their visits, and M tasks with their runs, as plain dicts."""

    def __init__(self, origins: int, tasks: int, now: datetime):
        self.n, self.m, self.now = origins, tasks, now

    # -- listed origins
    def url(self, i: int) -> str:
        lister, visit_type = ORIGIN_LISTERS[i % 3]
        if visit_type == "cran":
            return f"https://cran.example.org/package=pkg{i}"
        return f"https://{LISTERS[lister]['instance_name']}/group{i % 997}/project-{i}"

    def listings(self, i: int) -> list[tuple[int, dict[str, Any]]]:
        """Origin i as its lister lists it (and as the second forge lists it, for some), with the lister's index."""
        lister, visit_type = ORIGIN_LISTERS[i % 3]
        r = _frac("origin", i)
        last_update = None if r < 0.2 else self.now - timedelta(days=800) * _frac("update", i)
        is_fork: bool | None = None if visit_type == "cran" else r > 0.9
        record = {
            "url": self.url(i), "visit_type": visit_type, "last_update": last_update, "is_fork": is_fork,
            "forked_from_url": self.url((i * 7 + 3) % self.n) if is_fork and i % 2 else None,
            "extra_loader_arguments": {"default_branch": "main"} if _frac("extra", i) < 0.1 else {},
            "enabled": _frac("enabled", i) >= 0.03,
        }
        found = [(lister, record)]
        if lister == 0 and i % (3 * SHARED_EVERY) == 0:
            found.append((1, {**record, "extra_loader_arguments": {"mirror": True}, "enabled": True}))
        return found

    def listing_batch(self, start: int, stop: int) -> list[tuple[int, dict[str, Any]]]:
        return [listing for i in range(start, min(stop, self.n)) for listing in self.listings(i)]

    # -- visit statuses
    def snapshot(self, i: int, visit: int) -> bytes:
        return hashlib.sha1(f"{i}/{visit}".encode()).digest()

    def visits(self, i: int) -> list[dict[str, Any]]:
        """The journal's statuses for origin i, oldest first."""
        kind = i % 10
        if kind == 9:
            return []
        newest = self.now - (timedelta(hours=6) * _frac("recent", i) if i % RECENT == 0
                             else timedelta(days=1) + timedelta(days=399) * _frac("visit", i))
        count = {4: 2, 5: 2, 7: 2, 8: 3}.get(kind, 1)
        url, visit_type = self.url(i), ORIGIN_LISTERS[i % 3][1]
        out = []
        for v in range(1, count + 1):
            date = newest - timedelta(days=3) * (count - v)
            base = {"origin": url, "visit": v, "type": visit_type, "date": date}
            out.append({**base, "status": "created", "snapshot": None, "date": date - timedelta(minutes=5)})
            if kind in (0, 1, 2, 3):
                out.append({**base, "status": "full", "snapshot": self.snapshot(i, 1)})
            elif kind in (4, 5):  # the same snapshot twice: the second visit is uneventful
                out.append({**base, "status": "partial" if kind == 4 else "full", "snapshot": self.snapshot(i, 1)})
            elif kind == 6:
                out.append({**base, "status": "full", "snapshot": None})
            elif kind == 7:
                out.append({**base, "status": "not_found", "snapshot": None})
            else:
                out.append({**base, "status": "failed", "snapshot": None})
        return out

    def visit_batch(self, start: int, stop: int) -> list[dict[str, Any]]:
        return [status for i in range(start, min(stop, self.n)) for status in self.visits(i)]

    # -- tasks
    def task(self, j: int) -> dict[str, Any]:
        oneshot = j % 10 == 9
        arguments = ({"args": [], "kwargs": {"ids": [f"{j:040x}"], "force": j % 2 == 0}} if oneshot
                     else {"args": [f"https://forge.example.org/task/{j}"], "kwargs": {}})
        if j % 100 == 1:
            arguments = {"args": [], "kwargs": {"url": "https://gitlab.example.org", "instance": "gitlab"}}
        return {
            "type": "index-mimetype" if oneshot else ("list-gitlab-full" if j % 100 == 1 else "load-git"),
            "arguments": arguments,
            "next_run": self.now - timedelta(days=2) * _frac("next_run", j) + (timedelta(days=30) if j % 7 == 0 else timedelta(0)),
            "policy": "oneshot" if oneshot else "recurring",
            "priority": PRIORITIES[(j // 10) % 4] if oneshot else None,
        }

    def task_batch(self, start: int, stop: int) -> list[dict[str, Any]]:
        return [self.task(j) for j in range(start, min(stop, self.m))]

    @staticmethod
    def run_end(k: int) -> str:
        """How the k-th run handed out ends (one in 7 of each ending)."""
        return RUN_ENDS[k % len(RUN_ENDS)]

    @staticmethod
    def disabled(j: int) -> bool:
        """Tasks the peer is asked to disable (one in 53)."""
        return j % 53 == 5
