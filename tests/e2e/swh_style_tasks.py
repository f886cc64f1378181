"""Stand-ins for swh's Celery tasks, to run under Ostinato's dispatch (tests/e2e/test_swh_style_tasks.py).

Written here from what a swh loader and lister take and return (their task names, keyword-only
arguments, ``{"status": "eventful"}`` and a lister's ``{"pages": …, "origins": …}``), not from swh's
code; registered under swh's task names in Ostinato's registry, as a deployment would in a module of
its ``imports`` setting. Each call is appended as a JSON line to the file ``$STANDIN_CALLS``.
The last part of a url says how the stand-in loader ends: ``eventful``, ``uneventful``, ``failed``
(swh's failure result) or ``raises``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ostinato.execution.registry import task

GIT_LOADER = "swh.loader.git.tasks.UpdateGitRepository"
GITLAB_LISTER = "swh.lister.gitlab.tasks.FullGitLabRelister"


def _record(name: str, kwargs: dict[str, Any]) -> None:
    path = os.environ.get("STANDIN_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"task": name, "kwargs": kwargs, "pid": os.getpid()}) + "\n")


@task(GIT_LOADER)
def load_git(*, url: str, lister_name: str | None = None, lister_instance_name: str | None = None,
             **kwargs: Any) -> dict[str, Any]:
    _record(GIT_LOADER, {"url": url, "lister_name": lister_name, "lister_instance_name": lister_instance_name, **kwargs})
    outcome = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    if outcome == "raises":
        raise RuntimeError("fetch failed: connection reset")
    if outcome == "failed":
        return {"status": "failed", "error": "the remote end hung up"}
    return {"status": outcome}


@task(GITLAB_LISTER)
def list_gitlab_full(**lister_args: Any) -> dict[str, int]:
    _record(GITLAB_LISTER, lister_args)
    return {"pages": 2, "origins": 40}
