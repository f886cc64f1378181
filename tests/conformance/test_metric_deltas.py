"""The origin metrics the writes keep up to date equal a full recount, on every store.

A seeded random sequence of listings (by several listers, some origins listed by more than one),
visit statuses (successful, failed, not found; recent and old; with the wall clock and without),
grabs under every policy (dry runs and real ones), hand-backs, the swh protocol's stats upserts and
grabs, and a clock that moves by odd
amounts; every few steps the metrics a pass reads from what the writes kept are compared with a
full recount of every origin (``update_origin_metrics(now, recount=True)``).
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.listing_grabs import ListingGrab, ListingOrder, ProtocolVisitStats
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visit_policies import GrabOptions, GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitOutcome, VisitStatus

URLS = [f"https://forge.example/{i}" for i in range(40)]
TYPES = ("git", "hg")
SNAPSHOTS = [bytes([n]) * 20 for n in range(1, 4)]
KINDS = [JournalStatus.FULL] * 5 + [JournalStatus.FAILED, JournalStatus.NOT_FOUND, JournalStatus.PARTIAL]


class Sequence:
    """One random history, step by step, on a store."""

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
            last_update = None if self.rng.random() < 0.2 else self.now - self.moment(timedelta(days=40))
            origins[url, visit_type] = ListedOrigin(url, visit_type, last_update=last_update,
                                                    enabled=self.rng.random() < 0.9, is_fork=self.rng.random() < 0.2)
        self.store.record_listed_origins(lister.id, list(origins.values()), self.now,
                                         touch_last_seen=self.rng.random() < 0.9)

    def statuses(self) -> None:
        batch = []
        for _ in range(self.rng.randrange(1, 12)):
            url, visit_type = self.key()
            self.visits += 1
            old = self.rng.random() < 0.2
            date = self.now - (self.moment(timedelta(days=30)) if old else self.moment(timedelta(hours=3)))
            kind = self.rng.choice(KINDS)
            snapshot = self.rng.choice(SNAPSHOTS) if kind in (JournalStatus.FULL, JournalStatus.PARTIAL) else None
            batch.append(VisitStatus(url, self.visits, visit_type, kind, date, snapshot))
        policy = FeedbackPolicy(max_failures=self.rng.choice((2, 3)),
                                absolute_cooldown=self.rng.choice((timedelta(minutes=20), timedelta(hours=12))))
        self.store.record_visit_statuses(batch, policy, now=self.now if self.rng.random() < 0.8 else None)

    def grab(self) -> None:
        requests = [GrabRequest(self.rng.choice(list(VisitPolicy)), self.rng.randrange(1, 8))
                    for _ in range(self.rng.randrange(1, 3))]
        options = GrabOptions(in_flight_timeout=self.rng.choice((timedelta(minutes=30), timedelta(hours=5))))
        self.store.grab_next_visits(self.rng.choice(TYPES), requests, self.now, options=options,
                                    dry_run=self.rng.random() < 0.3)

    def release(self) -> None:
        self.store.release_visits([self.key() for _ in range(self.rng.randrange(1, 6))])

    def protocol_stats(self) -> None:
        """The swh protocol's upsert: its fields as told, recent and old visits, with the wall clock and without."""
        batch = []
        for _ in range(self.rng.randrange(1, 10)):
            url, visit_type = self.key()
            when = self.now - self.moment(timedelta(days=30) if self.rng.random() < 0.3 else timedelta(hours=2))
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

    def step(self) -> None:
        self.rng.choice((self.listing, self.statuses, self.statuses, self.grab, self.grab, self.release,
                         self.protocol_stats, self.protocol_grab))()
        self.now += self.moment(timedelta(minutes=25))

    def check(self) -> None:
        kept = self.store.update_origin_metrics(self.now)
        recounted = self.store.update_origin_metrics(self.now, recount=True)
        assert kept == recounted, f"at {self.now}"
        assert self.store.get_origin_metrics() == recounted


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_metrics_equal_a_full_recount(store, seed):
    run = Sequence(store, seed)
    for number in range(120):
        run.step()
        if number % 8 == 7:
            run.check()
    run.check()


def test_kept_metrics_equal_a_recount_after_a_long_history(store):
    """No recount in between: every change since the start is carried by the cells alone."""
    run = Sequence(store, 7)
    for _ in range(150):
        run.step()
    assert any(m.origins_known for m in store.update_origin_metrics(run.now))
    run.check()
