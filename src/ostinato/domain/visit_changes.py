"""What a visit saw of an origin's changes: their times, beside the count (see docs/reference/origins.md).

A git visit sees the time of every change since the previous visit (each new
commit's committer date). A visit status may say so in two optional fields:

- ``change_times``: the change times the loader found since its previous visit,
  at most :data:`~ostinato.domain.limits.MAX_CHANGE_TIMES`;
- ``newest_change_at``: the newest change's time it found (with ``change_times``
  and without it, the newest of them).

Kept as a tuple of UTC times in ascending order. A committer date is not a push
time: a change may be dated before the previous visit, and it is kept as it is
(nothing here compares with earlier visits). Refused, naming the field
(``change_times[3]``): a change time that is not a time with a zone; one later
than the status's own date by more than :data:`~ostinato.domain.limits.CHANGE_TIME_SKEW`
(a wrong clock); more change times than the bound; a count ``changes`` below the
number of times given; a ``newest_change_at`` older than the newest change time.

The stores keep the latest successful status's values per (url, visit type)
(:class:`VisitChanges`, ``Store.get_visit_changes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .durations import format_duration, parse_iso_time
from .errors import ValidationError
from .limits import CHANGE_TIME_SKEW, MAX_CHANGE_TIMES, MAX_TIME, MIN_TIME, check_time_range

#: the two fields, as a visit status and a journal message name them
CHANGE_FIELDS = ("newest_change_at", "change_times")
_A_TIME = "a time with a zone"
_NOT_LATER = f"a time at most {format_duration(CHANGE_TIME_SKEW)} after the status's date"


@dataclass(frozen=True, slots=True)
class VisitChanges:
    """What the latest successful visit of (url, visit type) that said so saw of its changes."""

    url: str
    visit_type: str
    #: the date of the status that said it
    status_date: datetime
    #: None when that status gave neither this nor any change time
    newest_change_at: datetime | None
    #: ascending; None when that status gave only ``newest_change_at``
    change_times: tuple[datetime, ...] | None


def parse_change_fields(message: Mapping[str, Any]) -> tuple[Any, Any]:
    """``newest_change_at`` and ``change_times`` of a message as times (ISO 8601 text read; anything
    else left for :func:`check_change_fields` to refuse), each None when absent."""
    newest = message.get("newest_change_at")
    if isinstance(newest, str):
        newest = parse_iso_time(newest, "newest_change_at")
    times = message.get("change_times")
    if times is not None:
        if not isinstance(times, (list, tuple)):
            raise ValidationError("change_times", "a list of times with a zone, or null", type(times).__name__)
        if len(times) > MAX_CHANGE_TIMES:
            raise ValidationError("change_times", f"at most {MAX_CHANGE_TIMES} times", len(times))
        times = [parse_iso_time(t, f"change_times[{i}]") if isinstance(t, str) else t for i, t in enumerate(times)]
    return newest, times


def check_change_fields(date: datetime, changes: int | None, newest: Any,
                        times: Any) -> tuple[datetime | None, tuple[datetime, ...] | None]:
    """``newest`` and ``times`` in their kept form (UTC; ``times`` an ascending tuple; ``newest`` the
    newest of ``times`` when not given) if a status of ``date`` counting ``changes`` may carry them;
    else ValidationError naming the field (module docstring). ``date`` is already checked."""
    latest = date + CHANGE_TIME_SKEW
    if _kept_already(changes, newest, times, latest):  # what a status checked before carries (a store's check)
        return newest, times
    kept: tuple[datetime, ...] | None = None
    if times is not None:
        if isinstance(times, (str, bytes)) or not isinstance(times, (list, tuple)):
            raise ValidationError("change_times", "a list of times with a zone, or null", type(times).__name__)
        if len(times) > MAX_CHANGE_TIMES:
            raise ValidationError("change_times", f"at most {MAX_CHANGE_TIMES} times", len(times))
        kept = tuple(sorted(_change_time(t, f"change_times[{i}]", latest) for i, t in enumerate(times)))
        if changes is not None and changes < len(kept):
            raise ValidationError("changes", "at least as many changes as change_times holds", changes)
    if newest is not None:
        newest = _change_time(newest, "newest_change_at", latest)
        if kept and newest < kept[-1]:
            raise ValidationError("newest_change_at", "a time no older than the newest of change_times",
                                  newest.isoformat())
    elif kept:
        newest = kept[-1]
    return newest, kept


def _kept_already(changes: int | None, newest: Any, times: Any, latest: datetime) -> bool:
    """Whether ``newest`` and ``times`` are in their kept form and pass every check: a tuple of UTC times,
    ascending, within the range and the skew, no more than ``changes`` counts, and ``newest`` the same
    kind of time, none older than the last of them. :func:`check_change_fields` would give them back as
    they are: a status checked once (the journal client's, the API's) is checked again by the store."""
    if type(times) is not tuple or type(newest) is not datetime or newest.tzinfo is not UTC:
        return False
    if not MIN_TIME <= newest <= latest or newest >= MAX_TIME:
        return False
    if not times:
        return True
    if len(times) > MAX_CHANGE_TIMES or (changes is not None and changes < len(times)):
        return False
    if not all(type(t) is datetime and t.tzinfo is UTC for t in times):
        return False
    return MIN_TIME <= times[0] and times[-1] <= newest and list(times) == sorted(times)


def _change_time(value: Any, field: str, latest: datetime) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(field, _A_TIME, value.isoformat() if isinstance(value, datetime) else value)
    try:
        value = value.astimezone(UTC)
    except OverflowError:
        raise ValidationError(field, "a time with a UTC form (within years 1 to 9999)", value.isoformat()) from None
    check_time_range(value, field)
    if value > latest:
        raise ValidationError(field, _NOT_LATER, value.isoformat())
    return value


__all__ = ["CHANGE_FIELDS", "VisitChanges", "check_change_fields", "parse_change_fields"]
