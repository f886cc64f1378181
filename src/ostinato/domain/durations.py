"""Durations and points in time as people write them, parsed strictly.

Durations: ``90s``, ``15m``, ``12h``, ``64d``, ``2w``, ``250ms``, compounds such as
``1d12h``, and ISO 8601 (``P1DT2H``, ``PT15M``). Text needs a unit: a bare ``1``
is refused (one second? one day?). Numbers (``int``/``float``, as in JSON
bodies and ``schedule export`` files) are seconds, a machine form.
:func:`format_duration` writes what :func:`parse_duration` reads back.
Times: ISO 8601 with a zone (``2026-11-22T10:00:00+01:00``, ``...Z``), or
relative to ``now`` (``now``, ``+2h``, ``-1d``).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, tzinfo

from .errors import ValidationError
from .limits import MAX_DURATION

_UNIT_SECONDS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 0.001}
_COMPACT = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|w|d|h|m|s)", re.IGNORECASE)
_ISO = re.compile(
    r"P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)
DURATION_FORMS = "a duration such as 90s, 15m, 12h, 64d, 1d12h or ISO 8601 P1DT2H"
#: what a bare number in text is told: its unit is missing
BARE_NUMBER_FORMS = "a duration with a unit, such as 30s, 5m, 12h, 1d, 1d12h or ISO 8601 PT1H (a bare number has none)"


def parse_duration(text: str | int | float | timedelta, field: str = "duration", *, allow_zero: bool = False) -> timedelta:
    """Parse a positive duration; raise ValidationError naming ``field`` otherwise."""
    if isinstance(text, timedelta):
        value = text
    elif isinstance(text, bool):
        raise ValidationError(field, DURATION_FORMS, text)
    elif isinstance(text, (int, float)):
        value = _seconds(text, field, text)
    elif isinstance(text, str):
        value = _parse_duration_text(text.strip(), field)
    else:
        raise ValidationError(field, DURATION_FORMS, text)
    if value < timedelta(0) or (value == timedelta(0) and not allow_zero):
        raise ValidationError(field, "a positive duration" if not allow_zero else "a duration of zero or more", text)
    if value > MAX_DURATION:
        raise ValidationError(field, f"a duration of at most {MAX_DURATION.days} days", text)
    return value


def _seconds(seconds: float, field: str, text: object) -> timedelta:
    """``seconds`` as a timedelta; NaN, infinities and what no timedelta holds are errors naming ``field``."""
    if isinstance(seconds, float) and not math.isfinite(seconds):
        raise ValidationError(field, DURATION_FORMS + " (a finite number)", text)
    if abs(seconds) > MAX_DURATION.total_seconds():
        raise ValidationError(field, f"a duration of at most {MAX_DURATION.days} days", text)
    return timedelta(seconds=seconds)


def _parse_duration_text(text: str, field: str) -> timedelta:
    if not text:
        raise ValidationError(field, DURATION_FORMS, text)
    if text.startswith("-"):
        raise ValidationError(field, "a positive duration", text)
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        raise ValidationError(field, BARE_NUMBER_FORMS, text)
    if text[0] in "Pp":
        match = _ISO.fullmatch(text)
        if not match or text.upper() in ("P", "PT") or text.upper().endswith("T"):
            raise ValidationError(field, DURATION_FORMS + " (years and months are not fixed durations)", text)
        seconds = sum(float(v) * _UNIT_SECONDS[k] for k, v in match.groupdict().items() if v)
        return _seconds(seconds, field, text)
    pos = 0
    seconds = 0.0
    for match in _COMPACT.finditer(text):
        if text[pos:match.start()].strip():
            break
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
        pos = match.end()
    else:
        if pos and not text[pos:].strip():
            return _seconds(seconds, field, text)
    raise ValidationError(field, DURATION_FORMS, text)


def format_duration(value: timedelta | None, *, resolution: timedelta | None = None) -> str:
    """The compact form :func:`parse_duration` reads back exactly: ``1d6h``, ``90s``, ``4.714ms``, ``0s``.

    Days, hours, minutes and seconds (no spaces, so that it can be pasted into an
    option); below a second, milliseconds. ``resolution`` rounds first (half up),
    for measured durations shown to people: ``resolution=timedelta(seconds=1)``.
    """
    if value is None:
        return ""
    micros = value // timedelta(microseconds=1)
    if resolution is not None and resolution > timedelta(0):
        step = resolution // timedelta(microseconds=1) or 1
        micros = (abs(micros) + step // 2) // step * step * (1 if micros >= 0 else -1)
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros == 0:
        return "0s"
    if micros < 1_000_000:
        return sign + _decimal(micros, 1000) + "ms"
    parts = []
    for unit, size in (("d", 86400_000_000), ("h", 3600_000_000), ("m", 60_000_000)):
        count, micros = divmod(micros, size)
        if count:
            parts.append(f"{count}{unit}")
    if micros:
        parts.append(_decimal(micros, 1_000_000) + "s")
    return sign + "".join(parts)


def _decimal(count: int, per_unit: int) -> str:
    """``count / per_unit`` written exactly, without trailing zeros (``4714, 1000`` → ``4.714``)."""
    whole, rest = divmod(count, per_unit)
    if not rest:
        return str(whole)
    digits = len(str(per_unit)) - 1
    return f"{whole}.{rest:0{digits}d}".rstrip("0")


_RELATIVE = re.compile(r"([+-])\s*(.+)")
TIME_FORMS = "an ISO 8601 time with a zone (2026-11-22T10:00:00Z), 'now', or a relative time such as +2h or -1d"
LOCAL_TIME_FORMS = "an ISO 8601 time (2026-11-22T10:00:00, with or without a zone), 'now', or a relative time such as +2h"


def parse_time(text: str | datetime, now: datetime, field: str = "time", *, zone: tzinfo | None = None) -> datetime:
    """Parse an absolute or relative time into an aware UTC datetime; with ``zone``, an ISO time written
    without a zone is a wall time of ``zone`` (see :func:`parse_iso_time`)."""
    if isinstance(text, datetime):
        if text.tzinfo is None:
            raise ValidationError(field, "a timezone-aware time", text.isoformat())
        return text.astimezone(UTC)
    if not isinstance(text, str):
        raise ValidationError(field, TIME_FORMS, text)
    text = text.strip()
    if text.lower() == "now":
        return now
    match = _RELATIVE.fullmatch(text)
    if match:
        delta = parse_duration(match.group(2), field, allow_zero=True)
        try:
            return now + delta if match.group(1) == "+" else now - delta
        except OverflowError:
            raise ValidationError(field, TIME_FORMS + " (within years 1 to 9999)", text) from None
    return parse_iso_time(text, field, forms=TIME_FORMS if zone is None else LOCAL_TIME_FORMS, zone=zone)


ISO_TIME_FORMS = "an ISO 8601 time with a zone, e.g. 2026-11-22T10:00:00+00:00"


def parse_iso_time(text: str, field: str = "time", *, forms: str = ISO_TIME_FORMS, zone: tzinfo | None = None) -> datetime:
    """Parse an absolute ISO 8601 time with a zone (``Z`` accepted) into UTC.

    Without a zone in the text, the time is refused, or with ``zone`` read as a wall time of that zone
    the way a calendar rule's are (a time skipped by daylight saving is the end of the gap, a time
    repeated is its first occurrence: ``calendars.resolve_local``).
    """
    if not isinstance(text, str):
        raise ValidationError(field, forms, text)
    try:
        value = datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(field, forms, text) from None
    if value.tzinfo is None and zone is None:
        raise ValidationError(field, "a time with a zone, e.g. 2026-11-22T10:00:00+00:00", text)
    try:
        if value.tzinfo is None and zone is not None:  # a wall time of ``zone`` (without a zone, refused above)
            from .calendars import resolve_local

            value = resolve_local(value, zone)[0]
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 and 9999-12-31T23:59-01:00 have no UTC form
        raise ValidationError(field, "a time with a UTC form (within years 1 to 9999)", text) from None


def utc(value: datetime) -> datetime:
    """Normalise an aware datetime to UTC; refuse naive ones."""
    if value.tzinfo is None:
        raise ValueError("naive datetime: Ostinato works with timezone-aware times only")
    return value.astimezone(UTC)
