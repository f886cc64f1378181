"""The origins role: listers and listed origins, visit stats and the feedback loop, the scheduling policies' grabs, change_rate_optimal's threshold, and origin metrics (see docs/design/origins.md).

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ...domain.change_rates import RateSample, RevisitThreshold
from ...domain.origin_metrics import OriginMetrics
from ...domain.origins import ListedOrigin, Lister, StoredListedOrigin
from ...domain.politeness import Politeness
from ...domain.visit_changes import VisitChanges
from ...domain.visit_policies import GrabOptions, GrabRequest, NextVisit
from ...domain.visits import FeedbackPolicy, VisitStats, VisitStatus

#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
#: Every verb is served (get_or_create_lister reads like a get, but may create: admin).
REMOTE_SCOPES: dict[str, str] = {
    "get_listed_origins": "read", "get_listings": "read", "get_or_create_lister": "worker", "get_origin_metrics": "read",
    "get_revisit_thresholds": "read", "get_visit_stats": "read", "grab_next_visits": "worker", "list_listers": "read",
    "get_visit_changes": "read", "record_listed_origins": "worker", "record_listings": "worker",
    "record_visit_statuses": "worker", "release_visits": "worker", "sample_change_rates": "read", "set_revisit_threshold": "worker", "update_lister": "worker", "delete_lister": "admin",
    "update_origin_metrics": "worker", "get_politeness": "read", "set_visit_type_politeness": "admin",
    "set_host_politeness": "admin",
}
NOT_REMOTE: dict[str, str] = {}


class OriginStore(abc.ABC):
    """listers and listed origins, visit stats and the feedback loop, the scheduling policies' grabs, change_rate_optimal's threshold, and origin metrics (see docs/design/origins.md)."""

    # -- listers and listed origins ------------------------------------------
    @abc.abstractmethod
    def get_or_create_lister(self, name: str, instance_name: str, now: datetime) -> Lister: ...

    @abc.abstractmethod
    def list_listers(self) -> list[Lister]: ...

    @abc.abstractmethod
    def update_lister(self, lister: Lister, *, current_state: Mapping[str, Any] | None = None,
                      last_listing_finished_at: datetime | None = None, now: datetime) -> Lister:
        """Save a lister's state; ConflictError if it changed since ``lister`` was read."""

    @abc.abstractmethod
    def delete_lister(self, lister_id: int) -> bool:
        """Delete a lister that lists no origin (one made by mistake), with its metrics; False if there
        is none. ConflictError if it lists origins: their listings and history depend on it."""

    @abc.abstractmethod
    def record_listed_origins(self, lister_id: int, origins: Sequence[ListedOrigin], now: datetime, *,
                              touch_last_seen: bool = True) -> int:
        """Insert or refresh listed origins in one transaction; returns how many were written.

        A re-listed origin gets ``last_seen = now`` (kept as it was with ``touch_last_seen=False``,
        the swh protocol's ``update_last_seen``: its journal client disabling an origin is no
        listing of it; a new origin gets ``now`` all the same) and the lister's view of its
        fields, ``enabled`` included: an origin the feedback loop disabled comes
        back ("disabled until the next run of the lister") with its failure count
        reset. Each lister re-enables its own listing of the origin.
        """

    @abc.abstractmethod
    def record_listings(self, lister_id: int, origins: Sequence[ListedOrigin], now: datetime, *,
                        touch_last_seen: bool = True) -> list[StoredListedOrigin]:
        """:meth:`record_listed_origins`, answering the listings as stored (one per (url, visit type) given,
        the last given of each), in no set order."""

    @abc.abstractmethod
    def get_listings(self, keys: Sequence[tuple[int, str, str]]) -> list[StoredListedOrigin]:
        """These listings (lister id, url, visit type), those that exist, in no set order."""

    @abc.abstractmethod
    def get_listed_origins(self, *, url: str | None = None, lister_id: int | None = None,
                           after: tuple[str, str, int] | None = None, limit: int = 1000) -> list[StoredListedOrigin]:
        """Listed origins ordered by (url, visit_type, lister_id), paged by ``after``, the last row's key."""

    # -- visit stats and the feedback loop ----------------------------------
    @abc.abstractmethod
    def record_visit_statuses(self, statuses: Sequence[VisitStatus], policy: FeedbackPolicy, *,
                              now: datetime | None = None) -> int:
        """Feed journal visit statuses back into the visit stats (see docs/design/origins.md).

        One transaction per batch; idempotent and order-tolerant (see
        ``domain.visits``). Origins that reach ``max_failures`` are disabled in
        every lister that lists them. Each visit sets the origin's cooldown
        (``policy``'s absolute, failed and not-found cooldowns); ``now``, the
        wall clock, lets a cooldown already over be stored as none. Returns how
        many statuses changed stats.

        What a successful status saw of its changes (``newest_change_at``,
        ``change_times``: ``domain.visit_changes``) is kept apart from the stats,
        in the same transaction, per (url, visit_type) the newest such status's:
        a status without them, an unsuccessful one, or one not newer than the
        one kept leaves it alone (:meth:`get_visit_changes` reads it).
        """

    @abc.abstractmethod
    def get_visit_stats(self, keys: Sequence[tuple[str, str]]) -> list[VisitStats]:
        """Stats of these (url, visit_type), those that exist, in key order."""

    @abc.abstractmethod
    def get_visit_changes(self, keys: Sequence[tuple[str, str]]) -> list[VisitChanges]:
        """What the newest successful status of each of these (url, visit_type) that said so saw of its
        changes (its date, the newest change's time, the change times), those that have one, in key order."""

    # -- scheduling policies ------------------------------------------------
    @abc.abstractmethod
    def grab_next_visits(self, visit_type: str, requests: Sequence[GrabRequest], now: datetime, *,
                         options: GrabOptions = GrabOptions(), dry_run: bool = False,
                         limit: int | None = None) -> list[NextVisit]:
        """Pick origins to visit, each request's policy in turn, and mark them scheduled.

        With ``limit``, at most that many in all: requests after the shares
        (see ``domain.orchestration.plan_grab_requests``) take the room earlier
        ones could not use.

        Only enabled origins whose cooldown is over are picked (those of
        ``options.lister_id`` only, when given); marking sets ``last_scheduled``
        and a cooldown of ``options.in_flight_timeout``, so no other grab takes
        them meanwhile, on PostgreSQL even concurrently. With the visit type's
        politeness per host (:meth:`set_visit_type_politeness`), no host gets more
        visits in flight, or starts closer together, than its limits allow, however
        many grabs run at once; the room a busy host cannot use goes to other hosts.
        One transaction; with ``dry_run`` it is rolled back: the same answer, nothing
        changed (a dry run of one request by a policy of one pick locks its rows but
        marks nothing: no later pick could take them again).
        """

    # -- politeness per host (see docs/reference/origins.md, "Politeness per host") ----------
    @abc.abstractmethod
    def get_politeness(self, visit_type: str) -> Politeness:
        """The visit type's limits per host and the hosts that override them; NotFoundError for a
        visit type with no loader (no task type load-<visit type>)."""

    @abc.abstractmethod
    def set_visit_type_politeness(self, visit_type: str, *, max_concurrent_per_host: int | None = None,
                                  min_spacing_per_host: timedelta | None = None) -> Politeness:
        """Store the visit type's limits per host (None: no limit, no spacing); every grab of it
        keeps them from then on. ValidationError naming the field (an unknown visit type
        included), nothing stored."""

    @abc.abstractmethod
    def set_host_politeness(self, visit_type: str, host: str, *, max_concurrent: int | None = None,
                            min_spacing: timedelta | None = None) -> Politeness:
        """Store ``host``'s own limits for the visit type (None: the visit type's)."""

    @abc.abstractmethod
    def release_visits(self, keys: Sequence[tuple[str, str]]) -> int:
        """Hand back grabbed (url, visit_type) whose visits never started: free again at once."""

    # -- change_rate_optimal's threshold ----------------------------------------
    @abc.abstractmethod
    def get_revisit_thresholds(self) -> dict[str, RevisitThreshold]:
        """The steered threshold of each visit type that has one."""

    @abc.abstractmethod
    def set_revisit_threshold(self, threshold: RevisitThreshold) -> None:
        """Store a visit type's threshold: the feedback of its next visits uses it (ValidationError
        naming the field if it cannot be stored)."""

    @abc.abstractmethod
    def sample_change_rates(self, visit_type: str, size: int, *, seed: int = 0) -> RateSample:
        """At most ``size`` enabled origins of ``visit_type`` at random, with their change rates' beliefs,
        and the number of enabled origins (exact on a small table, else estimated from the sample).
        Reads about the sample, never the whole table, once the table is large."""

    # -- metrics ------------------------------------------------------------
    @abc.abstractmethod
    def update_origin_metrics(self, now: datetime, *, recount: bool = False) -> list[OriginMetrics]:
        """Count every (lister, visit type) as of ``now`` and store the result; returns all metrics.

        The writes keep the counts up to date (see docs/design/origins.md): a pass reads them, and
        costs the same whatever the number of origins (more only for origins several listers list).
        ``recount``: every origin read again, and what the writes keep made again from them (a
        full pass, for a database changed behind the store's back).
        """

    @abc.abstractmethod
    def get_origin_metrics(self, *, lister_id: int | None = None, visit_type: str | None = None) -> list[OriginMetrics]:
        """The metrics last stored by :meth:`update_origin_metrics`."""
