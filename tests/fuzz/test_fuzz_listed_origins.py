"""Fuzzing listed origins, by every path they come in: the parser (files, HTTP bodies), the
store's own ``record_listed_origins``, and ``ostinato origin record`` on a JSON-lines file.

Each property: the input is accepted, or refused with a ValidationError naming the field
that was spoiled; nothing else escapes; a refused batch leaves every table as it was.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import orjson
import pytest
from click.testing import CliRunner
from fuzz_helpers import (
    BAD_VALUES,
    deep,
    dump,
    fuzz_settings,
    garbage_lines,
    json_line,
    loader_store_fixture,  # noqa: F401 - the fixture loader_store, found by pytest among this module's names
    mutated,
    rejected_or_accepted,
    store_url,
)
from hypothesis import given
from hypothesis import strategies as st

from ostinato.cli import cli
from ostinato.domain.errors import ValidationError
from ostinato.domain.origins import ListedOrigin, parse_listed_origin

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
VALID = {"url": "https://e.org/r.git", "visit_type": "git", "extra_loader_arguments": {"branch": "main"},
         "last_update": "2026-01-02T03:04:05Z", "enabled": True, "is_fork": False, "forked_from_url": "https://e.org/up.git"}
FIELDS = sorted(VALID)


# -- the parser --------------------------------------------------------------------
@fuzz_settings(250)
@given(st.data())
def test_parse_listed_origin_accepts_or_names_the_spoiled_field(data):
    record, touched = mutated(VALID, data, FIELDS)
    result = rejected_or_accepted(lambda: parse_listed_origin(record), touched)
    if isinstance(result, ListedOrigin):  # what the stores will write: JSON they can encode
        orjson.dumps(result.extra_loader_arguments)


@fuzz_settings(150)
@given(st.dictionaries(st.text(max_size=8), BAD_VALUES, max_size=4) | st.just({"a": deep(65)}) | st.just({"a": deep(63)}))
def test_extra_loader_arguments_are_storable_json_or_refused(extra):
    result = rejected_or_accepted(lambda: parse_listed_origin({**VALID, "extra_loader_arguments": extra}),
                                  "extra_loader_arguments")
    if isinstance(result, ListedOrigin):
        orjson.dumps(result.extra_loader_arguments)


# -- the store's own door ------------------------------------------------------------------
BAD_ORIGIN_FIELDS = {
    "url": st.sampled_from(["", "a\x00b", "https://e.org/" + "a" * 65_536, "\ud800", 5, None]),
    "visit_type": st.sampled_from(["", "g\x00", "g" * 101, "\udfff", b"git"]),
    "extra_loader_arguments": st.sampled_from([{"a": "\x00"}, {"\x00": 1}, {"a": float("nan")}, {"a": 2**70}, {1: 2},
                                               {"a": {1, 2}}, {"a": deep(100)}, ["a"], {"a": "\ud800"}]),
    "last_update": st.sampled_from([datetime(2026, 1, 1), "2026-01-01T00:00:00Z", 5]),
    "enabled": st.sampled_from([None, 1, "yes"]),
    "is_fork": st.sampled_from([0, "no"]),
    "forked_from_url": st.sampled_from(["a\x00", "\ud800", 5]),
}


@pytest.mark.postgresql
@fuzz_settings(15)
@given(data=st.data())
def test_a_batch_with_one_bad_origin_changes_nothing(store, data):
    """Origins made in code (a lister in Python) skip the parser: the store checks them itself."""
    lister = store.get_or_create_lister("fuzz", "fuzz", T0)
    start = data.draw(st.integers(0, 10**6))
    batch = [ListedOrigin(f"https://e.org/{start + i}", "git", {"i": i}) for i in range(data.draw(st.integers(0, 5)))]
    name = data.draw(st.sampled_from(sorted(BAD_ORIGIN_FIELDS)))
    bad = replace(ListedOrigin("https://e.org/bad", "git"), **{name: data.draw(BAD_ORIGIN_FIELDS[name])})
    batch.insert(data.draw(st.integers(0, len(batch))), bad)
    before = dump(store)
    with pytest.raises(ValidationError) as caught:
        store.record_listed_origins(lister.id, batch, T0)
    assert caught.value.field == name, caught.value
    assert dump(store) == before


# -- ostinato origin record ------------------------------------------------------------
@pytest.mark.postgresql
@fuzz_settings(15)
@given(data=st.data())
def test_a_file_with_one_bad_line_is_refused_whole(loader_store, data):
    lines = [json_line({**VALID, "url": f"https://e.org/{data.draw(st.integers(0, 10**6))}"})
             for _ in range(data.draw(st.integers(0, 4)))]
    if data.draw(st.booleans()):
        bad, touched = data.draw(garbage_lines()), "record"
    else:
        record, touched = mutated(VALID, data, FIELDS)
        duplicate = (touched, VALID.get(touched)) if data.draw(st.booleans()) and touched in VALID else None
        bad = json_line(record, duplicate)
    lines.insert(data.draw(st.integers(0, len(lines))), bad)
    before = dump(loader_store)
    result = CliRunner().invoke(cli, ["--db", store_url(loader_store), "origin", "record", "-", "--lister", "fuzz/fuzz"],
                                input=b"\n".join(lines) + b"\n")
    assert result.exit_code in (0, 2), (result.output, result.exception)
    if result.exit_code == 2:
        message = result.stderr.strip()
        assert message.startswith("error: line "), message
        field = message.split(": ")[2]
        # garbage that parses as a JSON object is refused by whichever field it gets wrong (or lacks)
        assert field and (touched == "record" or field in (touched, "record", "visit_type")), message  # visit_type: no loader
        assert dump(loader_store) == before
