"""The audit trail, on every store: an event kept gets an id greater than every earlier one, and comes
back as it was; listed newest first, of one target or of all, paged by ``before_id``; an event that
cannot be kept is refused naming its field, and nothing is written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from conftest import T0

from ostinato.domain.audit import AuditEvent, one_line
from ostinato.domain.errors import ValidationError

S = timedelta(seconds=1)
#: not the remote store: no token may write the trail (``record_audit`` is not served; the operator verbs
#: write it, and their conformance tests run on the remote store too)
pytestmark = pytest.mark.parametrize("store", ["sqlite", "postgresql", "read-routing"], indirect=True)


def event(n: int, target: str = "schedule:bills", **kw) -> AuditEvent:
    base = dict(at=T0 + n * S, actor="ops-admin", action="schedule.pause", target=target, outcome="done: paused")
    return AuditEvent(**{**base, **kw})


def test_an_event_comes_back_as_it_was_with_its_id(store):
    kept = store.record_audit(event(0, actor="Zoë admin", outcome="refused: schedule 'bills' is paused — résumé"))
    assert kept.id is not None and kept.id >= 1
    assert kept == event(0, actor="Zoë admin", outcome="refused: schedule 'bills' is paused — résumé").kept(kept.id)
    [found] = store.list_audit()
    assert found == kept and found.at == T0 and found.at.utcoffset() == timedelta(0)


def test_newest_first_of_one_target_or_of_all_and_paged(store):
    kept = [store.record_audit(event(n, target="schedule:bills" if n % 2 else "task:12",
                                     action="schedule.run-now" if n % 2 else "task.retry")) for n in range(7)]
    ids = [e.id for e in kept]
    assert ids == sorted(ids) and len(set(ids)) == 7
    assert [e.id for e in store.list_audit()] == ids[::-1]
    assert [e.id for e in store.list_audit(limit=3)] == ids[::-1][:3]
    assert [e.target for e in store.list_audit(target="task:12")] == ["task:12"] * 4
    assert [e.id for e in store.list_audit(target="schedule:bills")] == [ids[5], ids[3], ids[1]]
    page = store.list_audit(target="task:12", limit=2)
    assert [e.id for e in page] == [ids[6], ids[4]]
    assert [e.id for e in store.list_audit(target="task:12", limit=2, before_id=page[-1].id)] == [ids[2], ids[0]]
    assert store.list_audit(before_id=ids[0]) == [] and store.list_audit(limit=0) == []
    assert store.list_audit(target="schedule:nothing") == []
    assert [e.id for e in store.list_audit(before_id=ids[3], limit=10)] == [ids[2], ids[1], ids[0]]


def test_the_time_is_kept_to_the_microsecond_in_utc(store):
    at = datetime(2026, 3, 29, 3, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    kept = store.record_audit(event(0, at=at))
    [found] = store.list_audit(target=kept.target)
    assert found.at == at and found.at.utcoffset() == timedelta(0)


@pytest.mark.parametrize("field, bad", [
    ("actor", ""), ("actor", " padded "), ("actor", "two\nlines"), ("actor", "x" * 801),
    ("action", "Pause"), ("action", "schedule pause"), ("action", ""), ("action", "a" * 65),
    ("target", "bills"), ("target", "schedule:"), ("target", "schedule:" + "b" * 300),
    ("outcome", ""), ("outcome", "done\nand more"), ("outcome", "x" * 1001), ("outcome", "nul\x00here"),
    ("at", datetime(2026, 1, 1)), ("at", datetime(3001, 1, 1, tzinfo=UTC)),
])
def test_what_cannot_be_kept_is_refused_naming_its_field(store, field, bad):
    with pytest.raises(ValidationError) as refused:
        store.record_audit(event(0, **{field: bad}))
    assert refused.value.field == field
    assert store.list_audit() == []


def test_bounds_of_a_listing_are_checked(store):
    with pytest.raises(ValidationError) as refused:
        store.list_audit(limit=-1)
    assert refused.value.field == "limit"
    with pytest.raises(ValidationError) as refused:
        store.list_audit(before_id=-5)
    assert refused.value.field == "before_id"


def test_a_long_message_fits_an_outcome_once_made_one_line(store):
    message = "refused: " + "line one\nline two\t" * 200
    kept = store.record_audit(event(0, outcome=one_line(message)))
    assert "\n" not in kept.outcome and kept.outcome.endswith("…") and len(kept.outcome.encode()) <= 1000
    assert store.list_audit()[0].outcome == kept.outcome
