"""A seeded random history of the origins' writes on a store, step by step: listings by several listers
(some origins listed by more than one), visit statuses of every outcome (recent and old, with the wall
clock and without), grabs under every policy (dry runs and real ones), hand-backs, and the swh protocol's
stats upserts and grabs. The metric tests (``test_metric_deltas.py``, ``test_metric_kind_declarations.py``)
run their own mix of these steps; the spans below are how far back each kind of write reaches."""

from __future__ import annotations

import random
from datetime import timedelta

from conftest import T0

from ostinato.domain.listing_grabs import ListingGrab, ListingOrder, ProtocolVisitStats
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visit_policies import GrabOptions, GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitOutcome, VisitStatus

URLS = [f"https://forge.example/{i}" for i in range(40)]
TYPES = ("git", "hg")
SNAPSHOTS = [bytes([n]) * 20 for n in range(1, 4)]
OUTCOMES = [JournalStatus.FULL] * 5 + [JournalStatus.FAILED, JournalStatus.NOT_FOUND, JournalStatus.PARTIAL]


class OriginHistory:
    """One random history on a store; a subclass says its spans and its mix of steps (``step``)."""

    #: how old a listing's last_update, an old visit status and an old protocol visit may be
    LISTING_SPAN = timedelta(days=40)
    OLD_STATUS_SPAN = timedelta(days=30)
    OLD_PROTOCOL_SPAN = timedelta(days=30)
    #: whether a listing also draws whether it touches last_seen (else the default)
    DRAW_TOUCH_LAST_SEEN = True
    #: whether a grab asks for one or two policies (else one)
    DRAW_REQUESTS = True
    DRY_RUN_SHARE = 0.3

    def __init__(self, store, seed: int) -> None:
        self.store, self.rng, self.now = store, random.Random(seed), T0
        self.listers = [store.get_or_create_lister(name, name, T0) for name in ("github", "gitlab", "mirror")]
        self.visits = 0

    def moment(self, span: timedelta) -> timedelta:
        """A random duration up to ``span``, to the microsecond."""
        return timedelta(microseconds=self.rng.randrange(int(span / timedelta(microseconds=1))))

    def key(self) -> tuple[str, str]:
        return self.rng.choice(URLS), self.rng.choice(TYPES)

    def listing(self) -> None:
        lister = self.rng.choice(self.listers[:2] if self.rng.random() < 0.8 else self.listers)
        origins = {}
        for _ in range(self.rng.randrange(1, 15)):
            url, visit_type = self.key()
            last_update = None if self.rng.random() < 0.2 else self.now - self.moment(self.LISTING_SPAN)
            origins[url, visit_type] = ListedOrigin(url, visit_type, last_update=last_update,
                                                    enabled=self.rng.random() < 0.9, is_fork=self.rng.random() < 0.2)
        touch = {"touch_last_seen": self.rng.random() < 0.9} if self.DRAW_TOUCH_LAST_SEEN else {}
        self.store.record_listed_origins(lister.id, list(origins.values()), self.now, **touch)

    def statuses(self) -> None:
        batch = []
        for _ in range(self.rng.randrange(1, 12)):
            url, visit_type = self.key()
            self.visits += 1
            date = self.now - self.moment(self.OLD_STATUS_SPAN if self.rng.random() < 0.2 else timedelta(hours=3))
            outcome = self.rng.choice(OUTCOMES)
            snapshot = self.rng.choice(SNAPSHOTS) if outcome in (JournalStatus.FULL, JournalStatus.PARTIAL) else None
            batch.append(VisitStatus(url, self.visits, visit_type, outcome, date, snapshot))
        policy = FeedbackPolicy(max_failures=self.rng.choice((2, 3)),
                                absolute_cooldown=self.rng.choice((timedelta(minutes=20), timedelta(hours=12))))
        self.store.record_visit_statuses(batch, policy, now=self.now if self.rng.random() < 0.8 else None)

    def grab(self) -> None:
        asked = self.rng.randrange(1, 3) if self.DRAW_REQUESTS else 1
        requests = [GrabRequest(self.rng.choice(list(VisitPolicy)), self.rng.randrange(1, 8)) for _ in range(asked)]
        options = GrabOptions(in_flight_timeout=self.rng.choice((timedelta(minutes=30), timedelta(hours=5))))
        self.store.grab_next_visits(self.rng.choice(TYPES), requests, self.now, options=options,
                                    dry_run=self.rng.random() < self.DRY_RUN_SHARE)

    def release(self) -> None:
        self.store.release_visits([self.key() for _ in range(self.rng.randrange(1, 6))])

    def protocol_stats(self) -> None:
        """The swh protocol's upsert: its fields as told, recent and old visits, with the wall clock and without."""
        batch = []
        for _ in range(self.rng.randrange(1, 10)):
            url, visit_type = self.key()
            when = self.now - self.moment(self.OLD_PROTOCOL_SPAN if self.rng.random() < 0.3 else timedelta(hours=2))
            status = self.rng.choice([None, *VisitOutcome])
            batch.append(ProtocolVisitStats(
                url, visit_type, last_visit=when if status else None, last_visit_status=status,
                last_successful=when if status is VisitOutcome.SUCCESSFUL else None,
                last_snapshot=self.rng.choice(SNAPSHOTS) if status is VisitOutcome.SUCCESSFUL else None,
                last_scheduled=self.now - self.moment(timedelta(hours=5)) if self.rng.random() < 0.3 else None))
        self.store.merge_visit_stats(batch, now=self.now if self.rng.random() < 0.8 else None)

    def protocol_grab(self) -> None:
        grab = ListingGrab(self.rng.choice(TYPES), self.rng.randrange(1, 8), self.rng.choice(list(ListingOrder)),
                           lister_ids=(self.listers[0].id,), enabled=self.rng.random() < 0.9)
        self.store.grab_listed_origins(grab, self.now, dry_run=self.rng.random() < 0.3)
