"""Fuzzing visit statuses, by every path they come in: the parser (files, HTTP bodies), the
journal's JSON and msgpack messages, Celery outcome messages, the store's own
``record_visit_statuses``, and ``ostinato visit-status record`` on a JSON-lines file.

Each property: the input is accepted, or refused with a ValidationError naming the field
that was spoiled; nothing else escapes; a refused batch leaves every table as it was.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import msgpack
import pytest
from click.testing import CliRunner
from fuzz_helpers import (
    BAD_VALUES,
    ODD_TIMES,
    dump,
    fuzz_settings,
    garbage_lines,
    json_line,
    loader_store_fixture,  # noqa: F401 - the fixture loader_store, found by pytest among this module's names
    mutated,
    rejected_or_accepted,
    store_url,
    strict_json,
)
from hypothesis import assume, given
from hypothesis import strategies as st

from ostinato.cli import cli
from ostinato.domain.errors import ValidationError
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus, parse_visit_status, plan_visit_feedback
from ostinato.integrations.celery.app import Outcome
from ostinato.integrations.kafka.journal_messages import decode_visit_status

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
VALID = {"origin": "https://e.org/r.git", "visit": 3, "type": "git", "status": "full", "date": "2026-03-04T05:06:07Z",
         "snapshot": "ab" * 20, "changes": 2}
FIELDS = ["origin", "visit", "type", "status", "date", "snapshot", "changes"]
RUN = {"id": 7, "status": "eventful", "at": "2026-03-04T05:06:07Z", "backend_id": "celery:w1", "metadata": {"k": 1},
       "started": "2026-03-04T05:00:00Z"}
RUN_FIELDS = ["id", "status", "at", "backend_id", "metadata", "started"]


def applicable(status: VisitStatus) -> None:
    """An accepted status goes through the feedback maths without error (no overflow, whatever its date)."""
    plan_visit_feedback({}, [status], FeedbackPolicy(), T0)


# -- the parser --------------------------------------------------------------------
@fuzz_settings(250)
@given(st.data())
def test_parse_visit_status_accepts_or_names_the_spoiled_field(data):
    record, touched = mutated(VALID, data, FIELDS)
    result = rejected_or_accepted(lambda: parse_visit_status(record), touched)
    if isinstance(result, VisitStatus):
        applicable(result)


@fuzz_settings(120)
@given(st.one_of(ODD_TIMES, st.datetimes(timezones=st.timezones(), allow_imaginary=False)))
def test_any_date_is_accepted_with_room_for_arithmetic_or_refused_as_date(date):
    result = rejected_or_accepted(lambda: parse_visit_status({**VALID, "date": date}), "date")
    if isinstance(result, VisitStatus):
        applicable(result)


# -- the journal: JSON and msgpack ---------------------------------------------------
def _packed(record) -> bytes:
    try:
        return msgpack.packb(record, use_bin_type=True, datetime=True)
    except (OverflowError, TypeError, ValueError):  # a value msgpack cannot carry (2**70, a naive datetime, a surrogate)
        assume(False)


@fuzz_settings(120)
@given(st.data(), st.booleans())
def test_journal_messages_are_decoded_or_refused_by_field(data, as_msgpack):
    record, touched = mutated(VALID, data, FIELDS)
    if as_msgpack and touched == "date" and data.draw(st.booleans()):
        record["date"] = data.draw(st.one_of(
            st.datetimes(min_value=datetime(1, 1, 2), timezones=st.just(UTC)),
            st.builds(lambda d: {"swhtype": "datetime", "d": d}, BAD_VALUES),
            st.builds(lambda s: {"__datetime__": True, "s": s}, ODD_TIMES),
            st.builds(msgpack.Timestamp, st.integers(-(2**40), 2**40), st.integers(0, 10**9 - 1)),
        ))
    value = _packed(record) if as_msgpack else json_line(record)
    undecodable = {touched: {"record"}} if not as_msgpack and not strict_json(value) else None
    result = rejected_or_accepted(lambda: decode_visit_status(value), touched, undecodable)
    if isinstance(result, ValidationError):
        return
    applicable(result)


@fuzz_settings(120)
@given(st.one_of(st.binary(max_size=300), garbage_lines()))
def test_journal_garbage_is_refused_as_a_record_or_a_field(value):
    try:
        applicable(decode_visit_status(value))
    except ValidationError:
        pass


# -- Celery outcomes -------------------------------------------------------------------
@fuzz_settings(120)
@given(st.data(), st.booleans())
def test_outcome_messages_name_the_field(data, spoil_run):
    if spoil_run:
        run, touched = mutated(RUN, data, RUN_FIELDS, extra_keys=False)
        message, prefix = {"run": run, "visit_status": VALID}, "run."
    else:
        status, touched = mutated(VALID, data, FIELDS)
        message, prefix = {"run": RUN, "visit_status": status}, "visit_status."
    rejected_or_accepted(lambda: Outcome.from_message(message), touched, prefix=prefix)


# -- the store's own door ------------------------------------------------------------------
BAD_STATUS_FIELDS = {
    "origin": st.one_of(st.sampled_from(["", " ", "a\x00b", "x" * 3000, "\ud800"]), BAD_VALUES),
    "type": st.one_of(st.sampled_from(["", "a\x00", "g" * 101, "\udfff"]), BAD_VALUES),
    "visit": st.one_of(st.sampled_from([-1, 2**63, 2**64, True]), BAD_VALUES),
    "date": st.one_of(st.sampled_from([datetime(9999, 12, 31, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC),
                                       datetime(2026, 1, 1), datetime(1969, 12, 31, tzinfo=UTC)]), BAD_VALUES),
    "snapshot": st.sampled_from([b"", "ab", 5]),
    "changes": st.one_of(st.sampled_from([-1, 2**63, True, 1.5]), BAD_VALUES),
}


def _statuses(count: int, start: int = 0) -> list[VisitStatus]:
    return [VisitStatus(f"https://e.org/{start + i}", 1, "git", JournalStatus.FULL, T0 + timedelta(minutes=i), bytes([i % 256]) * 20)
            for i in range(count)]


@pytest.mark.postgresql
@fuzz_settings(15)
@given(data=st.data())
def test_a_batch_with_one_bad_status_changes_nothing(store, data):
    """Statuses made in code (an embedded worker, a service) skip the parser: the store checks them itself."""
    batch = _statuses(data.draw(st.integers(0, 5)), start=data.draw(st.integers(0, 10**6)))
    name = data.draw(st.sampled_from(sorted(BAD_STATUS_FIELDS)))
    bad = replace(_statuses(1)[0], **{name: data.draw(BAD_STATUS_FIELDS[name])})
    batch.insert(data.draw(st.integers(0, len(batch))), bad)
    before = dump(store)
    try:
        store.record_visit_statuses(batch, FeedbackPolicy(), now=T0)
    except ValidationError as exc:
        assert exc.field == name, exc
        assert dump(store) == before


# -- ostinato visit-status record ------------------------------------------------------------
@pytest.mark.postgresql
@fuzz_settings(15)
@given(data=st.data())
def test_a_file_with_one_bad_line_is_refused_whole(loader_store, data):
    lines = [json_line({**VALID, "origin": f"https://e.org/{data.draw(st.integers(0, 10**6))}", "visit": i})
             for i in range(data.draw(st.integers(0, 4)))]
    if data.draw(st.booleans()):
        bad, touched = data.draw(garbage_lines()), "record"
    else:
        record, touched = mutated(VALID, data, FIELDS)
        duplicate = (touched, VALID.get(touched)) if data.draw(st.booleans()) and touched in VALID else None
        bad = json_line(record, duplicate)
    position = data.draw(st.integers(0, len(lines)))
    lines.insert(position, bad)
    before = dump(loader_store)
    result = CliRunner().invoke(cli, ["--db", store_url(loader_store), "visit-status", "record", "-"],
                                input=b"\n".join(lines) + b"\n")
    assert result.exit_code in (0, 2), (result.output, result.exception)
    if result.exit_code == 2:
        message = result.stderr.strip()
        assert message.startswith("error: line "), message
        field = message.split(": ")[2]
        # garbage that parses as a JSON object is refused by whichever field it gets wrong (or lacks)
        assert field and (touched == "record" or field in (touched, "record", "type")), message  # type: no loader
        assert dump(loader_store) == before
