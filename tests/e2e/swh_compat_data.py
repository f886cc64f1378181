"""The work both schedulers get in tests/e2e/test_swh_compat_celery.py: task types, tasks, listers and
listed origins of the shapes the archive's listers and "save code now" make.

Standard library only, and plain data: ``swh_compat_peer.py`` reads it in the peer's interpreter to
fill swh-scheduler through its API, the test fills Ostinato's store with it. Times are relative to a
``now`` both are given.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

GIT_LOADER = "swh.loader.git.tasks.UpdateGitRepository"
CRAN_LOADER = "swh.loader.package.cran.tasks.LoadCRAN"
OPAM_LOADER = "swh.loader.package.opam.tasks.LoadOpam"
GITLAB_LISTER = "swh.lister.gitlab.tasks.FullGitLabRelister"
#: a task whose name does not start with ``swh.``: the peer routes it to Celery's default queue
PLAIN_TASK = "housekeeping.tasks.vacuum"

#: (type, backend_name, num_retries, retry_delay in seconds); no max_queue_length (see the test's docstring)
TASK_TYPES: list[tuple[str, str, int | None, int | None]] = [
    ("load-git", GIT_LOADER, 3, 3600),
    ("load-cran", CRAN_LOADER, None, None),
    ("load-opam", OPAM_LOADER, None, None),
    ("list-gitlab-full", GITLAB_LISTER, 0, None),
    ("vacuum", PLAIN_TASK, 1, 600),
]

#: (name, instance name): the opam lister's is empty, which a loader receives as null
LISTERS: list[tuple[str, str]] = [("gitlab", "gitlab.example.org"), ("cran", "cran"), ("opam", "")]

CRAN_ARTIFACTS = [{"url": "https://cran.example.org/src/contrib/zoo_1.8-12.tar.gz", "version": "1.8-12",
                   "package": "zoo", "checksums": {"length": 782047, "sha256": "a1" * 32}}]
OPAM_EXTRA = {"opam_root": "/tmp/opam/", "opam_instance": "opam.example.org",
              "opam_url": "https://opam.example.org", "opam_package": "ocamlfind"}


def origins(now: datetime) -> list[dict[str, Any]]:
    """Listed origins: lister, url, visit type, extra loader arguments, last update (ISO, or None)."""
    def ago(days: int) -> str:
        return (now - timedelta(days=days)).isoformat()

    found: list[dict[str, Any]] = []
    for i in range(3):
        found.append({"lister": "gitlab", "url": f"https://gitlab.example.org/group/project-{i}", "visit_type": "git",
                      "extra_loader_arguments": {}, "last_update": ago(10 + i)})
    for i in range(2):  # a forge that gives no last_update
        found.append({"lister": "gitlab", "url": f"https://gitlab.example.org/quiet/repo-{i}", "visit_type": "git",
                      "extra_loader_arguments": {}, "last_update": None})
    found.append({"lister": "cran", "url": "https://cran.example.org/package=zoo", "visit_type": "cran",
                  "extra_loader_arguments": {"artifacts": CRAN_ARTIFACTS}, "last_update": ago(3)})
    found.append({"lister": "opam", "url": "opam+https://opam.example.org/packages/ocamlfind", "visit_type": "opam",
                  "extra_loader_arguments": OPAM_EXTRA, "last_update": ago(4)})
    return found


def tasks(now: datetime) -> list[dict[str, Any]]:
    """Tasks ready at ``now``: type, policy, priority, args, kwargs, next run (ISO)."""
    def task(type_: str, policy: str, args: list, kwargs: dict, priority: str | None = None) -> dict[str, Any]:
        return {"type": type_, "policy": policy, "priority": priority, "args": args, "kwargs": kwargs,
                "next_run": (now - timedelta(minutes=5)).isoformat()}

    return [
        task("list-gitlab-full", "recurring", [], {"url": "https://gitlab.example.org/api/v4/",
                                                   "instance": "gitlab.example.org"}),
        task("load-git", "oneshot", [], {"url": "https://git.example.net/someone/tool.git"}),
        # "save code now": a prioritised one-shot visit
        task("load-git", "oneshot", [], {"url": "https://git.example.net/someone/urgent.git"}, priority="high"),
        task("load-cran", "oneshot", [], {"url": "https://cran.example.org/package=xts", "artifacts": CRAN_ARTIFACTS},
             priority="normal"),
        task("vacuum", "recurring", [7, "full"], {"dry_run": False, "tables": ["task", "task_run"]}),
    ]


#: the peer's ``schedule-recurrent`` policies for git, without its default ``tablesample`` of 0.1 (a
#: sample of the table's pages, which on a table of a few rows returns all of them or none)
PEER_GIT_POLICY = [{"policy": "already_visited_order_by_lag", "weight": 49},
                   {"policy": "never_visited_oldest_update_first", "weight": 49},
                   {"policy": "origins_without_last_update", "weight": 2}]
