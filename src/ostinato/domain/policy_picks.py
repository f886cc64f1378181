"""The policies' index walks ("picks"), each declared once, as data: the partial index it walks, the
conditions that choose the origins it takes and the order it takes them in.

Everything else is derived from these declarations. Each store renders a pick's statement from its
dialect's one pick template (store/origins/picks.py fills the template ``pick`` of
postgresql_scheduling.sql and sqlite_scheduling.sql with the conditions and the order); the Python
predicate, order key and due time below are what the console's "why" of an origin
(``api.console.gather_drill``) reads. The conformance test tests/conformance/test_pick_declarations.py
holds the two sides together: on every store, for random origins, a dry-run grab of each policy takes
exactly the first origins of its picks' declared walks; tests/unit/test_policy_picks.py holds each
declaration against the partial index both schemas create for it.

Every pick walks only origins that are enabled, whose cooldown is over (a grab first releases the
cooldowns over by ``now``) and, under a lister filter (``GrabOptions.lister_id``), that this lister
lists, enabled or not (:func:`walkable`: the template says it once for all). A pick then says:

- ``where``: its conditions over named fields, which its partial index keeps (all but the time
  conditions, :class:`AtMost`, which the walk checks as it goes); a NULL meets no comparison;
- ``order``: its keys after the visit type, which are its partial index's columns in their order.
  A key says where NULLs go, or None where the walk meets none (its conditions rule them out, or
  every listed origin has one); each store writes what its dialect needs to put them there, as the
  pick's index in that dialect keeps them (store/origins/picks.py).

Fields are named as the visit stats name them (``VisitStats``), but for what the listings say together
(:data:`LISTING_FIELDS`, read from :class:`ListingFacts`). A time condition compares with one of the
grab's moments (:data:`MOMENTS`): ``now``, or ``visited_before`` (``minimum_interval`` before it).

A new policy is a member of ``visit_policies.VisitPolicy``, its picks here (:data:`POLICY_WALKS`), and
its line in docs/reference/origins.md; besides, the partial index each pick walks, in a migration per
dialect and the canonical schemas.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import total_ordering
from typing import Any

from .origins import StoredListedOrigin
from .visit_policies import GrabOptions, VisitPolicy
from .visits import VisitStats


@dataclass(frozen=True, slots=True)
class ListingFacts:
    """What an origin's listings say together, as its visit stats keep it: enabled in any, the
    earliest first_seen, the newest last_update, a fork in any; and the listers that list it."""

    enabled: bool
    first_seen: datetime | None
    last_update: datetime | None
    is_fork: bool
    listings: int
    lister_ids: frozenset[int] = frozenset()

    @classmethod
    def of(cls, listings: Sequence[StoredListedOrigin]) -> ListingFacts:
        updates = [item.origin.last_update for item in listings if item.origin.last_update is not None]
        return cls(any(item.origin.enabled for item in listings),
                   min((item.first_seen for item in listings), default=None), max(updates, default=None),
                   any(bool(item.origin.is_fork) for item in listings), len(listings),
                   frozenset(item.lister_id for item in listings))


#: the fields a pick reads from what the listings say (:class:`ListingFacts`); every other from ``VisitStats``
LISTING_FIELDS = frozenset({"first_seen", "last_update", "is_fork"})

#: the grab's moments a time condition compares with, each as how long before the grab's ``now`` it is
MOMENTS: Mapping[str, Callable[[GrabOptions], timedelta]] = {
    "now": lambda options: timedelta(0),
    "visited_before": lambda options: options.minimum_interval,
}


def moments(now: datetime, options: GrabOptions) -> dict[str, datetime]:
    """The grab's moments at ``now`` under ``options``, by name."""
    return {name: now - before(options) for name, before in MOMENTS.items()}


def field_value(name: str, stats: VisitStats, facts: ListingFacts) -> Any:
    return getattr(facts if name in LISTING_FIELDS else stats, name)


# -- conditions -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class IsNull:
    field: str

    def holds(self, stats: VisitStats, facts: ListingFacts) -> bool:
        return field_value(self.field, stats, facts) is None


@dataclass(frozen=True, slots=True)
class NotNull:
    field: str

    def holds(self, stats: VisitStats, facts: ListingFacts) -> bool:
        return field_value(self.field, stats, facts) is not None


@dataclass(frozen=True, slots=True)
class Eq:
    """The field equals a whole number (written in the statement, as its partial index says it)."""

    field: str
    value: int

    def holds(self, stats: VisitStats, facts: ListingFacts) -> bool:
        found = field_value(self.field, stats, facts)
        return found is not None and found == self.value


@dataclass(frozen=True, slots=True)
class Gt:
    """The field is more than a whole number."""

    field: str
    value: int

    def holds(self, stats: VisitStats, facts: ListingFacts) -> bool:
        found = field_value(self.field, stats, facts)
        return found is not None and found > self.value


@dataclass(frozen=True, slots=True)
class Later:
    """One time field later than another (``last_update > last_successful``: a change not yet visited)."""

    field: str
    than: str

    def holds(self, stats: VisitStats, facts: ListingFacts) -> bool:
        found, than = field_value(self.field, stats, facts), field_value(self.than, stats, facts)
        return found is not None and than is not None and found > than


@dataclass(frozen=True, slots=True)
class AtMost:
    """The time condition: the field at or before one of the grab's moments (:data:`MOMENTS`). The walk
    checks it as it goes (its index keeps the field, due or not); a NULL is never due."""

    field: str
    moment: str

    def holds(self, stats: VisitStats, facts: ListingFacts) -> bool:
        return field_value(self.field, stats, facts) is not None

    def due(self, stats: VisitStats, facts: ListingFacts, options: GrabOptions) -> datetime | None:
        found = field_value(self.field, stats, facts)
        return None if found is None else found + MOMENTS[self.moment](options)


Condition = IsNull | NotNull | Eq | Gt | Later | AtMost


# -- order ----------------------------------------------------------------------------------------

class Nulls(enum.Enum):
    FIRST = "first"
    LAST = "last"


@dataclass(frozen=True, slots=True)
class Lag:
    """The time from one field to a later one (``last_update - last_successful``)."""

    newer: str
    older: str

    def value(self, stats: VisitStats, facts: ListingFacts) -> timedelta | None:
        newer, older = field_value(self.newer, stats, facts), field_value(self.older, stats, facts)
        return None if newer is None or older is None else newer - older


@total_ordering
@dataclass(frozen=True, slots=True)
class _Descending:
    value: Any

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.value < self.value)


@dataclass(frozen=True, slots=True)
class Key:
    """One key of a walk's order: a field or a :class:`Lag`, ascending unless ``descending``; ``nulls``
    where NULLs go, None where the walk meets none."""

    of: str | Lag
    descending: bool = False
    nulls: Nulls | None = None

    def value(self, stats: VisitStats, facts: ListingFacts) -> tuple[Any, ...]:
        found = self.of.value(stats, facts) if isinstance(self.of, Lag) else field_value(self.of, stats, facts)
        ordered = _Descending(found) if self.descending else found
        if self.nulls is None:
            return (ordered,)
        return ((found is None) == (self.nulls is Nulls.LAST), ordered)


# -- picks ----------------------------------------------------------------------------------------

def walkable(stats: VisitStats, facts: ListingFacts, now: datetime, options: GrabOptions) -> bool:
    """What every pick asks: enabled, its cooldown over by ``now``, listed by the lister asked for."""
    return (facts.enabled and (stats.cooldown_until is None or stats.cooldown_until <= now)
            and (options.lister_id is None or options.lister_id in facts.lister_ids))


@dataclass(frozen=True, slots=True)
class Pick:
    """One index walk: ``index`` in ``order`` (after the visit type) of the origins that meet ``where``."""

    name: str
    index: str
    where: tuple[Condition, ...]
    order: tuple[Key, ...]

    def takes(self, stats: VisitStats, facts: ListingFacts) -> bool:
        """Whether the walk's index keeps the origin (due or not)."""
        return all(condition.holds(stats, facts) for condition in self.where)

    def due(self, stats: VisitStats, facts: ListingFacts, options: GrabOptions) -> datetime | None:
        """When its time conditions are met (None: it has none, or a NULL meets none)."""
        times = [condition.due(stats, facts, options) for condition in self.where if isinstance(condition, AtMost)]
        if not times or None in times:
            return None
        return max(time for time in times if time is not None)

    def sort_key(self, stats: VisitStats, facts: ListingFacts) -> tuple[Any, ...]:
        """Its order as a key, ascending; origins of equal keys come in any order."""
        return tuple(part for key in self.order for part in key.value(stats, facts))

    def eligible(self, stats: VisitStats, facts: ListingFacts, now: datetime, options: GrabOptions) -> bool:
        """Whether a grab at ``now`` under ``options`` may take the origin by this walk."""
        if not (walkable(stats, facts, now, options) and self.takes(stats, facts)):
            return False
        due = self.due(stats, facts, options)
        return due is None or due <= now


#: The index walks that make each policy, in the order a grab tries them.
POLICY_WALKS: Mapping[VisitPolicy, tuple[Pick, ...]] = {
    VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST: (
        Pick("pick_never_visited_oldest_update_first", "visit_never_visited_idx",
             (IsNull("last_successful"), NotNull("last_update")), (Key("is_fork"), Key("last_update"))),
    ),
    VisitPolicy.ALREADY_VISITED_ORDER_BY_LAG: (
        Pick("pick_already_visited_order_by_lag", "visit_by_lag_idx",
             (Later("last_update", "last_successful"),), (Key(Lag("last_update", "last_successful"), descending=True),)),
    ),
    # never loaded (by first_seen), loaded once (by last visit, once minimum_interval has passed), loaded
    # more than once (by next run target, once it is due)
    VisitPolicy.ORIGINS_WITHOUT_LAST_UPDATE: (
        Pick("pick_without_last_update_never_loaded", "visit_without_update_never_loaded_idx",
             (IsNull("last_update"), IsNull("last_successful")), (Key("first_seen"),)),
        # "ordered by date of last visit; clamped to $minimum_interval (oldest first)"
        Pick("pick_without_last_update_loaded_once", "visit_without_update_loaded_once_idx",
             (IsNull("last_update"), Eq("successful_visits", 1), AtMost("last_visit", "visited_before")),
             (Key("last_visit"),)),
        # "order by next run target", those that are due
        Pick("pick_without_last_update_loaded_more", "visit_without_update_loaded_more_idx",
             (IsNull("last_update"), Gt("successful_visits", 1), AtMost("next_visit_target", "now")),
             (Key("next_visit_target"),)),
    ),
    VisitPolicy.OLDEST_SCHEDULED_FIRST: (
        Pick("pick_oldest_scheduled_first", "visit_oldest_scheduled_idx",
             (), (Key("last_scheduled", nulls=Nulls.FIRST),)),
    ),
    VisitPolicy.STOP_AFTER_SUCCESS: (
        Pick("pick_stop_after_success", "visit_stop_after_success_idx",
             (IsNull("last_successful"),), (Key("last_scheduled", nulls=Nulls.FIRST),)),
    ),
    # never loaded (by first_seen), then every other by next_optimal_visit (due or not: the capacity is
    # used in that order), which a change the forge reports brings forward by what a visit buys
    # (change_rates.hint_wait_days); a row whose last successful visit came from the swh protocol's
    # stats has no next_optimal_visit: last
    VisitPolicy.CHANGE_RATE_OPTIMAL: (
        Pick("pick_change_rate_optimal_never_visited", "visit_optimal_never_visited_idx",
             (IsNull("last_successful"),), (Key("first_seen"),)),
        Pick("pick_change_rate_optimal_due", "visit_optimal_due_idx",
             (NotNull("last_successful"),), (Key("next_optimal_visit", nulls=Nulls.LAST),)),
    ),
}

#: every pick by name
PICKS: Mapping[str, Pick] = {pick.name: pick for picks in POLICY_WALKS.values() for pick in picks}

#: the names of each policy's picks, in the order a grab tries them
POLICY_PICKS: Mapping[VisitPolicy, tuple[str, ...]] = {
    policy: tuple(pick.name for pick in picks) for policy, picks in POLICY_WALKS.items()}


def policy_picks(policy: VisitPolicy) -> tuple[Pick, ...]:
    """The declared walks of ``policy``, in the order a grab tries them."""
    return POLICY_WALKS[policy]
