"""Solar calendar rules: a fire time at each sunrise, sunset, dawn, dusk or solar noon of a place
(see docs/reference/schedules.md#solar-events).

A rule is written ``solar:EVENT LATITUDE LONGITUDE`` (degrees, north and east positive), for
example ``solar:sunrise 48.8566 2.3522``. Its fire times are instants (UTC), each rounded to the
second, computed with the ``ephem`` package when it is installed (``pip install 'ostinato[solar]'``; Celery's
``solar`` schedules need it too). Without it a solar rule is refused, naming the field.

The events and the Sun's altitude that defines each (the usual conventions of almanacs, at sea
level and without refraction, the horizon lowered instead):

- ``dawn_astronomical``, ``dusk_astronomical``: the Sun's centre at -18°;
- ``dawn_nautical``, ``dusk_nautical``: its centre at -12°;
- ``dawn_civil``, ``dusk_civil``: its centre at -6°;
- ``sunrise``, ``sunset``: its upper limb at -0°34′;
- ``solar_noon``: its highest of the day (transit).

Near the poles an event may not happen for days (no sunrise in the polar night): the rule's next
fire time is the next day it happens, looked for up to :data:`SEARCH_DAYS` days ahead.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from .errors import ValidationError

#: event -> (the Sun's altitude, measured at its centre (else its upper limb), rising 1, setting -1, transit 0)
EVENTS: dict[str, tuple[str, bool, int]] = {
    "dawn_astronomical": ("-18", True, 1), "dawn_nautical": ("-12", True, 1), "dawn_civil": ("-6", True, 1),
    "sunrise": ("-0:34", False, 1), "solar_noon": ("0", False, 0), "sunset": ("-0:34", False, -1),
    "dusk_civil": ("-6", True, -1), "dusk_nautical": ("-12", True, -1), "dusk_astronomical": ("-18", True, -1),
}
#: days looked ahead for an event that does not happen every day, before a rule is exhausted
SEARCH_DAYS = 400
_EXPECTED = ("EVENT LATITUDE LONGITUDE: an event among " + ", ".join(EVENTS)
             + ", a latitude from -90 to 90 and a longitude from -180 to 180 (degrees)")


class SolarRule(NamedTuple):
    event: str
    latitude: float
    longitude: float


def parse_solar(expression: str, field: str = "calendar") -> SolarRule:
    """``sunrise 48.8566 2.3522`` as a rule; a ValidationError names ``field`` otherwise."""
    words = expression.split()
    if len(words) != 3 or words[0] not in EVENTS:
        raise ValidationError(field, _EXPECTED, expression)
    try:
        latitude, longitude = float(words[1]), float(words[2])
    except ValueError:
        raise ValidationError(field, _EXPECTED, expression) from None
    if not (math.isfinite(latitude) and math.isfinite(longitude)) or abs(latitude) > 90 or abs(longitude) > 180:
        raise ValidationError(field, _EXPECTED, expression)
    return SolarRule(words[0], latitude, longitude)


def solar_text(event: str, latitude: float, longitude: float) -> str:
    """A rule's text, ``solar:sunrise 48.8566 2.3522``."""
    return f"solar:{event} {latitude:g} {longitude:g}"


def _ephem(field: str) -> Any:
    try:
        import ephem
    except ImportError:
        raise ValidationError(field, "the 'ephem' package installed, for a solar rule "
                                     "(pip install 'ostinato[solar]'; Celery's solar schedules need ephem too)", "solar") from None
    return ephem


def solar_times(expression: str, start: datetime, field: str = "calendar") -> Iterator[datetime]:
    """The rule's fire times after ``start`` (naive UTC, as are those yielded), rounded to the second."""
    rule = parse_solar(expression, field)
    ephem = _ephem(field)
    altitude, use_center, direction = EVENTS[rule.event]
    observer = ephem.Observer()
    observer.lat, observer.lon = str(rule.latitude), str(rule.longitude)
    observer.elevation, observer.pressure, observer.horizon = 0, 0, altitude
    sun = ephem.Sun()
    find = {1: observer.next_rising, -1: observer.next_setting, 0: observer.next_transit}[direction]
    options = {"use_center": True} if use_center else {}
    at, misses = ephem.Date(start), 0
    while misses < SEARCH_DAYS:
        try:
            found = find(sun, start=at, **options) if direction else find(sun, start=at)
        except ephem.CircumpolarError:  # not today: from the next lowest point of the Sun
            at, misses = observer.next_antitransit(sun, start=at), misses + 1
            continue
        misses = 0
        moment = found.datetime()
        moment = (moment + timedelta(microseconds=500_000)).replace(microsecond=0)
        if moment > start:
            yield moment
        at = ephem.Date(moment + timedelta(seconds=1))
