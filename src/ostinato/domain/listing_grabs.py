"""What the swh protocol's face asks of the visit stats (see docs/reference/swh-compat.md, "Grabs"):
its grab of listed origins, the visit stats it writes as told, and its per-lister counts.

These follow swh-scheduler's rules where they differ from Ostinato's own
(``domain.visit_policies``, docs/design/origins.md):

- a grab answers *listings* (one row per lister listing an origin), not origins;
- its cooldowns are computed at each grab from the grab's own arguments and the
  visit stats as they are, not stored when a visit's outcome arrives: an origin is
  left out if it was scheduled within ``absolute_cooldown``; if it was scheduled
  within ``scheduled_cooldown`` and no visit was recorded since; if its last visit
  failed within ``failed_cooldown``, or found nothing within ``not_found_cooldown``
  (a cooldown of None is not applied);
- "visited" means a snapshot was recorded (``last_snapshot``), and the orders are
  those of swh's policies (:class:`ListingOrder`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .errors import ValidationError
from .visits import VisitOutcome


class ListingOrder(str, enum.Enum):
    """The protocol's scheduling policies, each a filter and an order over the listings."""

    #: every listing, the one scheduled longest ago (or never) first
    OLDEST_SCHEDULED_FIRST = "oldest_scheduled_first"
    #: until a visit succeeds: oldest ``last_update`` first (none last), then first seen
    STOP_AFTER_SUCCESS = "stop_after_success"
    #: no snapshot yet and a ``last_update``: oldest ``last_update`` first
    NEVER_VISITED_OLDEST_UPDATE_FIRST = "never_visited_oldest_update_first"
    #: a snapshot, and a ``last_update`` after the last successful visit: largest lag first
    ALREADY_VISITED_ORDER_BY_LAG = "already_visited_order_by_lag"
    #: no ``last_update``: by the origin's queue position (none first), then first seen; the
    #: visit type's queue position moves up to the largest one grabbed
    ORIGINS_WITHOUT_LAST_UPDATE = "origins_without_last_update"
    #: a lister's origins not scheduled since its last listing ended (``scheduled_before``)
    FIRST_VISITS_AFTER_LISTING = "first_visits_after_listing"


@dataclass(frozen=True, slots=True)
class ListingGrab:
    """One grab of the protocol: at most ``count`` listings of ``visit_type``."""

    visit_type: str
    count: int
    order: ListingOrder
    #: listings enabled (True) or disabled (False)
    enabled: bool = True
    #: the listings of these listers only (None: of any)
    lister_ids: tuple[int, ...] | None = None
    absolute_cooldown: timedelta | None = timedelta(hours=12)
    scheduled_cooldown: timedelta | None = timedelta(days=7)
    failed_cooldown: timedelta | None = timedelta(days=14)
    not_found_cooldown: timedelta | None = timedelta(days=31)
    #: FIRST_VISITS_AFTER_LISTING: also origins scheduled before this (the lister's last listing's end)
    scheduled_before: datetime | None = None
    #: a random share of the listings, in percent, looked at (the protocol's ``tablesample``): only a
    #: grab of disabled listings, a scan, samples; the index walks need no sample (see :func:`walk_order`)
    sample_percent: float | None = None
    #: compat records of the visit types' queue positions, keyed by visit type, field ``position``
    queue_records: str | None = None

    def validated(self) -> ListingGrab:
        if not isinstance(self.visit_type, str) or not self.visit_type:
            raise ValidationError("visit_type", "a visit type such as git", self.visit_type)
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ValidationError("count", "a whole number of 0 or more", self.count)
        if not isinstance(self.order, ListingOrder):
            raise ValidationError("order", "a scheduling policy of the protocol", self.order)
        if self.lister_ids is not None and (not isinstance(self.lister_ids, tuple) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in self.lister_ids)):
            raise ValidationError("lister_ids", "a tuple of lister ids, or null", self.lister_ids)
        for name in ("absolute_cooldown", "scheduled_cooldown", "failed_cooldown", "not_found_cooldown"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, timedelta):
                raise ValidationError(name, "a duration or null", value)
        if self.sample_percent is not None and (isinstance(self.sample_percent, bool)
                                                or not isinstance(self.sample_percent, (int, float))
                                                or not 0 < self.sample_percent <= 100):
            raise ValidationError("sample_percent", "a percentage above 0 and up to 100, or null", self.sample_percent)
        if self.queue_records is not None and (not isinstance(self.queue_records, str) or not self.queue_records
                                               or len(self.queue_records) > 200):
            raise ValidationError("queue_records", "a namespace of 1 to 200 characters, or null", self.queue_records)
        return self


def cooldown_bounds(grab: ListingGrab, now: datetime) -> dict[str, datetime | None]:
    """The times each cooldown compares the stats with (None: that cooldown is not applied)."""
    def since(cooldown: timedelta | None) -> datetime | None:
        return None if not cooldown else now - cooldown

    return {"absolute_since": since(grab.absolute_cooldown), "scheduled_since": since(grab.scheduled_cooldown),
            "failed_since": since(grab.failed_cooldown), "not_found_since": since(grab.not_found_cooldown)}


@dataclass(frozen=True, slots=True)
class ProtocolVisitStats:
    """One origin's visit stats as the protocol has them. Written (its ``origin_visit_stats_upsert``), as
    told: each field not None replaces the stored one; read (its ``origin_visit_stats_get``), as stored.
    The first five are Ostinato's visit stats too; the last three only the protocol's journal client
    computes (the origin's place in its visit type's queue, the offset to its next place, the visits
    in a row with the same outcome)."""

    url: str
    visit_type: str
    last_visit: datetime | None = None
    last_visit_status: VisitOutcome | None = None
    last_successful: datetime | None = None
    last_snapshot: bytes | None = None
    last_scheduled: datetime | None = None
    queue_position: int | None = None
    position_offset: int | None = None
    successive_visits: int | None = None


def fold_protocol_stats(updates: Sequence[ProtocolVisitStats]) -> list[tuple[ProtocolVisitStats, datetime | None]]:
    """Updates of one origin given several times, folded in order into one (each field not None over the
    earlier), with the newest ``last_visit`` any of them gave: one row per origin, which a single
    statement can write, the same as writing them one after another."""
    folded: dict[tuple[str, str], tuple[ProtocolVisitStats, datetime | None]] = {}
    for update in updates:
        key = (update.url, update.visit_type)
        seen = folded.get(key)
        if seen is None:
            folded[key] = (update, update.last_visit)
            continue
        earlier, newest = seen
        merged = ProtocolVisitStats(*(new if new is not None else old for new, old in zip(
            astuple_fields(update), astuple_fields(earlier), strict=True)))
        if update.last_visit is not None and (newest is None or update.last_visit > newest):
            newest = update.last_visit
        folded[key] = (merged, newest)
    return list(folded.values())


def astuple_fields(stats: ProtocolVisitStats) -> tuple:
    return tuple(getattr(stats, name) for name in ProtocolVisitStats.__slots__)


@dataclass(frozen=True, slots=True)
class ListingCounts:
    """The protocol's metrics of one (lister, visit type), counted over the listings."""

    lister_id: int
    visit_type: str
    origins_known: int
    origins_enabled: int
    #: enabled, and no snapshot recorded
    origins_never_visited: int
    #: enabled, and a ``last_update`` after the last successful visit
    origins_with_pending_changes: int


# -- the walk of a policy's index ---------------------------------------------------------------
# A grab of enabled listings walks the origins in an index whose key is its policy's order, each
# origin's key a bound of its listings' own keys (the oldest or newest last_update of its listings,
# its earliest first_seen: the same as the listing's for an origin one lister lists). The listings
# of the origins walked so far whose own key is not past the last origin's bound come before any
# listing of an origin not walked yet: those are taken in order; if they are too few, the walk goes
# further. A listing's key and the order of the protocol's policies are written here once.

@dataclass(frozen=True, slots=True)
class WalkedOrigin:
    """An origin the walk of a policy's index passed: what its key and its listings' keys are made of."""

    url: str
    visit_type: str
    last_scheduled: datetime | None
    last_successful: datetime | None
    #: the earliest first_seen, the oldest and the newest last_update of its listings
    first_listed: datetime | None
    oldest_update: datetime | None
    newest_update: datetime | None
    queue_position: int | None


def _nulls_first(value: Any) -> tuple:
    return (0,) if value is None else (1, value)


def _nulls_last(value: Any) -> tuple:
    return (1,) if value is None else (0, value)


def walk_bound(order: ListingOrder, origin: WalkedOrigin) -> tuple:
    """The origin's key in the walk: no listing of it comes before it in ``order``."""
    if order in (ListingOrder.OLDEST_SCHEDULED_FIRST, ListingOrder.FIRST_VISITS_AFTER_LISTING):
        return _nulls_first(origin.last_scheduled)
    if order is ListingOrder.STOP_AFTER_SUCCESS:
        return (_nulls_last(origin.oldest_update), origin.first_listed)
    if order is ListingOrder.NEVER_VISITED_OLDEST_UPDATE_FIRST:
        return (origin.oldest_update,)
    if order is ListingOrder.ALREADY_VISITED_ORDER_BY_LAG:
        # the walk of this order passes only origins updated after their last successful visit
        return (-(origin.newest_update - origin.last_successful),)  # type: ignore[operator]  # the walk sets both
    return (_nulls_first(origin.queue_position), origin.first_listed)


def listing_key(order: ListingOrder, origin: WalkedOrigin, listing: Any) -> tuple | None:
    """The listing's key in ``order`` (a ``StoredListedOrigin`` of the origin); None if the policy leaves
    the listing out (its own ``last_update`` does not qualify)."""
    last_update = listing.origin.last_update
    if order in (ListingOrder.OLDEST_SCHEDULED_FIRST, ListingOrder.FIRST_VISITS_AFTER_LISTING):
        return _nulls_first(origin.last_scheduled)
    if order is ListingOrder.STOP_AFTER_SUCCESS:
        return (_nulls_last(last_update), listing.first_seen)
    if order is ListingOrder.NEVER_VISITED_OLDEST_UPDATE_FIRST:
        return None if last_update is None else (last_update,)
    if order is ListingOrder.ALREADY_VISITED_ORDER_BY_LAG:
        if last_update is None or origin.last_successful is None or not last_update > origin.last_successful:
            return None
        return (-(last_update - origin.last_successful),)
    if last_update is not None:
        return None
    return (_nulls_first(origin.queue_position), listing.first_seen)


def take_walked(order: ListingOrder, walked: Sequence[tuple[WalkedOrigin, Any]], count: int,
                exhausted: bool) -> list[tuple[WalkedOrigin, Any]] | None:
    """The first ``count`` listings of a walk, in ``order`` (ties by URL then lister), from the walked
    origins each with one of its listings (or None, an origin none of whose listings the grab takes);
    None when they may not be the first yet and the walk must go further (it did not reach the end of
    the index: ``exhausted`` is False)."""
    if not walked:
        return []
    last = max(walk_bound(order, origin) for origin, _ in walked)
    found = []
    for origin, listing in walked:
        if listing is None:
            continue
        key = listing_key(order, origin, listing)
        if key is not None and (exhausted or key <= last):
            found.append((key, listing.origin.url, listing.lister_id, origin, listing))
    if len(found) < count and not exhausted:
        return None
    found.sort(key=lambda item: item[:3])
    return [(origin, listing) for _, _, _, origin, listing in found[:count]]
