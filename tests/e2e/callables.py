"""Task callables for tests that run `ostinato` in a subprocess (imported via PYTHONPATH)."""

from __future__ import annotations

import os
import time


def record(path: str, key: str, delay: float = 0.0) -> bool:
    """Append `key pid` to `path` (one O_APPEND write: atomic), after `delay` seconds."""
    if delay:
        time.sleep(delay)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{key} {os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return True
