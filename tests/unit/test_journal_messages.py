"""Decoding journal messages: JSON, the archive's msgpack with its datetime encodings, and bad messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgpack
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostinato.domain.errors import ValidationError
from ostinato.domain.visits import JournalStatus, VisitStatus
from ostinato.integrations.kafka.journal_messages import (
    MAX_ORIGIN_BYTES,
    decode_visit_status,
    encode_json,
    encode_msgpack,
)

WHEN = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
SNAPSHOT = bytes(range(20))
STATUS = VisitStatus("https://example.org/repo.git", 3, "git", JournalStatus.FULL, WHEN, SNAPSHOT)


def pack(message) -> bytes:
    return msgpack.packb(message, use_bin_type=True, datetime=True)


def swh_message(**changes):
    """An origin_visit_status as swh.journal writes it: bytes snapshot, datetime date, metadata, type."""
    message = {"origin": STATUS.origin, "visit": 3, "date": WHEN, "status": "full", "snapshot": SNAPSHOT,
               "metadata": None, "type": "git"}
    message.update(changes)
    return {k: v for k, v in message.items() if v is not ...}


def rejected(value) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        decode_visit_status(value)
    return caught.value


# -- JSON --------------------------------------------------------------------
def test_json_message_in_the_journal_shape():
    value = b'{"origin": "https://example.org/repo.git", "visit": 3, "type": "git", "status": "full", ' \
            b'"date": "2026-03-04T06:06:07.123456+01:00", "snapshot": "' + SNAPSHOT.hex().encode() + b'"}'
    assert decode_visit_status(value) == STATUS


def test_json_with_leading_whitespace_and_null_snapshot():
    value = b'  \n{"origin": "u", "visit": 0, "type": "git", "status": "failed", "date": "2026-03-04T05:06:07Z", "snapshot": null}'
    got = decode_visit_status(value)
    assert (got.status, got.snapshot, got.date) == (JournalStatus.FAILED, None, datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC))


def test_encode_json_round_trips():
    assert decode_visit_status(encode_json(STATUS)) == STATUS
    no_snapshot = VisitStatus("u", 1, "hg", JournalStatus.NOT_FOUND, WHEN, None)
    assert decode_visit_status(encode_json(no_snapshot)) == no_snapshot


# -- msgpack -----------------------------------------------------------------
def test_msgpack_with_text_keys_and_timestamp_extension():
    assert decode_visit_status(pack(swh_message())) == STATUS


def test_msgpack_with_bytes_keys():
    message = {k.encode(): v for k, v in swh_message().items()}
    assert decode_visit_status(pack(message)) == STATUS


@pytest.mark.parametrize("date", [
    WHEN,  # msgpack Timestamp extension (-1): swh.journal's value_to_kafka today
    {b"swhtype": "datetime", b"d": WHEN.isoformat()},  # read by kafka_to_value for backward compatibility
    {"swhtype": "datetime", "d": WHEN.isoformat()},
    {b"__datetime__": True, b"s": WHEN.isoformat()},  # swh.core's older msgpack_dumps
    {"__datetime__": True, "s": "2026-03-04T07:06:07.123456+02:00"},
    "2026-03-04T05:06:07.123456Z",
], ids=["timestamp", "swhtype-bytes-keys", "swhtype", "__datetime__-bytes-keys", "__datetime__-offset", "iso-text"])
def test_msgpack_datetime_encodings(date):
    assert decode_visit_status(pack(swh_message(date=date))).date == WHEN


@pytest.mark.parametrize("seconds", [0, 2**32 + 5, 1_700_000_000])
def test_msgpack_timestamp_sizes(seconds):
    # 32-bit, 64-bit and 96-bit forms of the extension
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds, microseconds=0 if seconds == 0 else 7)
    got = decode_visit_status(pack(swh_message(date=msgpack.Timestamp.from_datetime(when))))
    assert got.date == when


def test_msgpack_long_integer_extension_for_the_visit():
    # swh.journal writes integers beyond 64 bits as extension 1 (a big-endian magnitude)
    value = pack(swh_message(visit=msgpack.ExtType(1, (12).to_bytes(2, "big"))))
    assert decode_visit_status(value).visit == 12


@pytest.mark.parametrize("encoding", ["timestamp", "swhtype", "__datetime__"])
@pytest.mark.parametrize("bytes_keys", [False, True])
def test_encode_msgpack_round_trips(encoding, bytes_keys):
    assert decode_visit_status(encode_msgpack(STATUS, date_encoding=encoding, bytes_keys=bytes_keys)) == STATUS


def test_msgpack_text_fields_as_bytes():
    message = swh_message(origin=STATUS.origin.encode(), type=b"git", status=b"full")
    assert decode_visit_status(pack(message)) == STATUS


def test_non_final_status_decodes():
    assert decode_visit_status(pack(swh_message(status="ongoing", snapshot=None))).status is JournalStatus.ONGOING


# -- bad messages: each names its field ---------------------------------------
@pytest.mark.parametrize("value, field", [
    (None, "record"),
    (b"", "record"),
    (b"{not json", "record"),
    (b'{"origin": "\xff"}', "record"),
    (b"[1, 2]", "record"),  # not '{': read as msgpack, and not a map
    (b"\xc1", "record"),  # a byte msgpack never uses
    (pack([1, 2, 3]), "record"),
    (pack(swh_message()) + b"\x00", "record"),  # trailing bytes
    (b'{"visit": 1}', "origin"),
    (pack(swh_message(type=...)), "type"),  # swh messages before visit types were journalled
    (pack(swh_message(type=None)), "type"),
    (pack(swh_message(origin="")), "origin"),
    (pack(swh_message(origin="https://e.org/\x00x")), "origin"),
    (pack(swh_message(origin="https://e.org/" + "a" * MAX_ORIGIN_BYTES)), "origin"),
    (pack(swh_message(origin=b"\xff\xfe")), "origin"),
    (pack(swh_message(type="g" * 101)), "type"),
    (pack(swh_message(visit=-1)), "visit"),
    (pack(swh_message(visit=True)), "visit"),
    (pack(swh_message(visit=msgpack.ExtType(1, b"\x01" + bytes(8)))), "visit"),
    (pack(swh_message(status="done")), "status"),
    (pack(swh_message(snapshot=b"")), "snapshot"),
    (pack(swh_message(snapshot=12)), "snapshot"),
    (pack(swh_message(snapshot=msgpack.ExtType(7, b"x"))), "snapshot"),
    (pack(swh_message(date=None)), "date"),
    (pack(swh_message(date=12)), "date"),
    (pack(swh_message(date="yesterday")), "date"),
    (pack(swh_message(date="2026-03-04T05:06:07")), "date"),  # no zone
    (pack(swh_message(date={"swhtype": "datetime", "d": 3})), "date"),
    (pack(swh_message(date={"swhtype": "uuid", "d": "x"})), "date"),
    (pack(swh_message(date={b"__datetime__": True})), "date"),
    (pack(swh_message(date="0001-01-01T00:00:00+05:00")), "date"),  # no UTC form
    (pack(swh_message(date="9999-12-31T00:00:00Z")), "date"),  # next targets would overflow
    (pack(swh_message(date="1969-12-31T23:59:59Z")), "date"),
    (pack(swh_message(date=msgpack.Timestamp(2**62, 0))), "date"),
    (pack(swh_message(date=msgpack.ExtType(5, b"x"))), "date"),
    (pack({"date": 0})[:-1] + b"\xd4\xff\x01", "record"),  # a timestamp extension of 1 byte
    (pack({"date": 0})[:-1] + b"\xd7\xff" + b"\xff" * 8, "record"),  # 64-bit timestamp, nanoseconds > 10**9
    (pack(swh_message(origin=msgpack.ExtType(5, b"x"))), "origin"),
    (b'{"origin": "u", "visit": 1, "type": "git", "status": "full", "date": "2026-01-01T00:00:00Z", "snapshot": "zz"}',
     "snapshot"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_messages_name_the_field(value, field):
    assert rejected(value).field == field


def test_undecodable_bytes_show_an_excerpt():
    error = rejected(b"\xc1" + b"x" * 500)
    assert "\\xc1" in str(error) and len(str(error)) < 400


# -- anything at all ------------------------------------------------------------
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_anything_but_validation_error(data):
    try:
        decode_visit_status(data)
    except ValidationError:
        pass


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=20) | st.binary(max_size=20)
    | st.datetimes(timezones=st.just(UTC)) | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=9)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5) | st.binary(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_fields = st.sampled_from(["origin", "visit", "type", "status", "date", "snapshot", "metadata",
                           "__datetime__", "s", "swhtype", "d"])


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(_fields | _fields.map(str.encode), _values, max_size=8), st.booleans())
def test_arbitrary_maps_never_raise_anything_but_validation_error(message, as_json):
    if as_json:
        try:
            data = orjson.dumps({k.decode() if isinstance(k, bytes) else k: v for k, v in message.items()},
                                default=repr)
        except (TypeError, orjson.JSONEncodeError):
            return
    else:
        data = msgpack.packb(message, use_bin_type=True, datetime=True)
    try:
        decode_visit_status(data)
    except ValidationError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.builds(
    VisitStatus,
    origin=st.text(min_size=1, max_size=60).filter(lambda s: s.strip() and "\x00" not in s and not any(0xD800 <= ord(c) < 0xE000 for c in s)),
    visit=st.integers(0, 2**63 - 1),
    type=st.sampled_from(["git", "hg", "svn", "tar"]),
    status=st.sampled_from(list(JournalStatus)),
    date=st.datetimes(datetime(1970, 1, 2), datetime(2999, 12, 30), timezones=st.just(UTC)),
    snapshot=st.none() | st.binary(min_size=1, max_size=32),
), st.sampled_from(["json", "timestamp", "swhtype", "__datetime__"]))
def test_every_status_round_trips(status, encoding):
    data = encode_json(status) if encoding == "json" else encode_msgpack(status, date_encoding=encoding)
    assert decode_visit_status(data) == status


# -- what a visit saw of its changes: read when there, dropped (the status kept) when bad --------
CHANGES = (WHEN - timedelta(days=40), WHEN - timedelta(hours=2, microseconds=5))
SEEN = VisitStatus(STATUS.origin, 3, "git", JournalStatus.FULL, WHEN, SNAPSHOT, 2, CHANGES[-1], CHANGES)


def drops_of(value) -> tuple[VisitStatus, list[tuple[str, str, str]]]:
    drops: list[tuple[str, str, str]] = []
    status = decode_visit_status(value, lambda name, error: drops.append((name, error.field, error.expected)))
    return status, drops


@pytest.mark.parametrize("encoding", ["json", "timestamp", "swhtype", "__datetime__"])
def test_change_times_travel_in_every_encoding(encoding):
    def encode(status):
        return encode_json(status) if encoding == "json" else encode_msgpack(status, date_encoding=encoding)

    assert drops_of(encode(SEEN)) == (SEEN, [])
    newest_only = VisitStatus(STATUS.origin, 3, "git", JournalStatus.FULL, WHEN, SNAPSHOT, newest_change_at=WHEN)
    assert drops_of(encode(newest_only)) == (newest_only, [])


def test_change_times_in_the_archives_datetime_forms():
    times = [{"swhtype": "datetime", "d": CHANGES[1].isoformat()}, msgpack.Timestamp.from_datetime(CHANGES[0])]
    status, drops = drops_of(pack(swh_message(change_times=times, newest_change_at={b"__datetime__": True,
                                                                                   b"s": CHANGES[1].isoformat()})))
    assert drops == [] and status.change_times == CHANGES and status.newest_change_at == CHANGES[1]


def test_an_old_message_reads_as_before():
    assert drops_of(pack(swh_message())) == (STATUS, [])
    assert drops_of(pack(swh_message(change_times=None, newest_change_at=None))) == (STATUS, [])


@pytest.mark.parametrize("fields, dropped", [
    ({"change_times": ["noon"]}, [("change_times", "change_times[0]")]),
    ({"change_times": [WHEN, WHEN + timedelta(hours=2)]}, [("change_times", "change_times[1]")]),
    ({"change_times": [WHEN] * 65}, [("change_times", "change_times")]),
    ({"change_times": "2026-03-04T05:06:07Z"}, [("change_times", "change_times")]),
    ({"change_times": [msgpack.ExtType(9, b"x")]}, [("change_times", "change_times[0]")]),
    ({"change_times": [WHEN, WHEN], "changes": 1}, [("change_times", "changes")]),
    ({"newest_change_at": WHEN + timedelta(days=1)}, [("newest_change_at", "newest_change_at")]),
    ({"newest_change_at": 7, "change_times": [WHEN]}, [("newest_change_at", "newest_change_at")]),
    ({"newest_change_at": WHEN - timedelta(days=1), "change_times": [WHEN]}, [("newest_change_at", "newest_change_at")]),
    ({"newest_change_at": "later", "change_times": ["sooner"]},
     [("newest_change_at", "newest_change_at"), ("change_times", "change_times[0]")]),
])
def test_a_bad_change_field_is_dropped_and_the_status_kept(fields, dropped):
    status, drops = drops_of(pack(swh_message(**fields)))
    assert [(name, field) for name, field, _ in drops] == dropped
    assert (status.origin, status.date, status.snapshot) == (STATUS.origin, WHEN, SNAPSHOT)
    kept = {name for name in ("newest_change_at", "change_times") if name in fields} - {name for name, _ in dropped}
    assert (status.change_times is not None) == ("change_times" in kept)
    if "change_times" in kept:  # the newest comes from the times kept
        assert status.newest_change_at == max(status.change_times)
    elif "newest_change_at" not in kept:
        assert status.newest_change_at is None
    assert status.changes == fields.get("changes")  # the count, an old field, stays


def test_a_bad_old_field_still_refuses_the_message_whatever_the_change_times():
    error = rejected(pack(swh_message(date="yesterday", change_times=[WHEN])))
    assert error.field == "date"
