"""The swh protocol's grab of listings, its visit stats written as told and its counts, on every
store (``domain.listing_grabs``, docs/reference/swh-compat.md, "Origins"): cooldowns computed at
each grab from its own arguments, one row per listing, the policies' filters and orders, the queue
position, dry runs, and re-recording listings without touching ``last_seen``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.errors import ValidationError
from ostinato.domain.listing_grabs import ListingGrab, ListingOrder, ProtocolVisitStats
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visits import VisitOutcome

DAY = timedelta(days=1)
SNAPSHOT = b"\x05" * 20


def url(i: int) -> str:
    return f"https://forge.example/{i}"


@pytest.fixture
def lister(store):
    return store.get_or_create_lister("forge", "one", T0)


def listed(store, lister, count: int, **kw) -> None:
    store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git", **kw) for i in range(count)], T0)


def grab(store, order=ListingOrder.OLDEST_SCHEDULED_FIRST, now=T0, count=10, **kw):
    return [row.origin.url for row in store.grab_listed_origins(ListingGrab("git", count, order, **kw), now)]


def test_stats_merged_as_told_into_ostinatos_visit_stats(store, lister):
    listed(store, lister, 1)
    store.merge_visit_stats([ProtocolVisitStats(url(0), "git", last_visit=T0, last_successful=T0, last_snapshot=SNAPSHOT,
                                              last_visit_status=VisitOutcome.SUCCESSFUL)])
    store.merge_visit_stats([ProtocolVisitStats(url(0), "git", last_visit=T0 + DAY,
                                              last_visit_status=VisitOutcome.FAILED),
                             ProtocolVisitStats("https://elsewhere.example", "hg", last_scheduled=T0)])
    [stats] = store.get_visit_stats([(url(0), "git")])
    assert (stats.last_visit, stats.last_visit_status, stats.last_successful, stats.last_snapshot) == (
        T0 + DAY, VisitOutcome.FAILED, T0, SNAPSHOT)
    assert stats.last_status_date == T0 + DAY
    [unlisted] = store.get_visit_stats([("https://elsewhere.example", "hg")])
    assert unlisted.last_scheduled == T0
    with pytest.raises(ValidationError):
        store.merge_visit_stats([ProtocolVisitStats(url(0), "git", last_visit=T0.replace(tzinfo=None))])


def test_cooldowns_computed_at_each_grab_from_its_arguments(store, lister):
    listed(store, lister, 2)
    assert grab(store) == [url(0), url(1)]
    assert grab(store, now=T0 + 6 * DAY) == []  # scheduled within 7 days, no visit since
    assert grab(store, now=T0 + 6 * DAY, scheduled_cooldown=timedelta(days=5)) == [url(0), url(1)]
    store.merge_visit_stats([ProtocolVisitStats(url(0), "git", last_visit=T0 + 7 * DAY,
                                              last_visit_status=VisitOutcome.FAILED)])
    none = dict(absolute_cooldown=None, scheduled_cooldown=None, not_found_cooldown=None)
    assert grab(store, now=T0 + 10 * DAY, failed_cooldown=timedelta(days=5), **none) == [url(1)]
    assert grab(store, now=T0 + 13 * DAY, failed_cooldown=timedelta(days=5), **none) == [url(0), url(1)]  # by last_scheduled


def test_one_row_per_listing_and_the_lister_filter(store, lister):
    other = store.get_or_create_lister("forge", "two", T0)
    listed(store, lister, 1)
    listed(store, other, 1)
    rows = store.grab_listed_origins(ListingGrab("git", 5, ListingOrder.OLDEST_SCHEDULED_FIRST), T0)
    assert sorted(row.lister_id for row in rows) == sorted([lister.id, other.id])
    [only] = store.grab_listed_origins(ListingGrab("git", 5, ListingOrder.OLDEST_SCHEDULED_FIRST, lister_ids=(other.id,),
                                                   scheduled_cooldown=None, absolute_cooldown=None), T0 + DAY)
    assert only.lister_id == other.id


def test_policies_filter_and_order_by_the_protocols_rules(store, lister):
    store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git", last_update=T0 - i * DAY) for i in range(3)]
                                + [ListedOrigin(url(3), "git")], T0)
    store.merge_visit_stats([ProtocolVisitStats(url(0), "git", last_successful=T0 - 5 * DAY, last_snapshot=SNAPSHOT),
                             ProtocolVisitStats(url(1), "git", last_successful=T0 - 3 * DAY, last_snapshot=SNAPSHOT)])
    dry = dict(dry_run=True)
    assert [r.origin.url for r in store.grab_listed_origins(
        ListingGrab("git", 9, ListingOrder.NEVER_VISITED_OLDEST_UPDATE_FIRST), T0, **dry)] == [url(2)]
    assert [r.origin.url for r in store.grab_listed_origins(
        ListingGrab("git", 9, ListingOrder.ALREADY_VISITED_ORDER_BY_LAG), T0, **dry)] == [url(0), url(1)]
    assert [r.origin.url for r in store.grab_listed_origins(
        ListingGrab("git", 9, ListingOrder.STOP_AFTER_SUCCESS), T0, **dry)] == [url(2), url(1), url(0), url(3)]
    assert grab(store, ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE) == [url(3)]
    assert store.get_visit_stats([(url(0), "git")])[0].last_scheduled is None  # the dry runs changed nothing


def test_origins_without_last_update_by_queue_position(store, lister):
    listed(store, lister, 3)
    store.merge_visit_stats([ProtocolVisitStats(url(0), "git", queue_position=50),
                             ProtocolVisitStats(url(1), "git", queue_position=20)])
    store.put_compat_records("queues", {"git": {"position": 30}})
    order = dict(queue_records="queues")
    assert grab(store, ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE, count=2, **order) == [url(2), url(1)]
    assert store.get_compat_records("queues", ["git"]) == {"git": {"position": 30}}  # never moves back
    assert grab(store, ListingOrder.ORIGINS_WITHOUT_LAST_UPDATE, **order) == [url(0)]
    assert store.get_compat_records("queues", ["git"]) == {"git": {"position": 50}}


def test_first_visits_after_listing(store, lister):
    listed(store, lister, 2)
    assert grab(store, count=1) == [url(0)]
    after = dict(lister_ids=(lister.id,), absolute_cooldown=None, scheduled_cooldown=None)
    assert grab(store, ListingOrder.FIRST_VISITS_AFTER_LISTING, **after) == [url(1)]
    assert grab(store, ListingOrder.FIRST_VISITS_AFTER_LISTING, scheduled_before=T0 + DAY, **after) == [url(0), url(1)]


def test_counts_over_listings(store, lister):
    store.record_listed_origins(lister.id, [ListedOrigin(url(0), "git", last_update=T0),
                                            ListedOrigin(url(1), "git", last_update=T0),
                                            ListedOrigin(url(2), "git", enabled=False)], T0)
    store.merge_visit_stats([ProtocolVisitStats(url(0), "git", last_successful=T0 - DAY, last_snapshot=SNAPSHOT)])
    [counts] = store.count_listed_origins(lister_id=lister.id)
    assert (counts.origins_known, counts.origins_enabled, counts.origins_never_visited,
            counts.origins_with_pending_changes) == (3, 2, 1, 1)
    assert store.count_listed_origins(lister_id=lister.id + 1) == []


def test_disabled_listings_and_last_seen_kept(store, lister):
    listed(store, lister, 1)
    store.record_listed_origins(lister.id, [ListedOrigin(url(0), "git", enabled=False)], T0 + DAY,
                                touch_last_seen=False)
    [row] = store.get_listed_origins(url=url(0))
    assert row.last_seen == T0 and not row.origin.enabled
    assert grab(store) == []
    assert grab(store, enabled=False, now=T0 + DAY) == [url(0)]
    assert store.get_visit_stats([(url(0), "git")])[0].last_scheduled == T0 + DAY  # marked as scheduled
    store.record_listed_origins(lister.id, [ListedOrigin(url(0), "git")], T0 + 2 * DAY)
    assert store.get_listed_origins(url=url(0))[0].last_seen == T0 + 2 * DAY


def test_pages_of_listings_by_lister_then_url(store, lister):
    other = store.get_or_create_lister("forge", "two", T0)
    store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git", enabled=i != 1) for i in range(4)], T0)
    store.record_listed_origins(other.id, [ListedOrigin(url(i), vt) for i in (0, 5) for vt in ("git", "hg")], T0)
    walked, after = [], (0, "")
    while True:
        page = store.list_listings(enabled=None, after=after, limit=2)
        walked += [(row.lister_id, row.origin.url, row.origin.visit_type) for row in page]
        if len(page) < 2:
            break
        after = (page[-1].lister_id, page[-1].origin.url)
    # by (lister, url): a page ending inside one URL's visit types goes on after that URL, as the protocol's pages
    assert walked == [(lister.id, url(i), "git") for i in range(4)] + [(other.id, url(0), "git"), (other.id, url(0), "hg"),
                                                                         (other.id, url(5), "git"), (other.id, url(5), "hg")]
    assert [r.origin.url for r in store.list_listings(lister_id=lister.id)] == [url(0), url(2), url(3)]  # enabled
    assert [(r.lister_id, r.origin.visit_type) for r in store.list_listings(urls=[url(5)], enabled=None)] == [
        (other.id, "git"), (other.id, "hg")]
    assert store.lister_visit_types(other.id) == ["git", "hg"] and store.lister_visit_types(lister.id) == ["git"]


@pytest.mark.parametrize("order", [ListingOrder.OLDEST_SCHEDULED_FIRST, ListingOrder.NEVER_VISITED_OLDEST_UPDATE_FIRST])
@pytest.mark.parametrize("by_lister", [False, True])
def test_concurrent_grabs_take_different_listings_and_mark_each(pg_store, order, by_lister):
    """Grabs at once on PostgreSQL, of one visit type (by one lister each, or by any): each gets the batch
    it asks for while enough origins are free (a walk locks only what it takes: a concurrent walk skips
    what it locks), none is handed out twice, and each marks the rows it took."""
    import threading

    listers = [pg_store.get_or_create_lister("forge", name, T0) for name in ("one", "two")]
    for k, lister in enumerate(listers):  # the two listers' origins interleaved in every policy's order
        pg_store.record_listed_origins(lister.id, [ListedOrigin(url(i), "git", last_update=T0 - i * DAY)
                                                   for i in range(k, 400, 2)], T0)
    taken: list[list[str]] = []
    start = threading.Barrier(4)

    def grab_some(k: int) -> None:
        lister_ids = (listers[k % 2].id,) if by_lister else None
        start.wait()
        for round_ in range(3):
            now = T0 + (round_ + 1) * DAY
            grab = ListingGrab("git", 30, order, lister_ids=lister_ids)
            taken.append([row.origin.url for row in pg_store.grab_listed_origins(grab, now)])

    threads = [threading.Thread(target=grab_some, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(len(batch) for batch in taken) == [30] * 12  # 360 of the 400, each grab its whole batch
    urls = [u for batch in taken for u in batch]
    assert len(set(urls)) == len(urls)  # none handed out twice (swh's cooldown after a grab is 7 days)
    stats = pg_store.get_visit_stats([(u, "git") for u in urls])
    assert len(stats) == len(urls) and all(s.last_scheduled is not None for s in stats)


def test_a_dry_run_takes_no_lock(pg_store):
    """On PostgreSQL a real grab locks the rows it takes and walks past rows another transaction holds; a
    dry run locks nothing: it reads those rows (what a grab would take once they are free) and so cannot
    keep a concurrent grab from the origins it only looked at."""
    import threading

    lister = pg_store.get_or_create_lister("forge", "one", T0)
    listed(pg_store, lister, 20)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another transaction holding every row, as a concurrent grab holds what it takes
        with pg_store.db.write() as conn:
            conn.execute("SELECT 1 FROM origin_visit_stats FOR UPDATE")
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(60)
        looked = pg_store.grab_listed_origins(ListingGrab("git", 10, ListingOrder.OLDEST_SCHEDULED_FIRST), T0,
                                              dry_run=True)
        assert [row.origin.url for row in looked] == sorted(url(i) for i in range(20))[:10]  # ties by URL
        assert grab(pg_store, count=10) == []  # a real grab skips what is held
        assert pg_store.grab_listed_origins(ListingGrab("git", 10, ListingOrder.OLDEST_SCHEDULED_FIRST,
                                                        enabled=False), T0, dry_run=True) == []
    finally:
        release.set()
        holder.join()
    assert len(grab(pg_store, count=10)) == 10
