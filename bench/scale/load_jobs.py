"""The trivial work of the load benchmark (``bench/scale/load.py``): a schedule's job, a task and a loader.

The ``ostinato`` processes import this module (``OSTINATO_IMPORTS=load_jobs``,
with ``bench/scale/`` on PYTHONPATH) and call its functions by their import paths
(``load_jobs:schedule_job`` …). Each returns at once (a visit after ``LOAD_BENCH_VISIT_SECONDS``): the
benchmark measures the services' loops and the store, not the work.
"""

from __future__ import annotations

import hashlib
import os
import time
import zlib

#: how long a visit takes (``bench/scale/load.py --visit-seconds``): the loaders' pace, so that the
#: orchestrator keeps queues fed rather than spinning on loaders that never take any time
VISIT_SECONDS = float(os.environ.get("LOAD_BENCH_VISIT_SECONDS", "0"))


def schedule_job(name: str) -> bool:
    """A schedule's run: nothing to do, it went well."""
    return True


def task_job(key: str) -> bool:
    """A task run: eventful one time in three (by the key), so that the intervals move both ways."""
    return zlib.crc32(key.encode()) % 3 == 0


def load(url: str, lister_name=None, lister_instance_name=None, **extra) -> dict:
    """A loader's visit: always ``full``, with a snapshot drawn from the url (a second visit finds
    the same one: uneventful)."""
    if VISIT_SECONDS:
        time.sleep(VISIT_SECONDS)
    return {"status": "full", "snapshot": hashlib.sha1(url.encode()).hexdigest(), "visit": 1}
