"""What a visit saw of its changes (domain.visit_changes): each rule of the two fields, through
parse_visit_status (the journal's, the files', the API's shape) and check_visit_status (any status)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ostinato.domain.errors import ValidationError
from ostinato.domain.limits import CHANGE_TIME_SKEW, MAX_CHANGE_TIMES
from ostinato.domain.visits import JournalStatus, VisitStatus, check_visit_status, check_visit_statuses, parse_visit_status

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
HOUR = timedelta(hours=1)
PARIS = timezone(timedelta(hours=1))
MESSAGE = {"origin": "https://forge.example/a", "visit": 4, "type": "git", "status": "full",
           "date": T0.isoformat(), "snapshot": "ab" * 20}


def iso(value: datetime) -> str:
    return value.isoformat()


def test_a_message_without_them_reads_as_before():
    parsed = parse_visit_status(MESSAGE)
    assert parsed.newest_change_at is None and parsed.change_times is None
    assert parse_visit_status({**MESSAGE, "change_times": None, "newest_change_at": None}) == parsed


def test_change_times_are_kept_ascending_in_utc_and_give_the_newest():
    given = [T0 - 2 * HOUR, (T0 - 5 * HOUR).astimezone(PARIS), T0 - 3 * HOUR]
    parsed = parse_visit_status({**MESSAGE, "change_times": [iso(t) for t in given], "changes": 3})
    assert parsed.change_times == (T0 - 5 * HOUR, T0 - 3 * HOUR, T0 - 2 * HOUR)
    assert all(t.tzinfo is UTC for t in parsed.change_times)
    assert parsed.newest_change_at == T0 - 2 * HOUR and parsed.newest_change_at.tzinfo is UTC
    assert parsed.changes == 3  # the count is the loader's, untouched


def test_newest_change_at_alone_and_with_times():
    alone = parse_visit_status({**MESSAGE, "newest_change_at": iso((T0 - HOUR).astimezone(PARIS))})
    assert alone.newest_change_at == T0 - HOUR and alone.newest_change_at.tzinfo is UTC and alone.change_times is None
    both = parse_visit_status({**MESSAGE, "newest_change_at": iso(T0), "change_times": [iso(T0 - HOUR)]})
    assert both.newest_change_at == T0 and both.change_times == (T0 - HOUR,)


def test_changes_dated_long_before_the_status_are_kept():
    """A committer date is not a push time: a change may be years older than the visit that found it."""
    old = datetime(2019, 5, 1, tzinfo=UTC)
    parsed = parse_visit_status({**MESSAGE, "change_times": [iso(old), iso(T0 - HOUR)]})
    assert parsed.change_times == (old, T0 - HOUR)


def test_duplicates_and_an_empty_list_are_kept():
    parsed = parse_visit_status({**MESSAGE, "change_times": [iso(T0 - HOUR)] * 2})
    assert parsed.change_times == (T0 - HOUR, T0 - HOUR)
    empty = parse_visit_status({**MESSAGE, "change_times": []})
    assert empty.change_times == () and empty.newest_change_at is None


def test_the_skew_is_allowed_and_no_more():
    at_bound = parse_visit_status({**MESSAGE, "change_times": [iso(T0 + CHANGE_TIME_SKEW)]})
    assert at_bound.newest_change_at == T0 + CHANGE_TIME_SKEW
    late = T0 + CHANGE_TIME_SKEW + timedelta(seconds=1)
    for change in ({"change_times": [iso(T0), iso(late)]}, {"newest_change_at": iso(late)}):
        with pytest.raises(ValidationError) as info:
            parse_visit_status({**MESSAGE, **change})
        assert info.value.field == ("change_times[1]" if "change_times" in change else "newest_change_at")
        assert "1h after the status's date" in str(info.value)


def test_the_bound_on_change_times():
    times = [iso(T0 - timedelta(minutes=i)) for i in range(MAX_CHANGE_TIMES)]
    assert len(parse_visit_status({**MESSAGE, "change_times": times}).change_times) == MAX_CHANGE_TIMES
    with pytest.raises(ValidationError) as info:
        parse_visit_status({**MESSAGE, "change_times": [*times, iso(T0)]})
    assert info.value.field == "change_times" and f"at most {MAX_CHANGE_TIMES}" in info.value.expected
    assert info.value.got == MAX_CHANGE_TIMES + 1


@pytest.mark.parametrize("change, field", [
    ({"change_times": [iso(T0), "yesterday"]}, "change_times[1]"),
    ({"change_times": [iso(T0), "2026-03-01T10:00:00"]}, "change_times[1]"),  # no zone
    ({"change_times": [iso(T0), iso(T0), 1767261600]}, "change_times[2]"),
    ({"change_times": [None]}, "change_times[0]"),
    ({"change_times": iso(T0)}, "change_times"),
    ({"change_times": {"a": 1}}, "change_times"),
    ({"change_times": ["1969-12-31T00:00:00Z"]}, "change_times[0]"),
    ({"newest_change_at": "soon"}, "newest_change_at"),
    ({"newest_change_at": 12}, "newest_change_at"),
    ({"newest_change_at": iso(T0 - 2 * HOUR), "change_times": [iso(T0 - HOUR)]}, "newest_change_at"),
    ({"change_times": [iso(T0), iso(T0 - HOUR)], "changes": 1}, "changes"),
])
def test_bad_change_fields_are_refused_naming_the_field(change, field):
    with pytest.raises(ValidationError) as info:
        parse_visit_status({**MESSAGE, **change})
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: expected")


def test_a_count_at_least_the_times_is_accepted():
    assert parse_visit_status({**MESSAGE, "change_times": [iso(T0)] * 2, "changes": 2}).changes == 2
    assert parse_visit_status({**MESSAGE, "change_times": [iso(T0)] * 2, "changes": 40}).changes == 40


def status(**fields) -> VisitStatus:
    return VisitStatus("https://forge.example/a", 4, "git", JournalStatus.FULL, T0, b"\x01" * 20, **fields)


def test_a_status_made_in_code_is_checked_and_kept_in_the_same_form():
    given = [(T0 - HOUR).astimezone(PARIS), T0 - 2 * HOUR]
    checked = check_visit_status(status(change_times=given))  # type: ignore[arg-type]  # a list, as callers give: kept as a tuple
    assert checked.change_times == (T0 - 2 * HOUR, T0 - HOUR) and checked.newest_change_at == T0 - HOUR
    assert all(t.tzinfo is UTC for t in checked.change_times)
    plain = status()
    assert check_visit_status(plain) is plain
    [batch] = check_visit_statuses([status(newest_change_at=(T0 - HOUR).astimezone(PARIS))])
    assert batch.newest_change_at is not None and batch.newest_change_at.tzinfo is UTC


@pytest.mark.parametrize("fields, field", [
    ({"change_times": (T0, datetime(2026, 3, 1, 11))}, "change_times[1]"),  # naive
    ({"change_times": (T0, "2026-03-01T10:00:00Z")}, "change_times[1]"),  # text is the parser's business
    ({"change_times": (T0,) * (MAX_CHANGE_TIMES + 1)}, "change_times"),
    ({"newest_change_at": T0 + 2 * HOUR}, "newest_change_at"),
    ({"newest_change_at": T0 - HOUR, "change_times": (T0,)}, "newest_change_at"),
    ({"changes": 0, "change_times": (T0,)}, "changes"),
])
def test_a_bad_status_made_in_code_is_refused_in_a_batch_naming_the_field(fields, field):
    with pytest.raises(ValidationError) as info:
        check_visit_statuses([status(), status(**fields)])
    assert info.value.field == field and info.value.record == "status 1"


def test_a_status_checked_once_comes_back_as_it_is():
    """What a store checks again (the journal client's statuses, the API's) is given back unchanged, not rebuilt."""
    checked = check_visit_status(status(change_times=((T0 - HOUR).astimezone(PARIS), T0 - 2 * HOUR)))
    assert check_visit_status(checked) is checked
    assert check_visit_status(status(change_times=(), newest_change_at=T0 - HOUR)).change_times == ()
    # in UTC but out of order, or in another zone: kept sorted, in UTC, as always
    unsorted = check_visit_status(status(change_times=(T0, T0 - HOUR), newest_change_at=T0))
    assert unsorted.change_times == (T0 - HOUR, T0)
    zoned = check_visit_status(status(change_times=((T0 - HOUR).astimezone(PARIS),), newest_change_at=T0 - HOUR))
    assert zoned.change_times is not None and zoned.change_times[0].tzinfo is UTC


@pytest.mark.parametrize("fields, field", [
    ({"change_times": (T0 - HOUR, T0 + 2 * HOUR), "newest_change_at": T0 + 2 * HOUR}, "change_times[1]"),
    ({"change_times": (T0 - HOUR,), "newest_change_at": T0 + 2 * HOUR}, "newest_change_at"),
    ({"change_times": (datetime(1969, 12, 31, tzinfo=UTC),), "newest_change_at": T0}, "change_times[0]"),
    ({"change_times": (T0,) * (MAX_CHANGE_TIMES + 1), "newest_change_at": T0}, "change_times"),
    ({"change_times": (T0 - HOUR, T0), "newest_change_at": T0, "changes": 1}, "changes"),
    ({"change_times": (T0 - HOUR, T0), "newest_change_at": T0 - HOUR}, "newest_change_at"),
])
def test_fields_in_the_kept_form_that_break_a_rule_are_refused(fields, field):
    with pytest.raises(ValidationError) as info:
        check_visit_status(status(**fields))
    assert info.value.field == field
