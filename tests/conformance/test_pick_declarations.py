"""The policies' walks a store runs (its pick template filled from ``domain.policy_picks``, as
store/origins/picks.py renders each declaration in its dialect) are the walks the declarations' Python
side finds (``Pick.eligible``, ``Pick.sort_key``), on every store: the SQL and the predicate the console
reads come from one declaration, and this holds the renderer and the derivation together.

A seeded random history (listings by several listers, some origins listed by more than one, with and
without last_update, enabled or not, forks or not; visit statuses of every outcome, recent and old;
real grabs that put origins in flight; a clock that moves) fills the store; then, at several moments
and with several grab options (a lister filter, a minimum_interval), a dry-run grab of each policy
takes exactly the first origins of its declared walks: every origin the declaration of its pick finds
eligible, in the declared order, the picks tried in the grab's order. Origins of equal keys may come in
any order: the check compares each position's key with the one expected there, and each origin's
eligibility, never the urls of a tie.

Times are whole seconds: SQLite compares lags by ``julianday``, to the millisecond.

The swh protocol's stats upsert may record a successful visit the feedback loop never planned from (no
``next_optimal_visit``); ``pick_change_rate_optimal_due`` then meets a NULL, which its declaration puts
last: PostgreSQL sorts it there unless told, SQLite as its statement and index order by ``IS NULL`` first.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from conftest import T0

from ostinato.domain.listing_grabs import ProtocolVisitStats
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.policy_picks import ListingFacts, Pick, policy_picks
from ostinato.domain.visit_policies import GrabOptions, GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitOutcome, VisitStats, VisitStatus

URLS = [f"https://forge.example/{i}" for i in range(60)]
TYPES = ("git", "hg")
KINDS = [JournalStatus.FULL] * 4 + [JournalStatus.PARTIAL, JournalStatus.FAILED, JournalStatus.NOT_FOUND]
Row = tuple[VisitStats, ListingFacts]


class History:
    """One random history on a store, and what its rows say now."""

    def __init__(self, store, seed: int, *, protocol: bool = False) -> None:
        self.store, self.rng, self.now = store, random.Random(seed), T0
        self.protocol = protocol
        self.listers = [store.get_or_create_lister(name, name, T0) for name in ("github", "gitlab", "mirror")]
        self.visits = 0

    def moment(self, span: timedelta) -> timedelta:
        """A random duration up to ``span``, in whole seconds."""
        return timedelta(seconds=self.rng.randrange(int(span.total_seconds())))

    def listing(self) -> None:
        lister = self.rng.choice(self.listers)
        origins = {}
        for _ in range(self.rng.randrange(1, 20)):
            url, visit_type = self.rng.choice(URLS), self.rng.choice(TYPES)
            # a few last_updates shared, so that the walks meet ties
            last_update = (None if self.rng.random() < 0.3 else
                           T0 - timedelta(days=self.rng.randrange(3)) if self.rng.random() < 0.2 else
                           self.now - self.moment(timedelta(days=20)))
            origins[url, visit_type] = ListedOrigin(url, visit_type, last_update=last_update,
                                                    enabled=self.rng.random() < 0.85, is_fork=self.rng.random() < 0.25)
        self.store.record_listed_origins(lister.id, list(origins.values()), self.now)

    def statuses(self) -> None:
        batch = []
        for _ in range(self.rng.randrange(1, 15)):
            self.visits += 1
            old = self.rng.random() < 0.4
            date = self.now - (self.moment(timedelta(days=10)) if old else self.moment(timedelta(hours=3)))
            kind = self.rng.choice(KINDS)
            snapshot = bytes([self.rng.randrange(1, 4)]) * 20 if kind in (JournalStatus.FULL, JournalStatus.PARTIAL) \
                else None
            batch.append(VisitStatus(self.rng.choice(URLS), self.visits, self.rng.choice(TYPES), kind, date, snapshot))
        policy = FeedbackPolicy(max_failures=3, absolute_cooldown=self.rng.choice((timedelta(minutes=20),
                                                                                   timedelta(hours=6))))
        self.store.record_visit_statuses(batch, policy, now=self.now)

    def grab(self) -> None:
        requests = [GrabRequest(self.rng.choice(list(VisitPolicy)), self.rng.randrange(1, 6))]
        options = GrabOptions(in_flight_timeout=self.rng.choice((timedelta(minutes=30), timedelta(hours=5))))
        self.store.grab_next_visits(self.rng.choice(TYPES), requests, self.now, options=options)

    def protocol_stats(self) -> None:
        """The swh protocol's upsert: visits as told, successful ones without the feedback loop's plan."""
        batch = []
        for _ in range(self.rng.randrange(1, 10)):
            when = self.now - self.moment(timedelta(days=3))
            status = self.rng.choice([None, *VisitOutcome])
            batch.append(ProtocolVisitStats(
                self.rng.choice(URLS), self.rng.choice(TYPES), last_visit=when if status else None,
                last_visit_status=status, last_successful=when if status is VisitOutcome.SUCCESSFUL else None,
                last_scheduled=self.now - self.moment(timedelta(hours=5)) if self.rng.random() < 0.3 else None))
        self.store.merge_visit_stats(batch, now=self.now)

    def step(self) -> None:
        steps = (self.listing, self.listing, self.statuses, self.statuses, self.grab)
        self.rng.choice((*steps, self.protocol_stats) if self.protocol else steps)()
        self.now += self.moment(timedelta(hours=2))

    def rows(self, visit_type: str) -> dict[str, Row]:
        """Every origin of the visit type with stats: its stats and what its listings say."""
        stats = self.store.get_visit_stats([(url, visit_type) for url in URLS])
        listings = self.store.get_listings([(lister.id, url, visit_type) for lister in self.listers for url in URLS])
        return {s.url: (s, ListingFacts.of([item for item in listings if item.origin.url == s.url])) for s in stats}


def declared_walk(policy: VisitPolicy, rows: dict[str, Row], now: datetime, options: GrabOptions,
                  count: int) -> list[tuple[Pick, tuple]]:
    """The (pick, order key) of each position of a grab of ``count``, by the declarations."""
    walk: list[tuple[Pick, tuple]] = []
    taken: set[str] = set()
    for pick in policy_picks(policy):
        room = count - len(walk)
        eligible = sorted(((pick.sort_key(*row), url) for url, row in rows.items()
                           if url not in taken and pick.eligible(*row, now, options)), key=lambda found: found[0])
        for key, url in eligible[:max(room, 0)]:
            walk.append((pick, key))
            taken.add(url)
    return walk


def check_grabs(history: History, options: GrabOptions, policies=tuple(VisitPolicy)) -> int:
    """Each policy's dry-run grab against the declarations; how many origins they took in all."""
    took = 0
    for visit_type in TYPES:
        rows = history.rows(visit_type)
        for policy in policies:
            for count in (1, 7, len(URLS)):
                got = history.store.grab_next_visits(visit_type, [GrabRequest(policy, count)], history.now,
                                                     options=options, dry_run=True)
                expected = declared_walk(policy, rows, history.now, options, count)
                said = f"{policy.value} of {count} {visit_type} at {history.now} under {options}"
                urls = [visit.url for visit in got]
                assert len(set(urls)) == len(urls), said
                assert len(urls) == len(expected), f"{said}: {urls} against {len(expected)} declared"
                for position, (url, (pick, key)) in enumerate(zip(urls, expected, strict=True)):
                    row = rows[url]
                    assert pick.eligible(*row, history.now, options), f"{said}: #{position} {url} by {pick.name}"
                    assert pick.sort_key(*row) == key, f"{said}: #{position} {url} by {pick.name}: out of order"
                took += len(urls)
    return took


def checkpoints(history: History) -> Iterator[GrabOptions]:
    """Ninety steps of the history, stopping every thirty with the grab options to check there."""
    for number in range(90):
        history.step()
        if number % 30 == 29:
            lister = history.rng.choice([None, *(lister.id for lister in history.listers)])
            minimum_interval = history.rng.choice((timedelta(hours=1), timedelta(days=1), timedelta(days=4)))
            yield from (GrabOptions(), GrabOptions(lister_id=lister, minimum_interval=minimum_interval))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_grabs_take_the_declared_walks(store, seed):
    history = History(store, seed)
    assert sum(check_grabs(history, options) for options in checkpoints(history)) > 0


@pytest.mark.parametrize("seed", [1, 2])
def test_the_walks_of_stats_the_swh_protocol_wrote(store, seed):
    """Stats written through the swh protocol (a successful visit with no optimal revisit time): every walk as
    declared, change_rate_optimal's due walk taking those last on every store."""
    history = History(store, seed, protocol=True)
    assert sum(check_grabs(history, options) for options in checkpoints(history)) > 0
