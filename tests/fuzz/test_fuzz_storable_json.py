"""``TaskArguments.storable_json``: one pass that proves arguments storable and writes their canonical JSON must
answer exactly as the check (``check_json_value``) then ``to_json`` did: the same text (the digest that existing
rows are deduplicated by), the same refusals naming the same field."""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime

from fuzz_helpers import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from ostinato.domain.errors import ValidationError
from ostinato.domain.limits import check_json_value
from ostinato.domain.tasks import TaskArguments, canonical_json, storable_json


class Colour(enum.Enum):
    RED = "red"


ODD = st.sampled_from([float("nan"), float("inf"), -float("inf"), b"x", {1, 2}, frozenset(), "a\x00b", "\ud800",
                       "\\u0000", Colour.RED, uuid.UUID(int=3), datetime(2026, 1, 1, tzinfo=UTC), 2**64,
                       -(2**70), -0.0, object()])
SCALARS = st.none() | st.booleans() | st.integers(-(2**66), 2**66) | st.floats() | st.text(max_size=8) | ODD
KEYS = st.text(max_size=4) | st.integers(0, 3) | st.sampled_from(["k\x00", "\udc80", None])
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                      | st.dictionaries(KEYS, inner, max_size=3), max_leaves=12)


def deep(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def old_way(arguments: TaskArguments) -> str:
    check_json_value(list(arguments.args), "arguments.args")
    check_json_value(dict(arguments.kwargs), "arguments.kwargs")
    return arguments.to_json()


def outcome(call, arguments: TaskArguments):
    try:
        return call(arguments)
    except ValidationError as exc:
        return ("refused", exc.field, exc.expected)
    except TypeError:
        return ("TypeError",)


@fuzz_settings(400)
@given(st.lists(VALUES, max_size=3), st.dictionaries(st.text(max_size=4), VALUES, max_size=3))
def test_one_pass_answers_as_the_check_then_the_canonical_json(args, kwargs):
    arguments = TaskArguments(tuple(args), kwargs)
    assert outcome(lambda a: a.storable_json(), arguments) == outcome(old_way, arguments)


@fuzz_settings(200)
@given(VALUES)
def test_a_text_given_is_the_canonical_json_of_a_storable_document(value):
    document = {"args": [value], "kwargs": {}}
    text = storable_json(document)
    if text is not None:
        check_json_value(document["args"], "args")
        assert text == canonical_json(document)


def test_depth_at_and_beyond_the_limit():
    assert TaskArguments((deep(64),)).storable_json() == TaskArguments((deep(64),)).to_json()
    for depth in (65, 100, 300):
        arguments = TaskArguments((), {"x": deep(depth)})
        assert outcome(lambda a: a.storable_json(), arguments) == outcome(old_way, arguments)
        assert outcome(lambda a: a.storable_json(), arguments)[:2] == ("refused", "arguments.kwargs")


def test_the_common_arguments_take_the_one_pass():
    assert storable_json({"args": ["https://example.org/x", 1, 2.5, None, True], "kwargs": {"a": {"b": [1]}}}) \
        == '{"args":["https://example.org/x",1,2.5,null,true],"kwargs":{"a":{"b":[1]}}}'
    for odd in (float("nan"), "a\x00", (1,), Colour.RED, 2**64):
        assert storable_json({"args": [odd], "kwargs": {}}) is None
