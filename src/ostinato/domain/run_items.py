"""Partial failures: a schedule's run that did its job for some items and failed for others (see
docs/reference/schedules.md, "Partial failures"). Pure rules that ``domain.schedules`` calls.

A run reports its items by the keys ``items_done`` and ``items_failed`` of what its job returned (a
run-mode job's callable, a Celery worker's schedule run) or of its end told to the store
(``end_schedule_run(..., items=ItemCounts(...))``, over the API too): whole numbers of 0 or more, a
missing one counting as 0. Such a run is still a good run for the deadlines; its counts are kept on
the run's detail and as the schedule's ``last_items_done`` and ``last_items_failed`` (those of its
last good run: a good run that reports none clears them, a failed run leaves them). When the last
good run's failed share, ``failed / (done + failed)``, is above the schedule's
``partial_failure_threshold`` (the setting ``schedule_partial_failure_threshold`` when it has none),
the schedule reads WARNING ``partial_failure``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ValidationError
from .limits import check_whole

#: the failed share above which a schedule reads ``partial_failure``, when neither it nor the setting says
DEFAULT_PARTIAL_FAILURE_THRESHOLD = 0.1
#: the keys of a run's items, in what its job returns and in the run's detail
ITEM_KEYS = ("items_done", "items_failed")


@dataclass(frozen=True, slots=True)
class ItemCounts:
    """How many items a run did, and how many it failed."""

    items_done: int = 0
    items_failed: int = 0

    def validated(self) -> ItemCounts:
        for name in ITEM_KEYS:
            check_whole(getattr(self, name), name)
        return self

    @property
    def failed_share(self) -> float | None:
        """``failed / (done + failed)``; None when the run reported no item at all."""
        return failed_share(self.items_done, self.items_failed)

    def to_detail(self) -> dict[str, int]:
        return {"items_done": self.items_done, "items_failed": self.items_failed}


def items_of(detail: Mapping[str, Any]) -> ItemCounts | None:
    """The items a job's result (or a run's detail) reports, checked; None when it has neither key.
    A ValidationError names the key at fault (a negative count, a boolean, not a whole number)."""
    if not any(key in detail for key in ITEM_KEYS):
        return None
    return ItemCounts(detail.get("items_done", 0), detail.get("items_failed", 0)).validated()


def failed_share(done: int | None, failed: int | None) -> float | None:
    """The failed share of a run's items; None when unknown or when there were none."""
    if done is None or failed is None or done + failed == 0:
        return None
    return failed / (done + failed)


def check_threshold(value: Any, field: str, *, nullable: bool = False) -> Any:
    """``value`` if it is a share from 0 to 1 (not a boolean, not NaN)."""
    if value is None and nullable:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not 0 <= value <= 1:
        raise ValidationError(field, "a share from 0 to 1" + (", or null" if nullable else ""), value)
    return value


def partial_failure(done: int | None, failed: int | None, threshold: float) -> bool:
    """The last good run failed more than ``threshold`` of its items."""
    share = failed_share(done, failed)
    return share is not None and share > threshold
