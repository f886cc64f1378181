"""Task arguments as ``create_tasks`` checks and writes them in one pass (``TaskArguments.storable_json``): what
no store can keep is refused naming the field, the whole batch unwritten, whatever part of the batch it sits in;
what it can keep is stored, read back and deduplicated as before."""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime

import pytest
from conftest import T0
from helpers import GIT, new

from ostinato.domain.errors import ValidationError
from ostinato.domain.limits import MAX_JSON_DEPTH
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority
from ostinato.store.tasks.flow import CREATE_PART


class Colour(enum.Enum):
    RED = "red"


def nested(depth: int) -> list:
    """``depth`` lists, one in the other: as an argument (at depth 1), its innermost list is at depth ``depth``."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.fixture(autouse=True)
def types(store):
    store.create_task_type(GIT)


REFUSED = [
    pytest.param((float("nan"),), {}, "arguments.args", id="nan"),
    pytest.param((), {"x": float("inf")}, "arguments.kwargs", id="infinity"),
    pytest.param(([1, {"y": -float("inf")}],), {}, "arguments.args", id="nested-infinity"),
    pytest.param(({1: "x"},), {}, "arguments.args", id="integer-key"),
    pytest.param((), {"x": {(1, 2): "y"}}, "arguments.kwargs", id="tuple-key"),
    pytest.param(({1, 2},), {}, "arguments.args", id="set"),
    pytest.param((b"bytes",), {}, "arguments.args", id="bytes"),
    pytest.param(("a\x00b",), {}, "arguments.args", id="nul"),
    pytest.param((), {"k\x00": 1}, "arguments.kwargs", id="nul-key"),
    pytest.param(("\ud800",), {}, "arguments.args", id="surrogate"),
    pytest.param((nested(MAX_JSON_DEPTH + 1),), {}, "arguments.args", id="too-deep"),
    pytest.param((datetime(2026, 1, 1, tzinfo=UTC),), {}, "arguments.args", id="datetime"),
    pytest.param((Colour.RED,), {}, "arguments.args", id="enum"),
    pytest.param((), {"id": uuid.UUID(int=1)}, "arguments.kwargs", id="uuid"),
    pytest.param((object(),), {}, "arguments.args", id="object"),
]


@pytest.mark.parametrize("args, kwargs, field", REFUSED)
def test_an_argument_no_store_can_keep_is_refused_naming_the_field(store, args, kwargs, field):
    bad = NewTask("load-git", T0, TaskArguments(args, kwargs))
    with pytest.raises(ValidationError) as info:
        store.create_tasks([new("https://a"), bad])
    if info.value.field == field:
        assert info.value.record == "task 1"
    else:  # the remote store's client refuses it first, in its own words (``tasks[1].arguments: args[0]: ...``)
        assert "tasks[1].arguments" in str(info.value) and field.split(".")[1] in str(info.value)
    assert store.search_tasks() == []


def test_a_bad_task_in_a_later_part_of_the_batch_writes_nothing(store):
    """The parts before it were sent to the database already: the transaction takes them back."""
    count = 2 * CREATE_PART + 7
    tasks = [new(f"https://example.org/{i}") for i in range(count)]
    tasks.append(NewTask("load-git", T0, TaskArguments((float("nan"),))))
    with pytest.raises(ValidationError) as info:
        store.create_tasks(tasks)
    if info.value.field == "arguments.args":
        assert info.value.record == f"task {count}"
    else:  # the remote store's client refuses it first
        assert f"tasks[{count}].arguments" in str(info.value)
    assert store.search_tasks() == []
    assert len(store.create_tasks(tasks[:-1])) == count  # and the store goes on


KEPT = [
    pytest.param(((1, (2, 3)),), {"t": (4,)}, id="tuples-as-arrays"),
    pytest.param((2**70, -(2**80)), {}, id="integers-beyond-64-bits"),  # read back as numbers of JSON: floats
    pytest.param(("\\u0000", "a\\u0000b"), {"\\u0000": "x"}, id="text-that-looks-like-a-nul-escape"),
    pytest.param(("é中😀", 1e308, 5e-324, 0.5, True, None), {"ü": [{}]}, id="unicode-and-numbers"),
    pytest.param((-0.0,), {}, id="negative-zero"),  # which PostgreSQL's jsonb reads back as 0
    pytest.param((nested(MAX_JSON_DEPTH),), {}, id="as-deep-as-allowed"),
    pytest.param(("[[[[" * 20, "{{{{" * 20), {}, id="brackets-in-text"),
]


@pytest.mark.parametrize("args, kwargs", KEPT)
def test_an_argument_a_store_can_keep_is_stored_and_deduplicated(store, args, kwargs):
    arguments = TaskArguments(args, kwargs)
    [task] = store.create_tasks([NewTask("load-git", T0, arguments)])
    [again, other] = store.create_tasks([NewTask("load-git", T0, arguments), new("https://other")])
    assert again.id == task.id != other.id
    [stored] = store.get_tasks([task.id])
    assert stored.arguments.to_json() == arguments.to_json() or args in ((2**70, -(2**80)), (-0.0,))


def test_duplicates_and_new_tasks_mixed_across_parts_come_back_in_input_order(store):
    """Parts whose tasks are partly pending already: the pending ones found, the others inserted, in input order."""
    first = store.create_tasks([new(f"https://example.org/{i}") for i in range(0, 3 * CREATE_PART, 3)])
    urls = [f"https://example.org/{i}" for i in range(3 * CREATE_PART)]
    created = store.create_tasks([new(u) for u in urls] + [new(urls[5]), new(urls[3])])
    by_url = {t.arguments.args[0]: t.id for t in first}
    for url, task in zip(urls, created, strict=False):  # created ends with the two sent again, checked below
        assert task.arguments.args == (url,)
        if url in by_url:
            assert task.id == by_url[url]
    assert created[-2].id == created[5].id and created[-1].id == created[3].id == by_url[urls[3]]
    assert len({t.id for t in created}) == len(urls)
    assert len(store.search_tasks(limit=10 * CREATE_PART)) == len(urls)


def test_one_shot_tasks_kept_apart_by_next_run_across_parts(store):
    later = T0.replace(hour=T0.hour + 1)
    one_shot = {"policy": TaskPolicy.ONESHOT}
    [a] = store.create_tasks([new("https://a", **one_shot)])
    filler = [new(f"https://f/{i}") for i in range(CREATE_PART)]
    created = store.create_tasks(filler + [new("https://a", **one_shot), new("https://a", next_run=later, **one_shot)],
                                 one_shot_by_next_run=True)
    assert created[-2].id == a.id != created[-1].id
    assert created[-1].next_run == later
    [b] = store.create_tasks([new("https://a", next_run=later, **one_shot)])
    assert b.id in (a.id, created[-1].id)  # not kept apart: any pending one of the key


def test_one_arguments_of_several_policies_and_priorities_in_one_part(store):
    """One part holding one arguments' tasks of another policy or priority: their rows share a digest, and each
    comes back as its own task, a pending one found as such."""
    [pending] = store.create_tasks([new("https://a", priority=TaskPriority.LOW)])
    batch = [new("https://a"), new("https://a", policy=TaskPolicy.ONESHOT), new("https://a", priority=TaskPriority.HIGH),
             new("https://a", priority=TaskPriority.LOW), new("https://b"), new("https://a", policy=TaskPolicy.ONESHOT)]
    created = store.create_tasks(batch)
    assert [(t.policy, t.priority) for t in created] == [(t.policy, t.priority) for t in batch]
    assert created[3].id == pending.id and created[5].id == created[1].id
    assert len({t.id for t in created}) == 5
    assert store.get_tasks(sorted(t.id for t in created)) == sorted({t.id: t for t in created}.values(), key=lambda t: t.id)
