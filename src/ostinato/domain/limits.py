"""What any input must satisfy before it is stored or computed with, whatever path it came by
(a CLI file, an HTTP body, a journal message, a Celery outcome, a direct store call).

One rule per kind of value, so that every entry point refuses the same things with the
same words, and no store ever meets a value it cannot write (which would be retried
forever, or crash a loop) nor a time whose arithmetic overflows:

- **text** stored in a column: valid Unicode (no unpaired surrogate), no NUL character
  (PostgreSQL text cannot hold one), and, for what an index holds, at most so many bytes
  of UTF-8 (a PostgreSQL b-tree row is at most 2704 bytes);
- **times**: aware, within [:data:`MIN_TIME`, :data:`MAX_TIME`), so that adding any
  accepted duration (at most :data:`MAX_DURATION`) stays far from year 9999;
- **whole numbers** stored in a ``bigint``: at most :data:`MAX_WHOLE`;
- **JSON values** stored in a ``jsonb`` column: objects with text keys, arrays, finite
  numbers, text as above, nested at most :data:`MAX_JSON_DEPTH` deep;
- **what a visit saw of its changes** (``domain.visit_changes``): at most
  :data:`MAX_CHANGE_TIMES` change times per status, none later than the status's own date
  by more than :data:`CHANGE_TIME_SKEW`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from .errors import ValidationError

#: an origin URL (real forges have URLs of several kilobytes); on PostgreSQL, (url, visit_type) must
#: also fit a b-tree entry: about 2,600 bytes, more if the URL compresses (a store refuses it then)
MAX_URL_BYTES: Final = 65_536
#: a visit type
MAX_TYPE_BYTES: Final = 100
MIN_TIME: Final = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TIME: Final = datetime(3000, 1, 1, tzinfo=UTC)
#: the longest duration accepted anywhere (a period, an interval, a timeout)
MAX_DURATION: Final = timedelta(days=36525)
#: the largest whole number a ``bigint`` column holds
MAX_WHOLE: Final = 2**63 - 1
MAX_JSON_DEPTH: Final = 64
#: the most change times one visit status may carry (a visit that saw more sends the newest ones):
#: 512 bytes of a side row at most, whatever the origin's history
MAX_CHANGE_TIMES: Final = 64
#: how much later than the status's own date a change time may be: the loader's clock and the
#: forge's (a committer's) are not the same clock, but a change from the future is a wrong clock
CHANGE_TIME_SKEW: Final = timedelta(hours=1)
_EXCERPT: Final = 80

TIME_RANGE = f"a time from {MIN_TIME:%Y} to {MAX_TIME:%Y}"


def check_stored_text(value: str, field: str, max_bytes: int | None = None) -> str:
    """``value`` if a store can keep it: no unpaired surrogate, no NUL, at most ``max_bytes`` of UTF-8."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(field, "valid Unicode text (no unpaired surrogate)",
                              _excerpt(value.encode("utf-8", "backslashreplace").decode())) from None
    if "\x00" in value:
        raise ValidationError(field, "text without NUL characters", _excerpt(value))
    if max_bytes is not None and size > max_bytes:
        raise ValidationError(field, f"at most {max_bytes} bytes of UTF-8", _excerpt(value))
    return value


def check_time_range(value: datetime, field: str) -> datetime:
    """``value`` (aware) if it lies within [MIN_TIME, MAX_TIME)."""
    if not MIN_TIME <= value < MAX_TIME:
        raise ValidationError(field, TIME_RANGE, value.isoformat())
    return value


def check_whole(value: Any, field: str, minimum: int = 0, *, nullable: bool = False) -> Any:
    """``value`` if it is a whole number (not a boolean) from ``minimum`` to MAX_WHOLE."""
    if value is None and nullable:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_WHOLE:
        expected = f"a whole number from {minimum} to {MAX_WHOLE}" + (", or null" if nullable else "")
        raise ValidationError(field, expected, value)
    return value


def check_json_value(value: Any, field: str) -> Any:
    """``value`` if a ``jsonb`` column can keep it: text keys, finite numbers, stored text, not too deep."""
    _check_json(value, field, 0)
    return value


def _check_json(value: Any, field: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise ValidationError(field, f"JSON nested at most {MAX_JSON_DEPTH} deep", "deeper")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(field, "finite numbers (JSON has no NaN or Infinity)", value)
    elif isinstance(value, str):
        check_stored_text(value, field)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_json(item, field, depth + 1)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(field, "a JSON object (text keys)", key)
            check_stored_text(key, field)
            _check_json(item, field, depth + 1)
    else:
        raise ValidationError(field, "JSON values (null, true/false, numbers, text, arrays, objects)", type(value).__name__)


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


__all__ = ["CHANGE_TIME_SKEW", "MAX_CHANGE_TIMES", "MAX_DURATION", "MAX_JSON_DEPTH", "MAX_TIME", "MAX_TYPE_BYTES",
           "MAX_URL_BYTES", "MAX_WHOLE", "MIN_TIME", "TIME_RANGE", "check_json_value", "check_stored_text", "check_time_range", "check_whole"]
