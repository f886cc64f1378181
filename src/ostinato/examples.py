"""Example task callables and an example lister, used by ``ostinato example install`` and the README.

They need no network: they watch local directories and fail on purpose, so
that a new user sees eventful and uneventful runs, backoff and retries; and
the sub-directories of a directory stand for origins (visit type
``directory``), listed by :func:`list_directories` and loaded by
:func:`load_directory`, to show the orchestrator and the feedback loop.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from .domain.origins import ListedOrigin
from .execution.registry import TaskResult

#: the visit type of the example origins (loaded by the task type ``load-directory``)
DIRECTORY_VISIT_TYPE = "directory"
_MAX_FILES = 50_000

_last_fingerprints: dict[str, str] = {}
_lock = threading.Lock()


def watch_directory(path: str) -> TaskResult:
    """Eventful when the names, sizes or modification times under ``path`` changed since the last run."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"no directory {root}")
    digest = hashlib.sha256()
    files = 0
    for relative, stat in _files(root):
        digest.update(f"{root / relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        files += 1
    fingerprint = digest.hexdigest()
    with _lock:
        previous = _last_fingerprints.get(str(root))
        _last_fingerprints[str(root)] = fingerprint
    return TaskResult(eventful=fingerprint != previous, metadata={"files": files, "fingerprint": fingerprint[:16]})


def flaky(failure_rate: float = 0.3) -> bool:
    """Fails at random with the given probability; otherwise eventful one time in four."""
    if random.random() < failure_rate:
        raise RuntimeError("simulated transient failure")
    return random.random() < 0.25


def _files(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to ``root``, stat) of the files under ``root``, hidden directories skipped."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                stat = os.stat(full)
            except OSError:
                continue
            yield os.path.relpath(full, root), stat
            count += 1
            if count >= _MAX_FILES:
                return


def list_directories(parent: str | Path) -> list[ListedOrigin]:
    """The sub-directories of ``parent`` (hidden ones skipped) as origins of visit type ``directory``:
    url ``file://<absolute path>``, last_update the newest modification time in it."""
    origins = []
    for child in sorted(Path(parent).resolve().iterdir()):
        if child.name.startswith(".") or not child.is_dir():
            continue
        newest = max([child.stat().st_mtime_ns, *(stat.st_mtime_ns for _, stat in _files(child))])
        origins.append(ListedOrigin(child.as_uri(), DIRECTORY_VISIT_TYPE,
                                    last_update=datetime.fromtimestamp(newest / 1e9, UTC)))
    return origins


def relist_directories(parent: str, db: str, lister_name: str = "example", instance_name: str = "local") -> TaskResult:
    """A lister run as a recurring task: list the sub-directories of ``parent`` again into the
    store at ``db``, so that a directory changed since its last visit is pending again."""
    from .store import open_store  # a task opens its own store, as a lister on another machine would

    origins = list_directories(parent)
    now = datetime.now(UTC)
    with open_store(db) as store:
        lister = store.get_or_create_lister(lister_name, instance_name, now)
        store.record_listed_origins(lister.id, origins, now)
    return TaskResult(eventful=False, metadata={"listed": len(origins)})


def load_directory(url: str, lister_name: str | None = None, lister_instance_name: str | None = None,
                   **extra: Any) -> dict[str, Any]:
    """Visit a ``file://`` origin: its snapshot is the SHA-1 of the sorted (relative path, size,
    mtime_ns) of its files; ``not_found`` once the directory is gone."""
    root = Path(url2pathname(urlparse(url).path))
    if not root.is_dir():
        return {"status": "not_found", "snapshot": None}
    digest = hashlib.sha1()
    for relative, stat in sorted(_files(root)):
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return {"status": "full", "snapshot": digest.hexdigest()}
