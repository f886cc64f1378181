"""What the fuzz tests share: their example budget, the strategies of bad values, and a dump of
a store's rows to tell that a rejected batch changed nothing.

Budget: each test names its number of examples for CI (derandomized: the same examples at every
run, well under a minute for the whole folder). ``OSTINATO_FUZZ_EXAMPLES=N`` multiplies every
test's examples by N and draws new ones at each run (``make fuzz`` runs N=20); pytest's
``--hypothesis-seed=S`` makes such a long run repeatable.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from typing import Any

import orjson
import psycopg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ostinato.domain.errors import ValidationError
from ostinato.domain.tasks import TaskType

#: every fuzz test's examples are multiplied by this (1 in CI)
SCALE = max(1, int(os.environ.get("OSTINATO_FUZZ_EXAMPLES", "1") or "1"))
LONG_RUN = SCALE > 1


def fuzz_settings(examples: int, **extra: Any) -> settings:
    """Hypothesis settings for ``examples`` examples in CI (deterministic), SCALE times more in a long run."""
    return settings(max_examples=examples * SCALE, deadline=None, derandomize=not LONG_RUN,
                    database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                          HealthCheck.data_too_large, HealthCheck.filter_too_much],
                    print_blob=True, **extra)



# -- bad values ------------------------------------------------------------------
SURROGATES = st.sampled_from(["\ud800", "a\udfffb", "\udc80" * 3])
NUL_TEXT = st.text(max_size=10).map(lambda t: t + "\x00" + t)
LONG_TEXT = st.sampled_from(["x" * 3000, "https://e.org/" + "é" * 1100, "g" * 101, " " * 50, "\u202e" * 40])
ODD_TIMES = st.sampled_from([
    "0001-01-01T00:00:00+01:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00", "9999-12-31T23:59:59Z",
    "1969-12-31T23:59:59Z", "2999-12-31T23:59:59Z", "3000-01-01T00:00:00Z", "2026-13-01T00:00:00Z",
    "2026-01-01T00:00:00", "2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00+25:00", "now", "",
    "2026-01-01T00:00:00.1234567Z", "+002026-01-01T00:00:00Z", "2026-W01-1T00:00:00Z", "１９７０-01-01T00:00:00Z",
])
AWARE_TIMES = st.datetimes(timezones=st.timezones(), allow_imaginary=False).map(lambda d: d.isoformat())
NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e308, -0.0]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=20), SURROGATES, NUL_TEXT, LONG_TEXT, ODD_TIMES, AWARE_TIMES)


def deep(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for index in range(levels):
        value = [value] if index % 2 else {"k": value}
    return value


NESTED = st.one_of(
    st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                 max_leaves=6),
    st.sampled_from([deep(70), deep(300), {"\x00": 1}, {"a": "\x00"}, {"": None}, [float("nan")]]),
)
#: what a mutated field takes: anything JSON can carry, and worse
BAD_VALUES = st.one_of(SCALARS, NESTED)


def garbage_lines() -> st.SearchStrategy[bytes]:
    """Lines that are not JSON records: random bytes, invalid UTF-8, truncated or hostile JSON."""
    return st.one_of(
        st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ")),
        st.sampled_from([b"\xff\xfe{}", b'{"url": "\xc3\x28"}', b"[" * 100_000, b"{" * 5000, b"NaN", b'{"a": Infinity}',
                         b'{"a": 1', b"null", b"[]", b'"text"', b"1e400", b'{"a": 1}{"b": 2}', b"\x00",
                         b'{"\\ud800": 1}', b'{"a": "\\u0000"}']),
        st.text(max_size=100).map(lambda t: t.replace("\n", " ").encode("utf-8", "surrogatepass")),
    )


def json_line(record: dict[str, Any], duplicate: tuple[str, Any] | None = None) -> bytes:
    """``record`` as one JSON line (NaN and Infinity written as Python does, lone surrogates escaped);
    ``duplicate`` repeats a key with another value, first (the last one counts)."""
    text = json.dumps(record, allow_nan=True)
    if duplicate is not None:
        key, value = duplicate
        text = "{" + json.dumps(key) + ": " + json.dumps(value, allow_nan=True) + (", " + text[1:] if record else "}")
    return text.encode("utf-8", "surrogatepass")


def strict_json(line: bytes) -> bool:
    """Whether ``line`` is JSON as strict readers (orjson) take it: no NaN or Infinity, no lone surrogate."""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def mutated(valid: dict[str, Any], data: st.DataObject, fields: list[str], *, extra_keys: bool = True) -> tuple[dict, str]:
    """``valid`` with one field replaced by a bad value (or dropped, or an unknown field added):
    the new record and the name of the field touched."""
    how = data.draw(st.sampled_from(["value", "value", "value", "drop", "extra"] if extra_keys else ["value", "value", "drop"]))
    record = dict(valid)
    if how == "extra":
        name = data.draw(st.sampled_from(["metadata", "URL", "url ", "\x00", "nope"]))
        record[name] = data.draw(BAD_VALUES)
        return record, name
    name = data.draw(st.sampled_from(fields))
    if how == "drop":
        record.pop(name, None)
    else:
        record[name] = data.draw(BAD_VALUES)
    return record, name


def rejected_or_accepted(call: Callable[[], Any], touched: str, related: dict[str, set[str]] | None = None,
                         prefix: str = "") -> Any:
    """Run ``call``: it returns (accepted) or raises a ValidationError naming ``touched`` (or a field
    tied to it by a rule across fields, per ``related``). Anything else fails the test."""
    try:
        return call()
    except ValidationError as exc:
        allowed = {touched, *(related or {}).get(touched, ())}
        field = exc.field.removeprefix(prefix)
        assert field in allowed or field.split("[")[0].split(".")[0] in allowed, (
            f"rejection names {exc.field!r} for a change to {touched!r}: {exc}")
        return exc


# -- store dumps -------------------------------------------------------------------
def dump(store) -> dict[str, list[str]]:
    """Every row of every table of ``store`` (SQLite file or PostgreSQL database), sorted: equal dumps,
    equal contents."""
    if hasattr(store, "path"):
        with sqlite3.connect(store.path) as conn:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            return {t: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}
    with psycopg.connect(store.dsn) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")]
        return {t: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}


def store_url(store) -> str:
    """The URL the command line opens ``store`` by."""
    return f"sqlite:///{store.path}" if hasattr(store, "path") else store.dsn


@pytest.fixture(name="loader_store")
def loader_store_fixture(store, tmp_path, monkeypatch):
    """The store with a loader of git origins, and a working folder without settings."""
    monkeypatch.chdir(tmp_path)
    for name in ("OSTINATO_DB", "OSTINATO_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    store.create_task_type(TaskType("load-git", "Load git", "ostinato.examples:load_directory"))
    return store
