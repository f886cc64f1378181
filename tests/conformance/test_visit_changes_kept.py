"""What a visit saw of its changes (newest_change_at, change_times), kept beside the visit stats, on every store."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone

import pytest
from conftest import T0

from ostinato.domain.errors import ValidationError
from ostinato.domain.limits import MAX_CHANGE_TIMES
from ostinato.domain.visit_changes import VisitChanges
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
POLICY = FeedbackPolicy()
EAST = timezone(timedelta(hours=5, minutes=30))


def url(i: int) -> str:
    return f"https://forge.example/{i}"


def status(i: int, at, kind: str = "full", snapshot: bytes | None = b"\x01" * 20, **fields) -> VisitStatus:
    return VisitStatus(url(i), 1, "git", JournalStatus(kind), at, snapshot, **fields)


def test_the_times_are_stored_and_read_back_exactly(store):
    times = (T0 - 3 * DAY + timedelta(microseconds=7), (T0 - 2 * HOUR).astimezone(EAST), T0 - 400 * DAY, T0 + HOUR)
    store.record_visit_statuses([
        status(1, T0, change_times=times, changes=9),
        status(2, T0, newest_change_at=(T0 - DAY).astimezone(EAST)),
        status(3, T0, change_times=()),
        status(4, T0),  # says nothing of its changes
    ], POLICY, now=T0)
    found = store.get_visit_changes([(url(4), "git"), (url(3), "git"), (url(1), "git"), (url(2), "git"), (url(9), "git")])
    assert found == [
        VisitChanges(url(3), "git", T0, None, ()),
        VisitChanges(url(1), "git", T0, T0 + HOUR, tuple(sorted(times))),
        VisitChanges(url(2), "git", T0, T0 - DAY, None),
    ]
    assert all(t.tzinfo is UTC for c in found for t in (c.status_date, c.newest_change_at, *(c.change_times or ())) if t)
    [stats] = store.get_visit_stats([(url(1), "git")])
    assert stats.last_successful == T0 and stats.successful_visits == 1


def test_the_bound_is_stored_whole(store):
    times = tuple(T0 - timedelta(minutes=i, microseconds=i) for i in range(MAX_CHANGE_TIMES))
    store.record_visit_statuses([status(1, T0, change_times=times)], POLICY, now=T0)
    [found] = store.get_visit_changes([(url(1), "git")])
    assert found.change_times == tuple(sorted(times)) and found.newest_change_at == T0


def test_the_newest_successful_status_that_says_so_is_kept(store):
    first = status(1, T0, change_times=(T0 - DAY,))
    store.record_visit_statuses([first], POLICY, now=T0)
    later = [
        status(1, T0 + DAY),  # says nothing: leaves the times alone
        status(1, T0 + 2 * DAY, "failed", change_times=(T0 + DAY,)),  # unsuccessful: left alone too
        status(1, T0 + 3 * DAY, "full", change_times=(T0 + 3 * DAY - HOUR,), snapshot=None),  # no snapshot: failed
    ]
    store.record_visit_statuses(later, POLICY, now=T0 + 3 * DAY)
    assert store.get_visit_changes([(url(1), "git")]) == [VisitChanges(url(1), "git", T0, T0 - DAY, (T0 - DAY,))]
    [stats] = store.get_visit_stats([(url(1), "git")])
    assert stats.last_status_date == T0 + 3 * DAY  # the stats took them all
    # in one batch, the newest of an origin's statuses wins, whatever the order given
    store.record_visit_statuses([status(1, T0 + 5 * DAY, newest_change_at=T0 + 4 * DAY),
                                 status(1, T0 + 4 * DAY, change_times=(T0 + 4 * DAY,))], POLICY, now=T0 + 5 * DAY)
    assert store.get_visit_changes([(url(1), "git")]) == [VisitChanges(url(1), "git", T0 + 5 * DAY, T0 + 4 * DAY, None)]
    # a late or replayed status changes nothing
    store.record_visit_statuses([status(1, T0 + 4 * DAY, change_times=(T0,)), status(1, T0 + 5 * DAY, change_times=(T0,))],
                                POLICY, now=T0 + 6 * DAY)
    assert store.get_visit_changes([(url(1), "git")]) == [VisitChanges(url(1), "git", T0 + 5 * DAY, T0 + 4 * DAY, None)]


def test_statuses_without_them_leave_the_side_table_alone(store):
    store.record_visit_statuses([status(i, T0 + i * HOUR) for i in range(20)], POLICY, now=T0 + DAY)
    assert store.get_visit_changes([(url(i), "git") for i in range(20)]) == []
    assert len(store.get_visit_stats([(url(i), "git") for i in range(20)])) == 20


@pytest.mark.parametrize("fields, field", [
    ({"change_times": (T0, T0 + 2 * HOUR)}, "change_times[1]"),
    ({"newest_change_at": T0 - DAY, "change_times": (T0,)}, "newest_change_at"),
    ({"change_times": (T0,) * (MAX_CHANGE_TIMES + 1)}, "change_times"),
    ({"change_times": (T0, T0), "changes": 1}, "changes"),
])
def test_a_bad_batch_writes_nothing(store, fields, field):
    good = [status(i, T0, change_times=(T0 - HOUR,)) for i in range(5)]
    with pytest.raises(ValidationError) as info:
        store.record_visit_statuses([*good, status(9, T0, **fields)], POLICY, now=T0)
    assert info.value.field.endswith(field)
    keys = [(url(i), "git") for i in (*range(5), 9)]
    assert store.get_visit_changes(keys) == [] and store.get_visit_stats(keys) == []


def test_the_swh_faces_statuses_say_nothing_of_changes(store):
    """swh's visit stats have no change times: the statuses the face feeds carry None, and change nothing here."""
    from ostinato.domain.listing_grabs import ProtocolVisitStats
    from ostinato.domain.visits import VisitOutcome
    from ostinato.integrations.swh.policies import statuses_of

    fed = statuses_of([ProtocolVisitStats(url(i), "git", T0, VisitOutcome.SUCCESSFUL, T0, b"\x02" * 20) for i in range(3)])
    assert len(fed) == 3 and all(s.newest_change_at is None and s.change_times is None for s in fed)
    store.record_visit_statuses(fed, POLICY, now=T0)
    assert len(store.get_visit_stats([(url(i), "git") for i in range(3)])) == 3
    assert store.get_visit_changes([(url(i), "git") for i in range(3)]) == []


def test_a_status_dated_in_any_offset_is_kept_at_its_instant(store):
    # an offset PostgreSQL's own types refuse (beyond ±15:59) is still a valid ISO 8601 time
    far_east = timezone(timedelta(hours=16, minutes=30))
    store.record_visit_statuses([status(1, T0.astimezone(far_east), change_times=((T0 - HOUR).astimezone(far_east),))],
                                POLICY, now=T0)
    [stats] = store.get_visit_stats([(url(1), "git")])
    assert stats.last_successful == T0 and stats.last_status_date == T0
    assert store.get_visit_changes([(url(1), "git")])[0].status_date == T0
