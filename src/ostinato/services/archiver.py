"""Archival: export finished tasks (completed one-shot, disabled) and their runs as
JSON lines, then delete them from the store, batch by batch.

Each batch is written and flushed (and synced to disk when the output is a file)
before it is deleted, so a crash loses nothing: at worst a batch is exported
twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from typing import IO

from ..domain.errors import ValidationError
from ..store.interface import ArchivedTask, TaskStore


def archive_line(item: ArchivedTask) -> str:
    """One task and its runs as one line of JSON: ``{"task": {...}, "runs": [...]}``."""
    record = {"task": item.task.to_dict(), "runs": [run.to_dict() for run in item.runs]}
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def archive_tasks(
    store: TaskStore,
    before: datetime,
    out: IO[str],
    *,
    batch_size: int = 1000,
    delete: bool = True,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Write every task archivable before ``before`` to ``out``; delete them unless ``delete`` is false.

    Walks ``store.archivable_tasks`` by id, ``batch_size`` tasks at a time;
    ``on_batch`` is called with the size of each batch once it is done.
    Returns the number of tasks archived.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError("batch_size", "a whole number of at least 1", batch_size)
    if before.tzinfo is None:
        raise ValidationError("before", "a timezone-aware time", before.isoformat())
    total = 0
    after_id = 0
    while True:
        batch = store.archivable_tasks(before, after_id=after_id, limit=batch_size)
        if not batch:
            break
        out.write("".join(archive_line(item) + "\n" for item in batch))
        _flush(out)
        ids = [item.task.id for item in batch]
        if delete:
            store.delete_tasks(ids)
        total += len(batch)
        after_id = max(ids)
        if on_batch is not None:
            on_batch(len(batch))
        if len(batch) < batch_size:
            break
    return total


def _flush(out: IO[str]) -> None:
    out.flush()
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return
    try:
        os.fsync(fd)
    except OSError:  # a pipe or a terminal: nothing more to do
        pass
