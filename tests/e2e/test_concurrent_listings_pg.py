"""Listers and the swh protocol's stats upserts writing the same origins at once on one PostgreSQL: each
scheduling row ends as its listings and the last stats sent make it, and the metrics the writes kept equal a
full recount.

The listing and the upsert update a row they found by its tuple id, and hand what another writer changed
since their snapshot to an upsert: these interleavings are what that fallback is for.
"""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime, timedelta

from ostinato.domain.listing_grabs import ProtocolVisitStats
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visits import VisitOutcome
from ostinato.store.postgresql import PostgresStore

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
URLS = [f"https://forge.example/{i}" for i in range(120)]
ROUNDS = 25


def listings(rng: random.Random) -> list[ListedOrigin]:
    """A random part of the origins, as one lister's run lists them."""
    return [ListedOrigin(url, "git", last_update=None if rng.random() < 0.2 else T0 - timedelta(hours=rng.randrange(900)),
                         enabled=rng.random() < 0.85, is_fork=rng.random() < 0.1)
            for url in rng.sample(URLS, rng.randrange(30, len(URLS)))]


def test_concurrent_listings_and_upserts_leave_each_row_as_its_writes_make_it(pg_dsn):
    with PostgresStore(pg_dsn) as setup:
        listers = [setup.get_or_create_lister(name, name, T0) for name in ("github", "gitlab", "mirror")]
    start = threading.Barrier(len(listers) + 1)
    errors: list[BaseException] = []
    sent: dict[str, ProtocolVisitStats] = {}  # the last stats the upserter sent, per origin

    def lister(index: int) -> None:
        rng = random.Random(index)
        try:
            with PostgresStore(pg_dsn) as store:
                start.wait()
                for _ in range(ROUNDS):
                    store.record_listed_origins(listers[index].id, listings(rng), T0,
                                                touch_last_seen=rng.random() < 0.8)
        except BaseException as exc:  # reported below
            errors.append(exc)

    def upserter() -> None:
        rng = random.Random(99)
        try:
            with PostgresStore(pg_dsn) as store:
                start.wait()
                for round_ in range(ROUNDS):
                    at = T0 + timedelta(minutes=round_)
                    batch = [ProtocolVisitStats(url, "git", last_visit=at, last_visit_status=VisitOutcome.SUCCESSFUL,
                                                last_successful=at, last_snapshot=bytes([round_ + 1]) * 20,
                                                queue_position=round_)
                             for url in rng.sample(URLS, 40)]
                    store.merge_visit_stats(batch, now=at)
                    sent.update((stats.url, stats) for stats in batch)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=lister, args=(i,)) for i in range(len(listers))]
    threads.append(threading.Thread(target=upserter))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors

    with PostgresStore(pg_dsn) as store, store.db.pool.connection() as conn:
        # each row as its listings make it
        wrong = conn.execute("""
            SELECT s.url FROM origin_visit_stats AS s
            JOIN (SELECT url, visit_type, count(*) AS n, bool_or(enabled) AS enabled, min(first_seen) AS first_seen,
                         max(last_update) AS newest, min(last_update) AS oldest,
                         bool_or(last_update IS NULL) AS missing, bool_or(coalesce(is_fork, false)) AS fork
                  FROM listed_origin GROUP BY url, visit_type) AS o USING (url, visit_type)
            WHERE (s.listing_count, s.enabled, s.first_seen, s.last_update, s.oldest_update, s.update_missing,
                   s.is_fork)
                  IS DISTINCT FROM (o.n, o.enabled, o.first_seen, o.newest, o.oldest, o.missing, o.fork)""").fetchall()
        assert not wrong, wrong
        rows = conn.execute("SELECT count(*) AS n FROM origin_visit_stats").fetchone()
        assert rows["n"] == len(URLS)
        # and as the last stats sent make it
        got = {(s.url, s.last_visit, s.last_snapshot, s.queue_position)
               for s in store.get_protocol_visit_stats([(url, "git") for url in sent])}
        assert got == {(s.url, s.last_visit, s.last_snapshot, s.queue_position) for s in sent.values()}
        now = T0 + timedelta(minutes=ROUNDS)
        assert store.update_origin_metrics(now) == store.update_origin_metrics(now, recount=True)
