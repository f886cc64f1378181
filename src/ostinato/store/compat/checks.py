"""Checks the stores share for the compatibility faces' verbs (see docs/reference/swh-compat.md):
what each verb accepts, the same on every store, the first fault a ValidationError naming it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ...domain.errors import ValidationError
from ...domain.limits import MAX_TYPE_BYTES, MAX_URL_BYTES, check_json_value, check_stored_text
from ...domain.listing_grabs import ProtocolVisitStats
from ...domain.tasks import NewTaskRun
from ...domain.visits import VisitOutcome

#: the longest key of a compat record
MAX_KEY = 2000


def check_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not namespace or len(namespace) > 200:
        raise ValidationError("namespace", "a name of 1 to 200 characters", namespace)
    return namespace


def check_records(records: Mapping[str, Any]) -> None:
    for key, value in records.items():
        if not isinstance(key, str) or not key or len(key) > MAX_KEY:
            raise ValidationError("key", f"a key of 1 to {MAX_KEY} characters", key)
        if value is not None:
            if not isinstance(value, Mapping):
                raise ValidationError(f"records[{key!r}]", "a JSON object or null", value)
            check_json_value(dict(value), f"records[{key!r}]")


def check_new_runs(runs: Sequence[NewTaskRun]) -> list[NewTaskRun]:
    checked = list(runs)
    for index, run in enumerate(checked):
        if isinstance(run.task, bool) or not isinstance(run.task, int):
            raise ValidationError(f"runs[{index}].task", "the id of a task", run.task)
        if run.backend_id is not None and not isinstance(run.backend_id, str):
            raise ValidationError(f"runs[{index}].backend_id", "text or null", run.backend_id)
        if run.scheduled is not None and (not isinstance(run.scheduled, datetime) or run.scheduled.tzinfo is None):
            raise ValidationError(f"runs[{index}].scheduled", "a time with a zone, or none", run.scheduled)
        if run.metadata is not None:
            if not isinstance(run.metadata, Mapping):
                raise ValidationError(f"runs[{index}].metadata", "a JSON object or none", run.metadata)
            check_json_value(dict(run.metadata), f"runs[{index}].metadata")
    return checked


def check_page(after_run: Any, limit: Any) -> tuple[int, int]:
    """The (task id, run id) a page of runs starts after, and a sane ``limit``."""
    if (not isinstance(after_run, (tuple, list)) or len(after_run) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in after_run)):
        raise ValidationError("after_run", "a pair of whole numbers (task id, run id)", after_run)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValidationError("limit", "a whole number of 0 or more", limit)
    return (after_run[0], after_run[1])


def check_range(after: Any, before: Any) -> None:
    for name, value in (("after", after), ("before", before)):
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise ValidationError(name, "a time with a zone", value)


#: the range of the protocol's ``int`` columns (a position offset, visits in a row) and of its ``bigint`` ones
_INT32 = (-2**31, 2**31 - 1)
_INT64 = (-2**63, 2**63 - 1)


def check_visit_stats_updates(updates: Sequence[ProtocolVisitStats]) -> list[ProtocolVisitStats]:
    checked = list(updates)
    for index, update in enumerate(checked):
        where = f"updates[{index}]"
        for name in ("url", "visit_type"):
            value = getattr(update, name)
            if not isinstance(value, str) or not value:
                raise ValidationError(f"{where}.{name}", "non-empty text", value)
            check_stored_text(value, f"{where}.{name}", MAX_URL_BYTES if name == "url" else MAX_TYPE_BYTES)
        for name in ("last_visit", "last_successful", "last_scheduled"):
            value = getattr(update, name)
            if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
                raise ValidationError(f"{where}.{name}", "a time with a zone, or null", value)
        if update.last_visit_status is not None and not isinstance(update.last_visit_status, VisitOutcome):
            raise ValidationError(f"{where}.last_visit_status", "successful, failed, not_found or null",
                                  update.last_visit_status)
        snapshot = update.last_snapshot
        if snapshot is not None and (not isinstance(snapshot, bytes) or len(snapshot) > 64):
            raise ValidationError(f"{where}.last_snapshot", "an identifier of up to 64 bytes, or null", snapshot)
        for name, (low, high) in (("queue_position", _INT64), ("position_offset", _INT32),
                                  ("successive_visits", _INT32)):
            value = getattr(update, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
                raise ValidationError(f"{where}.{name}", f"a whole number from {low} to {high}, or null", value)
    return checked


def position_of(positions: Iterable[int | None]) -> int:
    """The queue position a grab of origins without last_update moves its visit type to: the largest
    position grabbed, 0 if none has one (the protocol's rule)."""
    return max((p for p in positions if p is not None), default=0)
