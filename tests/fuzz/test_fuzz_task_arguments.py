"""Fuzzing task arguments (``--args-json``, ``--kwargs-json``, ``key=value``, HTTP bodies, Celery
messages) and tasks as the store creates them.

Each property: the input is accepted, or refused with a ValidationError naming the field;
nothing else escapes; an accepted value is stored and read back equal; a refused batch of
tasks leaves every table as it was.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from fuzz_helpers import BAD_VALUES, NESTED, deep, dump, fuzz_settings, garbage_lines
from hypothesis import given
from hypothesis import strategies as st

from ostinato.cli.tasks import build_arguments
from ostinato.domain.errors import ValidationError
from ostinato.domain.tasks import NewTask, TaskArguments, TaskType

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def _text(value) -> str:
    return json.dumps(value, allow_nan=True)


@fuzz_settings(120)
@given(st.one_of(
    st.builds(lambda a, k: {"args": a, "kwargs": k}, st.lists(BAD_VALUES, max_size=3), st.dictionaries(st.text(max_size=5), BAD_VALUES, max_size=3)),
    st.dictionaries(st.sampled_from(["args", "kwargs", "other"]), BAD_VALUES, max_size=3),
    NESTED,
).map(lambda v: v if not isinstance(v, dict) or not v or set(v) <= {"args", "kwargs", "other"} else v)
  | st.builds(lambda v: _text({"args": [v]}).encode("utf-8", "surrogatepass"), BAD_VALUES)
  | garbage_lines() | st.sampled_from(["[" * 100_000, '{"args": ' + "[" * 5000 + "]" * 5000 + "}", _text({"args": deep(70)})]))
def test_task_arguments_parse_or_name_the_field(value):
    try:
        parsed = TaskArguments.parse(value)
    except ValidationError as exc:
        assert exc.field.split(".")[0] == "arguments", exc
        return
    assert TaskArguments.parse(json.loads(parsed.to_json())) == parsed  # stored and read back equal


@fuzz_settings(120)
@given(st.lists(st.text(max_size=30), max_size=4), st.one_of(st.none(), st.text(max_size=40), st.builds(_text, BAD_VALUES)),
       st.one_of(st.none(), st.text(max_size=40), st.builds(_text, BAD_VALUES)))
def test_command_line_arguments_build_or_name_the_field(args, args_json, kwargs_json):
    try:
        build_arguments(args, args_json, kwargs_json)
    except ValidationError as exc:
        assert exc.field.split(".")[0] == "arguments", exc


# -- the store ----------------------------------------------------------------------------
LOAD = TaskType("load-git", "Load git", "m.load_git", default_interval=timedelta(days=1), min_interval=timedelta(hours=1),
                max_interval=timedelta(days=64), backoff_factor=2.0)
BAD_TASK_FIELDS = {
    "arguments": st.sampled_from([TaskArguments(("\x00",)), TaskArguments((float("inf"),)), TaskArguments((), {"k": "\ud800"}),
                                  TaskArguments((deep(100),)), TaskArguments(({1, 2},))]),
    "next_run": st.sampled_from([datetime(9999, 12, 31, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC),
                                 datetime(2026, 1, 1)]),
    "current_interval": st.sampled_from([timedelta(0), timedelta(days=-1), timedelta(days=10**6)]),
    "retries_left": st.sampled_from([-1, 2**63]),
    "type": st.sampled_from(["nope", "", "load-git\x00"]),
}


@pytest.mark.postgresql
@fuzz_settings(15)
@given(data=st.data())
def test_a_batch_with_one_bad_task_changes_nothing(store, data):
    store.create_task_type(LOAD) if store.get_task_type("load-git") is None else None
    start = data.draw(st.integers(0, 10**6))
    batch = [NewTask("load-git", T0, TaskArguments((f"https://e.org/{start + i}",))) for i in range(data.draw(st.integers(0, 4)))]
    name = data.draw(st.sampled_from(sorted(BAD_TASK_FIELDS)))
    batch.insert(data.draw(st.integers(0, len(batch))),
                 replace(NewTask("load-git", T0, TaskArguments(("bad",))), **{name: data.draw(BAD_TASK_FIELDS[name])}))
    before = dump(store)
    with pytest.raises(ValidationError) as caught:
        store.create_tasks(batch)
    assert caught.value.field.split(".")[0] == name, caught.value
    assert dump(store) == before
