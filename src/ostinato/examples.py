"""Example task callables, used by ``ostinato example install`` and the README.

They need no network: they watch local directories and fail on purpose, so
that a new user sees eventful and uneventful runs, backoff and retries.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
from pathlib import Path

from .execution.registry import TaskResult

_last_fingerprints: dict[str, str] = {}
_lock = threading.Lock()


def watch_directory(path: str) -> TaskResult:
    """Eventful when the names, sizes or modification times under ``path`` changed since the last run."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"no directory {root}")
    digest = hashlib.sha256()
    files = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                stat = os.stat(full)
            except OSError:
                continue
            digest.update(f"{full}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
            files += 1
            if files >= 50_000:
                break
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
