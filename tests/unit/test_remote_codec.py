"""The remote store's codec and catalogue of verbs: every verb of every role is in its role's
reviewed list of served verbs (with its scope) or kept off the wire with a reason, the client
sends exactly the served ones and refuses the others naming them, domain values round-trip
exactly, and bad input is refused naming the field, on either side of the wire."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, time, timedelta, timezone
from typing import Any

import httpx
import pytest

from ostinato.api.tokens import SCOPES
from ostinato.domain.blackouts import BlackoutPeriod
from ostinato.domain.change_rates import RateSample
from ostinato.domain.errors import ConflictError, NotFoundError, SchemaError, ValidationError
from ostinato.domain.schedules import RunMode, RunStatus, Schedule, ScheduleKind, ScheduleRun
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskPriority, TaskRunStatus, TaskStatus
from ostinato.domain.visit_changes import VisitChanges
from ostinato.domain.visits import JournalStatus, VisitStats, VisitStatus
from ostinato.remote import RemoteError, RemoteStore
from ostinato.remote.codec import UnsupportedType, codec_for
from ostinato.remote.store_client import ANSWERED_HERE
from ostinato.remote.verbs import (
    ADMIN,
    NOT_EXPOSED,
    READ,
    ROLE_VERBS,
    WORKER,
    error_from_body,
    error_status_and_body,
    scope_of,
    store_verbs,
)
from ostinato.store import Store
from ostinato.store.interface import ROLES

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def round_trip(value: Any, hint: Any) -> Any:
    codec = codec_for(hint)
    return codec.decode(codec.encode(value, "x"), "x")


def public_verbs(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_") and callable(getattr(cls, name))}


def test_every_verb_of_every_role_is_reviewed_served_or_kept_off_with_a_reason():
    """A verb added to a role fails here until someone puts it in its role's list in
    ``remote.verbs`` (with its scope) or in the role's list of verbs not served (with why)."""
    assert [entry.role for entry in ROLE_VERBS] == list(ROLES)
    for entry in ROLE_VERBS:
        role, verbs = entry.role.__name__, public_verbs(entry.role)
        listed = set(entry.served) | set(entry.not_served)
        assert not verbs - listed, f"verbs of {role} in no list of ostinato.remote.verbs: {sorted(verbs - listed)}"
        assert not listed - verbs, f"listed for {role} but no verbs of it: {sorted(listed - verbs)}"
        assert not set(entry.served) & set(entry.not_served), f"{role}: served and not served"
        assert all(entry.not_served.values()), f"{role}: a verb not served without why"
    listed = [name for entry in ROLE_VERBS for name in [*entry.served, *entry.not_served]]
    assert len(listed) == len(set(listed)), "a verb listed under two roles"
    assert public_verbs(Store) == set(listed), "a verb of Store that is no role's"
    assert set(store_verbs()) == {name for entry in ROLE_VERBS for name in entry.served}
    assert public_verbs(Store) == set(store_verbs()) | set(NOT_EXPOSED)


#: how the names of verbs that write begin: a verb listed as read must not be named so
WRITE_PREFIXES = ("create_", "set_", "grab_", "record_", "delete_", "update_", "put_", "merge_", "mark_", "release_",
                  "steal_", "ping_", "end_", "save_", "schedule_", "overwrite_", "import_", "get_or_create_", "pick_")


def test_scopes_are_the_lists_and_a_token_can_have_them():
    assert {READ, WORKER, ADMIN} == set(SCOPES)
    assert all(verb.scope in SCOPES and verb.scope == scope_of(name) for name, verb in store_verbs().items())
    assert scope_of("get_tasks") == scope_of("list_schedules") == scope_of("schema_state") == READ
    assert scope_of("get_or_create_lister") == WORKER  # named like a read, but creates
    assert scope_of("grab_ready_tasks") == scope_of("record_run_events") == WORKER
    assert scope_of("pause_schedule") == scope_of("retry_task_run") == ADMIN
    with pytest.raises(KeyError):
        scope_of("a_verb_added_tomorrow")  # not served at all until listed
    named_like_writes = sorted(n for n, verb in store_verbs().items() if verb.scope == READ and n.startswith(WRITE_PREFIXES))
    assert not named_like_writes


def test_the_client_sends_exactly_the_served_verbs():
    sent = {name for name in public_verbs(RemoteStore) if hasattr(getattr(RemoteStore, name), "verb")}
    assert sent == set(store_verbs())
    assert ANSWERED_HERE <= set(NOT_EXPOSED) and not RemoteStore.__abstractmethods__
    assert all(not getattr(getattr(RemoteStore, name), "__isabstractmethod__", False) for name in ANSWERED_HERE)
    asked = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(200, json={"result": []})

    with RemoteStore("http://api.test", "secret", transport=httpx.MockTransport(answer)) as remote:
        assert remote.list_listers() == []
    assert asked == ["/api/v1/store/list_listers"]


@pytest.mark.parametrize("name", sorted(set(NOT_EXPOSED) - ANSWERED_HERE))
def test_the_client_refuses_a_verb_not_served_naming_it(name):
    def nothing_sent(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"{name} sent {request.url}")

    with RemoteStore("http://api.test", "secret", transport=httpx.MockTransport(nothing_sent)) as remote:
        with pytest.raises(RemoteError) as caught:
            getattr(remote, name)()
    assert str(caught.value).startswith(f"{name} is not served by the Ostinato API")
    assert NOT_EXPOSED[name] in str(caught.value)


@pytest.mark.parametrize("value, hint", [
    (NewTask("load-git", T0, TaskArguments(("https://a", [1, {"b": None}]), {"depth": 2, "big": 2**70}),
             priority=TaskPriority.HIGH, current_interval=timedelta(hours=12, microseconds=7), retries_left=3), NewTask),
    (Schedule("nightly", ScheduleKind.CALENDAR, "load-git", T0, mode=RunMode.RUN, cron_schedule="0 3 * * *",
              tz="Europe/Paris", blackout_periods=(BlackoutPeriod(time(22, 0), time(6, 30)),),
              dont_run_on_nodes=("a", "b"), average_good_duration=timedelta(seconds=1.5)), Schedule),
    (ScheduleRun(4, "nightly", "tag", "node", "me", T0, None, RunStatus.RUNNING, {"k": [1]}), ScheduleRun),
    (VisitStatus("https://a", 3, "git", JournalStatus.FULL, T0.astimezone(timezone(timedelta(hours=-5))),
                 b"\x00\xff" * 10, changes=4), VisitStatus),
    (VisitStatus("https://a", 3, "git", JournalStatus.FULL, T0, b"\x01" * 20, changes=4, newest_change_at=T0,
                 change_times=(T0 - timedelta(days=400, microseconds=3), T0)), VisitStatus),
    (VisitChanges("https://a", "git", T0, T0 - timedelta(hours=1), (T0 - timedelta(hours=1),)), VisitChanges),
    (VisitChanges("https://a", "git", T0, None, None), VisitChanges),
    (RateSample([(1.0, None, None), (None, 2.5, (0.0,) * 15 + (-1.25,))], 12), RateSample),
    (VisitStats("https://a", "git", rate_changes=1.5, rate_days=30.0, rate_evidence=(-0.5,) * 16), VisitStats),
    ({("load-git", "disabled"): 3}, dict[tuple[str, str], int]),
    ({"marked": ["a"], "taken": []}, dict[str, list[str]]),
    ([TaskStatus.DISABLED], Sequence[TaskStatus] | None),
    (None, Sequence[TaskPriority | None] | None),
    ([None, TaskPriority.LOW], Sequence[TaskPriority | None] | None),
    ({"a": {"nested": [1.5, True]}}, Mapping[str, Any]),
])
def test_domain_values_round_trip_exactly(value, hint):
    assert round_trip(value, hint) == value


def test_a_time_is_read_in_utc_whatever_its_offset():
    """PostgreSQL refuses offsets beyond ±15:59, which ISO 8601 allows: the instant is kept, in UTC."""
    decoded = codec_for(datetime).decode("2000-01-01T00:00:00+16:00", "t")
    assert decoded == datetime(1999, 12, 31, 8, tzinfo=UTC) and decoded.tzinfo is UTC


def test_the_forms_on_the_wire_are_plain_json():
    event = RunEvent(7, TaskRunStatus.EVENTFUL, T0, metadata={"m": 1})
    assert codec_for(RunEvent).encode(event, "e") == {"run_id": 7, "status": "eventful", "at": "2026-01-01T12:00:00+00:00",
                                                       "backend_id": None, "metadata": {"m": 1}, "ends": False}
    assert codec_for(timedelta).encode(timedelta(days=1, milliseconds=5), "d") == 86400.005
    assert codec_for(bytes).encode(b"\x01\xab", "b") == "01ab"
    assert codec_for(dict[tuple[str, str], int]).encode({("a", "b"): 1}, "c") == [[["a", "b"], 1]]


@pytest.mark.parametrize("hint, data, field, record", [
    (NewTask, {"type": "t", "next_run": "2026-01-01T12:00:00"}, "next_run", "tasks[0]"),  # no zone
    (NewTask, {"type": "t", "next_run": "2026-01-01 12:00:00+00:00"}, "next_run", "tasks[0]"),  # not RFC 3339
    (NewTask, {"type": "t", "next_run": "9999-01-01T12:00:00+00:00"}, "next_run", "tasks[0]"),  # too far
    (NewTask, {"type": "t"}, "next_run", "tasks[0]"),
    (NewTask, {"type": "t", "next_run": "2026-01-01T12:00:00Z", "colour": 1}, "colour", "tasks[0]"),
    (NewTask, {"type": 5, "next_run": "2026-01-01T12:00:00Z"}, "type", "tasks[0]"),
    (NewTask, {"type": "t\x00", "next_run": "2026-01-01T12:00:00Z"}, "type", "tasks[0]"),
    (NewTask, {"type": "\ud800", "next_run": "2026-01-01T12:00:00Z"}, "type", "tasks[0]"),
    (NewTask, {"type": "t", "next_run": "2026-01-01T12:00:00Z", "policy": "sometimes"}, "policy", "tasks[0]"),
    (NewTask, {"type": "t", "next_run": "2026-01-01T12:00:00Z", "retries_left": True}, "retries_left", "tasks[0]"),
    (NewTask, {"type": "t", "next_run": "2026-01-01T12:00:00Z", "retries_left": 2**64}, "retries_left", "tasks[0]"),
    (NewTask, {"type": "t", "next_run": "2026-01-01T12:00:00Z", "current_interval": 1e12}, "current_interval",
     "tasks[0]"),
    (NewTask, {"type": "t", "next_run": "2026-01-01T12:00:00Z", "arguments": {"args": "x"}}, "args",
     "tasks[0].arguments"),
    (VisitStatus, {"origin": "o", "visit": 1, "type": "git", "status": "full", "date": "2026-01-01T12:00:00Z",
                   "snapshot": "xyz"}, "snapshot", "tasks[0]"),
])
def test_bad_input_names_the_field(hint, data, field, record):
    with pytest.raises(ValidationError) as caught:
        codec_for(hint).decode(data, "tasks[0]")
    assert (caught.value.field, caught.value.record) == (field, record)


@pytest.mark.parametrize("key, field, record", [
    ("", 'kwargs[""]', "tasks[0].arguments"),  # an empty key is not an empty field
    ("a.b", 'kwargs["a.b"]', "tasks[0].arguments"),  # a dot in a key does not split the path
    ('say "x.y"', 'kwargs["say \\"x.y\\""]', "tasks[0].arguments"),
    ("plain", "plain", "tasks[0].arguments.kwargs"),
])
def test_a_bad_value_under_any_json_key_names_a_field(key, field, record):
    data = {"type": "t", "next_run": "2026-01-01T12:00:00Z", "arguments": {"args": [], "kwargs": {key: "nul\x00"}}}
    with pytest.raises(ValidationError) as caught:
        codec_for(NewTask).decode(data, "tasks[0]")
    assert (caught.value.field, caught.value.record) == (field, record)
    assert caught.value.field


def test_the_client_refuses_what_the_server_would_before_sending():
    verb = store_verbs()["create_tasks"]
    with pytest.raises(ValidationError) as caught:
        verb.encode_arguments(([NewTask("t", T0.replace(tzinfo=None))],), {})
    assert caught.value.field == "next_run"
    with pytest.raises(ValidationError) as caught:
        store_verbs()["grab_ready_tasks"].encode_arguments(("t", T0, -1), {})
    assert caught.value.field == "limit"


def test_arguments_are_checked_by_name():
    verb = store_verbs()["grab_ready_tasks"]
    assert verb.decode_arguments({"task_type": "t", "now": "2026-01-01T12:00:00Z", "limit": 5}) == {
        "task_type": "t", "now": T0, "limit": 5}
    for body, field in [({"task_type": "t", "now": "2026-01-01T12:00:00Z"}, "limit"),
                        ({"task_type": "t", "now": "2026-01-01T12:00:00Z", "limit": 5, "colour": 1}, "colour"),
                        ([1], "body")]:
        with pytest.raises(ValidationError) as caught:
            verb.decode_arguments(body)
        assert caught.value.field == field


def test_types_without_a_json_form_are_refused_loudly():
    with pytest.raises(UnsupportedType):
        codec_for(type(lambda: None))


@pytest.mark.parametrize("error, status", [
    (ValidationError("next_run", "a time", "x", record="item 3"), 400),
    (NotFoundError("lister", 4242), 404),
    (ConflictError("lister gh changed meanwhile"), 409),
    (SchemaError("run `ostinato db init`"), 503),
])
def test_errors_cross_the_wire_as_the_same_exceptions(error, status):
    got_status, body = error_status_and_body(error)
    assert got_status == status and {"field", "expected", "got", "message"} <= set(body["error"])
    rebuilt = error_from_body(body["error"])
    assert type(rebuilt) is type(error) and str(rebuilt) == str(error)
    if isinstance(error, ValidationError):
        assert (rebuilt.field, rebuilt.record) == ("next_run", "item 3")
