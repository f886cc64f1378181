"""How the SQLite store writes values: times as ISO 8601 text in UTC with
microseconds (so that text order is time order), durations as seconds, arrays
as JSON text read by ``json_each``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Iterator, Sequence

import orjson

from ...domain.errors import ValidationError

CHUNK = 10_000


def to_db_time(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValidationError("time", "a timezone-aware time", value.isoformat())
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")


def from_db_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def to_db_interval(value: timedelta | None) -> float | None:
    return None if value is None else value.total_seconds()


def from_db_interval(value: float | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=value)


def json_array(values: Iterable[Any]) -> str:
    return orjson.dumps(list(values)).decode()


def chunks(values: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start:start + size]
