"""How long a schedule's runs last, and what follows from it: pure rules that ``domain.schedules``
calls (see docs/reference/schedules.md, "Run lengths").

- **The expected length** of the next run (:func:`expected_length`): the ``expected_duration``
  override when set, else the moving average of good durations.

- **The spread of good durations** (``duration_spread``): an exponentially weighted standard
  deviation, kept beside the moving average with the same α. With ``d = x - mean`` the good run's
  duration less the average before it::

      mean' = mean + α·d
      var'  = (1 - α)·(var + α·d²)          spread = √var

  The first good run gives a spread of 0 (and the average its duration); a schedule whose average
  was kept before the spread was starts from 0 too.
- **Blackout periods**: a run does not start when it would likely not end before the next blackout
  period: :func:`fit_start` is the first moment ``t`` from which ``[t, t + expected + 2·spread)``
  meets no blackout period, searched over the next :data:`FIT_HORIZON` (the windows are daily, in
  the schedule's zone, across daylight-saving changes as ``domain.wall_clock`` resolves them).
  None when no gap between blackout periods is long enough: the schedule then keeps the rule of a
  start out of the blackout period alone (it would never run otherwise) and reads ``cannot_fit``.
- **A retry by the failed run's length** (setting ``schedule_retry_by_length``): after failure
  ``n`` of a run that lasted ``L``, ``min(max(L·2^(n-1), 10 s), 3·backoff[n-1])`` (:func:`retry_delay`):
  a run that failed after seconds retries within seconds, one that failed after hours waits up to
  three times the fixed backoff; the cap wins over the floor (a backoff of 0 retries at once).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, tzinfo

from .blackouts import BlackoutPeriod
from .limits import MAX_DURATION
from .wall_clock import resolve_local

#: how far ahead a start that fits before the next blackout period is searched (the windows are daily)
FIT_HORIZON = timedelta(days=2)
#: the spreads added to the expected run to call it likely over
FIT_SPREADS = 2
#: a retry by the failed run's length waits at least this long
RETRY_FLOOR = timedelta(seconds=10)
#: and at most this many times the fixed backoff
RETRY_CAP_FACTOR = 3


# -- the spread ---------------------------------------------------------------------
def updated_spread(mean: timedelta | None, spread: timedelta | None, duration: timedelta, alpha: float) -> timedelta:
    """The spread after a good run of ``duration``, given the average ``mean`` and the ``spread``
    before it (module docstring): ``√((1 - α)·(spread² + α·(duration - mean)²))``."""
    if mean is None:
        return timedelta(0)
    deviation = (duration - mean).total_seconds()
    variance = (1 - alpha) * ((spread or timedelta(0)).total_seconds() ** 2 + alpha * deviation * deviation)
    return min(timedelta(seconds=math.sqrt(max(variance, 0.0))), MAX_DURATION)


def likely_length(expected: timedelta, spread: timedelta | None) -> timedelta:
    """How long a run likely lasts at most: the expected run plus :data:`FIT_SPREADS` spreads."""
    return expected + FIT_SPREADS * (spread or timedelta(0))


# -- blackout periods ---------------------------------------------------------------
def blackout_end(periods: Sequence[BlackoutPeriod], zone: tzinfo, at: datetime) -> datetime | None:
    """When the blackout period containing ``at`` ends (None when ``at`` is in none)."""
    local = at.astimezone(zone)
    moment = local.time().replace(microsecond=0, tzinfo=None)
    for period in periods:
        if period.start < period.end:
            inside, tomorrow = period.start <= moment < period.end, False
        else:  # crosses midnight: the evening part ends tomorrow, the morning part today
            inside, tomorrow = moment >= period.start or moment < period.end, moment >= period.start
        if inside:
            day = local.date() + timedelta(days=1 if tomorrow else 0)
            return resolve_local(datetime.combine(day, period.end), zone)[0]
    return None


def out_of_blackout(periods: Sequence[BlackoutPeriod], zone: tzinfo, at: datetime) -> datetime:
    """``at``, moved to the end of the blackout period it falls in (repeatedly, for adjacent ones)."""
    for _ in range(len(periods) + 1):
        end = blackout_end(periods, zone, at)
        if end is None:
            return at
        at = end
    return at


def next_blackout_start(periods: Sequence[BlackoutPeriod], zone: tzinfo, at: datetime) -> datetime:
    """The first start of a blackout period after ``at`` (in UTC); ``periods`` is not empty."""
    after = at.astimezone(UTC)
    day = after.astimezone(zone).date()
    starts = (resolve_local(datetime.combine(day + timedelta(days=offset), period.start), zone)[0].astimezone(UTC)
              for period in periods for offset in range(-1, 3))
    return min(start for start in starts if start > after)


def fit_start(periods: Sequence[BlackoutPeriod], zone: tzinfo, at: datetime, length: timedelta) -> datetime | None:
    """The first moment from ``at`` on when a run of ``length`` starts out of every blackout period and
    ends before the next one starts (ending as one starts fits); None when there is none within
    :data:`FIT_HORIZON` (it cannot fit). With no blackout period, or no length known, ``at`` out of
    the blackout periods."""
    start = out_of_blackout(periods, zone, at)
    if not periods or length <= timedelta(0):
        return start
    limit = at.astimezone(UTC) + FIT_HORIZON
    for _ in range(4 * len(periods) + 4):  # each turn moves past one blackout period; 2 days hold 3 of each
        if start.astimezone(UTC) > limit:
            return None
        upcoming = next_blackout_start(periods, zone, start)
        if start.astimezone(UTC) + length <= upcoming:
            return start
        start = out_of_blackout(periods, zone, upcoming)
    return None


# -- the retry ------------------------------------------------------------------------
def retry_delay(failures: int, fixed: timedelta, lasted: timedelta) -> timedelta:
    """The wait after failure ``failures`` (1 or more) of a run that lasted ``lasted``, when retries go by
    the failed run's length: ``min(max(lasted·2^(failures-1), 10 s), 3·fixed)``, ``fixed`` being the fixed
    backoff of that failure."""
    grown = max(lasted.total_seconds(), 0.0) * 2.0 ** min(max(failures - 1, 0), 64)
    seconds = min(max(grown, RETRY_FLOOR.total_seconds()), RETRY_CAP_FACTOR * fixed.total_seconds())
    return timedelta(seconds=seconds)


def expected_length(average: timedelta | None, override: timedelta | None = None) -> timedelta:
    """A run's expected length from the stored values: the ``expected_duration`` override when set (for
    runs whose average a few slow ones skew), else the moving average of good durations (zero while
    unknown). The pick reads it from the row, without the whole schedule."""
    if override is not None:
        return override
    return average or timedelta(0)
