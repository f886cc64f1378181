"""Task callables for tests that run `ostinato` in a subprocess (imported via PYTHONPATH)."""

from __future__ import annotations

import os
import time


def record(path: str, key: str, delay: float = 0.0) -> bool:
    """Append `key pid` to `path` (one O_APPEND write: atomic), after `delay` seconds."""
    if delay:
        time.sleep(delay)  # the task's work: a run that lasts `delay` seconds
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{key} {os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return True


def interval(path: str, name: str, seconds: float = 0.3, stop=None) -> bool:
    """A schedule's job: sleep (stopping early when asked), then append `name start end pid` to `path`
    with wall-clock times, so that a test can check that no two runs of one schedule overlapped."""
    start = time.time()
    deadline = start + seconds
    while time.time() < deadline and not (stop is not None and stop.is_set()):
        time.sleep(0.01)  # the job's work, `seconds` of real time, looking at `stop` between steps
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{name} {start:.6f} {time.time():.6f} {os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return True


def load_hashed(url: str, lister_name=None, lister_instance_name=None, **extra) -> dict:
    """A loader: a full visit whose snapshot is a hash of the url; an url with "gone" in it does not exist."""
    import hashlib

    from ostinato.execution.registry import OriginNotFound

    if "gone" in url:
        raise OriginNotFound(url)
    return {"status": "full", "snapshot": hashlib.sha1(url.encode()).hexdigest(), "visit": 1}


def slow_once(path: str, key: str, seconds: float = 60.0, stop=None) -> bool:
    """The first call (no `path` yet) creates `path` and sleeps `seconds` (a run to kill);
    later calls append `key pid` to it at once."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return record(path, key)
    os.close(fd)
    deadline = time.time() + seconds
    while time.time() < deadline and not (stop is not None and stop.is_set()):
        time.sleep(0.05)  # the run to kill: it lasts until stopped, looking at `stop` between steps
    return True
