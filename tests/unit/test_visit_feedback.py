"""The feedback loop (docs/design/origins.md) on hand-computed cases, and journal message validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostinato.domain.errors import ValidationError
from ostinato.domain.visits import (
    FeedbackPolicy,
    JournalStatus,
    VisitOutcome,
    VisitStats,
    VisitStatus,
    apply_visit_status,
    parse_visit_status,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
POLICY = FeedbackPolicy()
URL = "https://example.org/repo.git"


def status(kind: str, at: datetime, snapshot: bytes | None = b"\x01" * 20, visit: int = 1) -> VisitStatus:
    return VisitStatus(URL, visit, "git", JournalStatus(kind), at, snapshot)


def feed(stats: VisitStats, *statuses: VisitStatus):
    feedback = None
    for s in statuses:
        result = apply_visit_status(stats, s, POLICY)
        if result is not None:
            feedback, stats = result, result.stats
    return stats, feedback


def test_first_success_is_eventful_and_waits_the_minimum_interval():
    stats, fb = feed(VisitStats(URL, "git"), status("full", T0))
    assert fb.eventful is True
    assert stats.last_visit == stats.last_successful == stats.last_eventful == T0
    assert stats.last_visit_status is VisitOutcome.SUCCESSFUL
    assert stats.next_visit_target == T0 + DAY  # max(1 day / 2, 1 day)
    assert stats.failure_count == 0


def test_uneventful_multiplies_and_eventful_divides_the_time_since_the_last_success():
    stats, _ = feed(VisitStats(URL, "git"), status("full", T0, b"a"))
    # same snapshot 4 days later: uneventful, 4 days x 2
    stats, fb = feed(stats, status("full", T0 + 4 * DAY, b"a"))
    assert fb.eventful is False and stats.last_uneventful == T0 + 4 * DAY and stats.last_eventful == T0
    assert stats.next_visit_target == T0 + 4 * DAY + 8 * DAY
    # new snapshot 10 days after that: eventful, 10 days / 2
    stats, fb = feed(stats, status("partial", T0 + 14 * DAY, b"b"))
    assert fb.eventful is True and stats.last_snapshot == b"b"
    assert stats.next_visit_target == T0 + 14 * DAY + 5 * DAY
    # eventful again after 1 day: 12 hours, clamped to the 1 day minimum
    stats, _ = feed(stats, status("full", T0 + 15 * DAY, b"c"))
    assert stats.next_visit_target == T0 + 16 * DAY


def test_failure_keeps_the_last_visit_date_and_retries_in_a_day():
    stats, _ = feed(VisitStats(URL, "git"), status("full", T0, b"a"))
    stats, fb = feed(stats, status("failed", T0 + 3 * DAY, None))
    assert stats.last_visit == T0 and stats.last_successful == T0
    assert stats.last_visit_status is VisitOutcome.FAILED and stats.failure_count == 1
    assert stats.next_visit_target == T0 + 4 * DAY and fb.disable is False and fb.eventful is None
    assert stats.last_snapshot == b"a"


@pytest.mark.parametrize("kind, snapshot, outcome", [
    ("failed", None, VisitOutcome.FAILED),
    ("not_found", None, VisitOutcome.NOT_FOUND),
    ("full", None, VisitOutcome.FAILED),      # full without a snapshot counts as failed
    ("partial", None, VisitOutcome.FAILED),
])
def test_failure_kinds(kind, snapshot, outcome):
    stats, _ = feed(VisitStats(URL, "git"), status(kind, T0, snapshot))
    assert stats.last_visit_status is outcome and stats.failure_count == 1 and stats.last_visit is None


def test_three_successive_failures_disable_and_a_success_resets_the_count():
    stats, fb = feed(VisitStats(URL, "git"), status("failed", T0, None), status("not_found", T0 + DAY, None))
    assert stats.failure_count == 2 and fb.disable is False
    stats, fb = feed(stats, status("failed", T0 + 2 * DAY, None))
    assert stats.failure_count == 3 and fb.disable is True
    stats, fb = feed(stats, status("full", T0 + 3 * DAY, b"s"))
    assert stats.failure_count == 0 and fb.disable is False


def test_non_final_duplicate_and_older_statuses_change_nothing():
    stats, _ = feed(VisitStats(URL, "git"), status("full", T0 + DAY, b"a"))
    assert apply_visit_status(stats, status("created", T0 + 2 * DAY), POLICY) is None
    assert apply_visit_status(stats, status("ongoing", T0 + 2 * DAY), POLICY) is None
    assert apply_visit_status(stats, status("full", T0 + DAY, b"a"), POLICY) is None  # duplicate
    assert apply_visit_status(stats, status("failed", T0, None), POLICY) is None      # older, late
    assert apply_visit_status(stats, status("full", T0 + DAY - timedelta(microseconds=1), b"z"), POLICY) is None


@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["full", "partial", "failed", "not_found", "ongoing"]),
                          st.sampled_from([None, b"a", b"b"])), max_size=12))
def test_replaying_a_journal_changes_nothing_the_second_time(events):
    statuses = [status(kind, T0 + timedelta(hours=h), snap) for h, kind, snap in events]
    once, _ = feed(VisitStats(URL, "git"), *statuses)
    twice, _ = feed(once, *statuses)
    assert twice == once
    assert once.failure_count <= len(events)
    if once.next_visit_target is not None:
        assert once.next_visit_target > once.last_status_date


def test_policy_validation_names_the_field():
    for change, field in [({"adjust_factor": 1}, "adjust_factor"), ({"minimum_interval": timedelta(0)}, "minimum_interval"),
                          ({"failure_delay": -DAY}, "failure_delay"), ({"max_failures": 0}, "max_failures")]:
        with pytest.raises(ValidationError) as info:
            FeedbackPolicy(**change).validated()
        assert info.value.field == field


def test_parse_visit_status_accepts_the_journal_shape():
    message = {"origin": URL, "visit": 3, "type": "git", "status": "full", "date": "2026-01-01T10:00:00Z",
               "snapshot": "ab" * 20}
    parsed = parse_visit_status(message)
    assert parsed == VisitStatus(URL, 3, "git", JournalStatus.FULL, datetime(2026, 1, 1, 10, tzinfo=UTC), b"\xab" * 20)
    assert parse_visit_status({**message, "snapshot": b"\x01" * 20}).snapshot == b"\x01" * 20
    assert parse_visit_status({**message, "snapshot": None}).outcome is VisitOutcome.FAILED
    assert parse_visit_status({**message, "date": T0}).date == T0


@pytest.mark.parametrize("change, field", [
    ({"origin": None}, "origin"),
    ({"origin": 7}, "origin"),
    ({"visit": "one"}, "visit"),
    ({"visit": -1}, "visit"),
    ({"type": ""}, "type"),
    ({"status": "done"}, "status"),
    ({"date": "yesterday"}, "date"),
    ({"date": "2026-01-01T10:00:00"}, "date"),
    ({"date": 1767261600}, "date"),
    ({"snapshot": "xyz"}, "snapshot"),
    ({"snapshot": ""}, "snapshot"),
    ({"snapshot": 12}, "snapshot"),
    ({"origin": "https://x/\ud800"}, "origin"),
])
def test_parse_visit_status_names_the_bad_field(change, field):
    message = {"origin": URL, "visit": 3, "type": "git", "status": "full", "date": "2026-01-01T10:00:00Z", "snapshot": None}
    message.update(change)
    with pytest.raises(ValidationError) as info:
        parse_visit_status(message)
    assert info.value.field == field
    assert field in str(info.value)


def test_parse_visit_status_refuses_a_non_object():
    with pytest.raises(ValidationError) as info:
        parse_visit_status(["origin"])
    assert info.value.field == "record"
