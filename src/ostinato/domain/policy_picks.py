"""The policies' index walks ("picks", ``visit_policies.POLICY_PICKS``), declared as data: for each
``pick_*`` named query of the stores, the partial index it walks, which origins it takes and in what
order.

Each entry mirrors its named query, written by hand in both dialects (``pick_*`` in
store/origins/postgresql_scheduling.sql and sqlite_scheduling.sql); nothing generates one from the
other yet. The conformance test tests/conformance/test_pick_declarations.py holds them together: on
every store, for random origins, a dry-run grab of each policy takes exactly the first origins of its
picks' declared walks. The console's "why" of an origin (``api.console.gather_drill``) reads these
declarations rather than a copy of the rules.

Every pick walks only origins that are enabled, whose cooldown is over (a grab first releases the
cooldowns over by ``now``) and, under a lister filter (``GrabOptions.lister_id``), that this lister
lists, enabled or not (:func:`walkable`). A pick then says:

- ``takes``: what its partial index keeps besides (and whatever else of its query holds for good,
  as a NULL its comparison never takes);
- ``due``: when its query's time condition is met (None: it has none);
- ``order``: its ``ORDER BY`` after the visit type, as a key, ascending; origins of equal keys come in
  any order. NULLs go where the query puts them: PostgreSQL sorts them last ascending unless told
  ``NULLS FIRST``, SQLite first, unless its query orders by ``x IS NULL`` first (as
  ``pick_change_rate_optimal_due`` does, where only a row whose last successful visit came from elsewhere,
  the swh protocol's stats, has no ``next_optimal_visit``: last on both).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .origins import StoredListedOrigin
from .visit_policies import POLICY_PICKS, GrabOptions, VisitPolicy
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


def walkable(stats: VisitStats, facts: ListingFacts, now: datetime, options: GrabOptions) -> bool:
    """What every pick asks: enabled, its cooldown over by ``now``, listed by the lister asked for."""
    return (facts.enabled and (stats.cooldown_until is None or stats.cooldown_until <= now)
            and (options.lister_id is None or options.lister_id in facts.lister_ids))


def nulls_first(value: Any) -> tuple[bool, Any]:
    return (value is not None, value)


def nulls_last(value: Any) -> tuple[bool, Any]:
    return (value is None, value)


@dataclass(frozen=True, slots=True)
class Pick:
    """One ``pick_*`` named query: a walk of ``index`` in ``order`` of the origins it ``takes``."""

    name: str
    index: str
    takes: Callable[[VisitStats, ListingFacts], bool]
    order: Callable[[VisitStats, ListingFacts], tuple[Any, ...]]
    due: Callable[[VisitStats, GrabOptions], datetime | None] = lambda stats, options: None

    def eligible(self, stats: VisitStats, facts: ListingFacts, now: datetime, options: GrabOptions) -> bool:
        """Whether a grab at ``now`` under ``options`` may take the origin by this walk."""
        if not (walkable(stats, facts, now, options) and self.takes(stats, facts)):
            return False
        due = self.due(stats, options)
        return due is None or due <= now


def _changed(stats: VisitStats, facts: ListingFacts) -> bool:
    return facts.last_update is not None and stats.last_successful is not None and facts.last_update > stats.last_successful


def _lag_order(stats: VisitStats, facts: ListingFacts) -> tuple[Any, ...]:
    """The largest lag first (``takes`` keeps only origins with both times)."""
    if facts.last_update is None or stats.last_successful is None:
        return ()
    return (-(facts.last_update - stats.last_successful),)


def _loaded_once_due(stats: VisitStats, options: GrabOptions) -> datetime | None:
    return stats.last_visit + options.minimum_interval if stats.last_visit is not None else None


PICKS: Mapping[str, Pick] = {pick.name: pick for pick in (
    Pick("pick_never_visited_oldest_update_first", "visit_never_visited_idx",
         takes=lambda s, f: s.last_successful is None and f.last_update is not None,
         order=lambda s, f: (f.is_fork, f.last_update)),
    Pick("pick_already_visited_order_by_lag", "visit_by_lag_idx",
         takes=_changed,
         order=_lag_order),
    Pick("pick_without_last_update_never_loaded", "visit_without_update_never_loaded_idx",
         takes=lambda s, f: f.last_update is None and s.last_successful is None,
         order=lambda s, f: (nulls_last(f.first_seen),)),
    # last_visit <= now - minimum_interval: a NULL last_visit is never taken
    Pick("pick_without_last_update_loaded_once", "visit_without_update_loaded_once_idx",
         takes=lambda s, f: f.last_update is None and s.successful_visits == 1 and s.last_visit is not None,
         order=lambda s, f: (s.last_visit,), due=_loaded_once_due),
    # next_visit_target <= now: a NULL target is never taken
    Pick("pick_without_last_update_loaded_more", "visit_without_update_loaded_more_idx",
         takes=lambda s, f: f.last_update is None and s.successful_visits > 1 and s.next_visit_target is not None,
         order=lambda s, f: (s.next_visit_target,), due=lambda s, o: s.next_visit_target),
    Pick("pick_oldest_scheduled_first", "visit_oldest_scheduled_idx",
         takes=lambda s, f: True,
         order=lambda s, f: (nulls_first(s.last_scheduled),)),
    Pick("pick_stop_after_success", "visit_stop_after_success_idx",
         takes=lambda s, f: s.last_successful is None,
         order=lambda s, f: (nulls_first(s.last_scheduled),)),
    Pick("pick_change_rate_optimal_never_visited", "visit_optimal_never_visited_idx",
         takes=lambda s, f: s.last_successful is None,
         order=lambda s, f: (nulls_last(f.first_seen),)),
    Pick("pick_change_rate_optimal_due", "visit_optimal_due_idx",
         takes=lambda s, f: s.last_successful is not None,
         order=lambda s, f: (nulls_last(s.next_optimal_visit),)),
)}


def policy_picks(policy: VisitPolicy) -> tuple[Pick, ...]:
    """The declared walks of ``policy``, in the order a grab tries them."""
    return tuple(PICKS[name] for name in POLICY_PICKS[policy])
