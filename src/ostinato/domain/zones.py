"""Time zones typed by people: IANA names checked with suggestions for near
misses (``Europe/Pariss``, ``new york``), and the label a zone is shown with.
Calendar rules and blackouts read their wall times in these zones
(docs/reference/schedules.md#time-zones)."""

from __future__ import annotations

import difflib
import functools
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import ValidationError, did_you_mean

UTC = UTC
ZONE_EXPECTED = "an IANA time zone such as Europe/Paris or UTC"


def parse_zone(name: str, field: str = "tz", *, expected: str = ZONE_EXPECTED) -> ZoneInfo:
    """The zone of an IANA name typed by someone: a name that is not one is refused with the closest
    names (``Europe/Pariss``, ``europe/paris``, ``Paris``: did you mean Europe/Paris?).

    A name in the wrong case is suggested, not accepted: the name is stored and shown as given, and
    whether ``ZoneInfo`` finds it would depend on the file system's case sensitivity."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(field, expected, name)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder (Europe), a name too long
        close = zone_suggestions(name)
        raise ValidationError(field, expected + did_you_mean(close), name) from None


def is_zone(name: str) -> bool:
    """True when ``name`` is an IANA zone this system knows (a number or ``*`` never is)."""
    if not name or name[0] in "0123456789*":
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def zone_label(zone: tzinfo) -> str:
    """How a zone is named to a reader: its IANA key, or ``UTC+02:00`` for a fixed offset."""
    key = getattr(zone, "key", None)
    if key:
        return key
    offset = zone.utcoffset(datetime(2000, 1, 1)) or UTC.utcoffset(None)
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def zone_suggestions(name: str, limit: int = 3) -> list[str]:
    """The IANA names closest to ``name``: the same name in another case, the zones of a city of that
    name (``new york``: America/New_York), then the nearest spellings."""
    wanted = name.strip()[:64].lower().replace(" ", "_")
    if not wanted or not wanted.isprintable():
        return []
    by_lower = _zone_names()
    if wanted in by_lower:
        return [by_lower[wanted]]
    cities = [zone for key, zone in by_lower.items() if "/" not in wanted and key.rpartition("/")[2] == wanted]
    if cities:
        return cities[:limit]
    matcher = difflib.SequenceMatcher(b=wanted)
    scored = []
    for key, zone in by_lower.items():
        matcher.set_seq1(key)
        if matcher.real_quick_ratio() >= 0.75 and matcher.quick_ratio() >= 0.75:
            scored.append((matcher.ratio(), zone))
    best = max((score for score, _ in scored), default=0.0)
    return [zone for score, zone in sorted(scored, key=lambda item: (-item[0], item[1]))
            if score >= max(0.75, best - 0.05)][:limit]


@functools.lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    """Every IANA name this system knows, by its lower-case form (``posix/`` and ``right/`` copies left out)."""
    from zoneinfo import available_timezones

    names = sorted(z for z in available_timezones() if not z.startswith(("posix/", "right/")))
    return {zone.lower(): zone for zone in names}
