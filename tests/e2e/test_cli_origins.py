"""End-to-end tests of ``ostinato lister``, ``origin`` and ``visit-status`` on a real SQLite file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from cli_helpers import add_loaders, ok, ok_json, run

from ostinato.store import open_store

A = "https://github.com/turtl/mobile"
B = "https://github.com/turtl/server"
SNAP = "9b922e6d8d5b803c1582aabe5525b7b91150788e"
OTHER_SNAP = "aa" * 20
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def url(fresh_url):
    url = fresh_url
    ok(url, "db", "init")
    add_loaders(url, "git", "git-checkout", "hg", "svn")
    return url








def lines(*records):
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def origin(url, visit_type="git", **fields):
    return {"url": url, "visit_type": visit_type, **fields}


def status(url, when, state="full", snapshot=SNAP, visit=1, visit_type="git"):
    return {"origin": url, "visit": visit, "type": visit_type, "status": state, "date": when.isoformat(), "snapshot": snapshot}


def write(tmp_path, name, *records):
    path = tmp_path / name
    path.write_text(lines(*records))
    return str(path)


def listed(url):
    with open_store(url) as store:
        return store.get_listed_origins()


def stats(url, *keys):
    with open_store(url) as store:
        return store.get_visit_stats(list(keys))


def changes_seen(url, *keys):
    with open_store(url) as store:
        return store.get_visit_changes(list(keys))


# -- listers --------------------------------------------------------------------
def test_lister_add_is_get_or_create(url):
    first = ok_json(url, "lister", "add", "github", "github")
    assert first["created"] is True and first["name"] == "github" and first["instance_name"] == "github"
    assert first["current_state"] == {} and first["last_listing_finished_at"] is None
    again = ok_json(url, "lister", "add", "github", "github")
    assert again["id"] == first["id"] and again["created"] is False
    other = ok_json(url, "lister", "add", "gitlab", "gitlab.inria.fr")
    assert other["id"] != first["id"]

    out = ok(url, "lister", "add", "github", "github").output
    assert out.splitlines()[0] == f"Lister {first['id']} already exists"
    assert "Instance: github" in out and "Last listing finished: never" in out


def test_lister_list(url):
    assert ok_json(url, "lister", "list") == []
    ok(url, "lister", "add", "gitlab", "gitlab.inria.fr")
    ok(url, "lister", "add", "github", "github")
    data = ok_json(url, "lister", "list")
    assert [(d["name"], d["instance_name"]) for d in data] == [("github", "github"), ("gitlab", "gitlab.inria.fr")]
    table = ok(url, "lister", "list").output
    assert "gitlab.inria.fr" in table and "github" in table and "2 listers" in table


def test_lister_add_refuses_a_blank_name(url):
    result = run(url, "lister", "add", " ", "x")
    assert result.exit_code == 2 and "NAME: expected a non-empty name" in result.output


# -- origin record --------------------------------------------------------------
def test_origin_record_from_a_file(url, tmp_path):
    path = write(tmp_path, "origins.jsonl",
                 origin(A, last_update="2026-01-02T03:04:05Z", is_fork=False),
                 "",
                 origin(B, "git", extra_loader_arguments={"depth": 1}, is_fork=True, forked_from_url=A))
    out = ok(url, "origin", "record", "--lister", "github/github", path).output
    assert out.splitlines() == ["Created lister github/github (id 1)", "Recorded 2 origins for lister github/github (id 1)"]
    found = {o.origin.url: o for o in listed(url)}
    assert set(found) == {A, B}
    assert found[A].origin.last_update == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert found[B].origin.extra_loader_arguments == {"depth": 1} and found[B].origin.forked_from_url == A
    assert all(o.lister_id == 1 and o.origin.enabled for o in found.values())


def test_origin_record_from_stdin_with_instance_and_batches(url):
    data = ok_json(url, "origin", "record", "--lister", "gitlab", "--instance", "gitlab.inria.fr", "--batch-size", "1", "-",
                   input=lines(origin(A), origin(B), origin(A, "git", extra_loader_arguments={"x": 1})))
    assert data["recorded"] == 2 and data["lines"] == 3 and data["merged"] == 1
    assert (data["lister"]["name"], data["lister"]["instance_name"]) == ("gitlab", "gitlab.inria.fr")
    found = {o.origin.url: o.origin for o in listed(url)}
    assert found[A].extra_loader_arguments == {"x": 1}  # the last line of a (url, visit_type) wins


def test_re_recording_updates_last_seen(url):
    ok(url, "origin", "record", "--lister", "github/github", "-", input=lines(origin(A, last_update="2026-01-01T00:00:00Z")))
    [before] = listed(url)
    ok(url, "origin", "record", "--lister", "github/github", "-", input=lines(origin(A, last_update="2026-02-01T00:00:00Z")))
    [after] = listed(url)
    assert after.first_seen == before.first_seen and after.last_seen > before.last_seen
    assert after.origin.last_update == datetime(2026, 2, 1, tzinfo=UTC)
    assert [item["id"] for item in ok_json(url, "lister", "list")] == [1]


# -- visit-status record and origin show ----------------------------------------
def test_visit_statuses_follow_seed_000(url, tmp_path):
    ok(url, "origin", "record", "--lister", "github/github", "-", input=lines(origin(A), origin(B)))
    path = write(tmp_path, "statuses.jsonl",
                 status(A, T0, "created", None),
                 status(A, T0 + timedelta(hours=1)),
                 status(A, T0 + timedelta(days=4, hours=1), visit=2),        # same snapshot: uneventful
                 status(B, T0, "failed", None))
    data = ok_json(url, "visit-status", "record", path)
    assert data == {"statuses": 4, "changed": 3, "ignored": 1}

    [a, b] = stats(url, (A, "git"), (B, "git"))
    second = T0 + timedelta(days=4, hours=1)
    assert a.last_visit == a.last_successful == a.last_uneventful == second
    assert a.last_eventful == T0 + timedelta(hours=1)
    assert a.next_visit_target == second + timedelta(days=8)  # 4 days since the last success, × 2
    assert a.last_snapshot == bytes.fromhex(SNAP) and a.failure_count == 0
    assert b.last_visit is None and b.failure_count == 1 and b.next_visit_target == T0 + timedelta(days=1)

    # replaying the same file changes nothing
    out = ok(url, "visit-status", "record", path).output
    assert "0 changed the visit stats, 4 ignored" in out
    assert stats(url, (A, "git"), (B, "git")) == [a, b]

    # an eventful visit divides the interval (clamped to the minimum interval)
    ok(url, "visit-status", "record", "--adjust-factor", "4", "-",
       input=lines(status(A, second + timedelta(days=2), snapshot=OTHER_SNAP, visit=3)))
    [a] = stats(url, (A, "git"))
    assert a.last_eventful == second + timedelta(days=2) and a.next_visit_target == second + timedelta(days=3)


def test_visit_status_record_takes_its_knobs_from_the_settings(url, tmp_path):
    (tmp_path / "ostinato.toml").write_text('[ostinato]\nfailure_delay = "3d"\nfailed_cooldown = "5d"\n')
    # the CLI's clock is the wall clock: a cooldown already over would be stored as none
    t = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    ok(url, "visit-status", "record", "-", input=lines(status(A, t, "failed", None)))
    [a] = stats(url, (A, "git"))
    assert a.next_visit_target == t + timedelta(days=3) and a.cooldown_until == t + timedelta(days=5)
    # an option wins over the setting
    ok(url, "visit-status", "record", "--failure-delay", "2h", "-",
       input=lines(status(A, t + timedelta(minutes=1), "failed", None, visit=2)))
    [a] = stats(url, (A, "git"))
    assert a.next_visit_target == t + timedelta(minutes=1, hours=2) and a.failure_count == 2


def test_origin_show(url):
    ok(url, "lister", "add", "gitlab", "gitlab.inria.fr")
    ok(url, "origin", "record", "--lister", "github/github", "-",
       input=lines(origin(A, last_update="2026-01-02T00:00:00Z", is_fork=True, forked_from_url=B), origin(A, "git-checkout")))
    ok(url, "origin", "record", "--lister", "gitlab", "--instance", "gitlab.inria.fr", "-", input=lines(origin(A)))
    ok(url, "visit-status", "record", "-", input=lines(status(A, T0), status(A, T0 + timedelta(days=4), visit=2)))

    data = ok_json(url, "origin", "show", A)
    assert data["url"] == A and [v["visit_type"] for v in data["visit_types"]] == ["git", "git-checkout"]
    git, checkout = data["visit_types"]
    # by lister id: gitlab was declared first
    assert [(x["lister"], x["instance_name"]) for x in git["listed"]] == [("gitlab", "gitlab.inria.fr"), ("github", "github")]
    assert git["listed"][1]["is_fork"] is True and git["listed"][1]["forked_from_url"] == B
    assert git["listed"][0]["is_fork"] is None and git["listed"][0]["last_update"] is None
    assert git["listed"][1]["last_update"] == "2026-01-02T00:00:00+00:00"
    assert git["stats"]["last_snapshot"] == SNAP and git["stats"]["last_visit_status"] == "successful"
    assert git["stats"]["next_visit_target"] == (T0 + timedelta(days=12)).isoformat()
    assert checkout["stats"]["last_visit"] is None and checkout["stats"]["successful_visits"] == 0

    out = ok(url, "origin", "show", A).output
    assert out.splitlines()[0] == f"Origin {A}"
    assert "Listed by github/github (lister 2): enabled" in out and "Listed by gitlab/gitlab.inria.fr (lister 1)" in out
    assert f"Fork: yes, of {B}" in out and f"Last snapshot: {SNAP}" in out
    assert "(2026-01-13 00:00:00+00:00)" in out and "Visits: none recorded" in out


def test_what_a_visit_saw_of_its_changes_is_recorded_and_shown(url):
    ok(url, "origin", "record", "--lister", "github/github", "-", input=lines(origin(A), origin(A, "hg")))
    times = ["2025-12-31T23:00:00Z", "2025-11-02T08:00:00+02:00", "2025-12-31T22:00:00Z"]
    ok(url, "visit-status", "record", "-", input=lines({**status(A, T0), "changes": 3, "change_times": times},
                                                       status(A, T0, visit_type="hg")))
    [seen] = changes_seen(url, (A, "git"), (A, "hg"))
    assert seen.change_times == (datetime(2025, 11, 2, 6, tzinfo=UTC), datetime(2025, 12, 31, 22, tzinfo=UTC),
                                 datetime(2025, 12, 31, 23, tzinfo=UTC))
    git, hg = ok_json(url, "origin", "show", A)["visit_types"]
    assert git["changes_seen"] == {"status_date": T0.isoformat(), "newest_change_at": "2025-12-31T23:00:00+00:00",
                                   "change_times": ["2025-11-02T06:00:00+00:00", "2025-12-31T22:00:00+00:00",
                                                    "2025-12-31T23:00:00+00:00"]}
    assert hg["changes_seen"] is None
    out = ok(url, "origin", "show", A).output
    assert "      Changes seen (visit of 2026-01-01 00:00:00+00:00): newest " in out
    assert ("(2025-12-31 23:00:00+00:00); 3 change times found, 2025-11-02 06:00:00+00:00 to "
            "2025-12-31 23:00:00+00:00\n") in out
    assert out.count("Changes seen") == 1


def test_origin_show_unknown_url(url):
    result = run(url, "origin", "show", "https://nowhere/x")
    assert result.exit_code == 1 and result.output.strip() == "error: origin not found: https://nowhere/x"


def test_three_failures_disable_until_listed_again(url):
    ok(url, "origin", "record", "--lister", "github/github", "-", input=lines(origin(A)))
    failures = [status(A, T0 + timedelta(days=i), "failed", None, visit=i) for i in range(3)]
    ok(url, "visit-status", "record", "-", input=lines(*failures[:2]))
    assert [o.origin.enabled for o in listed(url)] == [True]
    ok(url, "visit-status", "record", "-", input=lines(failures[2]))
    assert [o.origin.enabled for o in listed(url)] == [False]
    assert "Listed by github/github (lister 1): disabled" in ok(url, "origin", "show", A).output
    [a] = stats(url, (A, "git"))
    assert a.failure_count == 3 and a.last_visit_status.value == "failed"

    ok(url, "origin", "record", "--lister", "github/github", "-", input=lines(origin(A)))
    assert [o.origin.enabled for o in listed(url)] == [True]
    assert "): enabled" in ok(url, "origin", "show", A).output


def test_max_failures_option(url):
    ok(url, "origin", "record", "--lister", "github/github", "-", input=lines(origin(A)))
    ok(url, "visit-status", "record", "--max-failures", "1", "-", input=lines(status(A, T0, "not_found", None)))
    assert [o.origin.enabled for o in listed(url)] == [False]


# -- bad input ------------------------------------------------------------------
GOOD_ORIGIN = json.dumps(origin("https://example.org/new"))
BAD_ORIGINS = {
    "JSON syntax error": ('{"url": "https://x/y", "visit_type": "git"', "record", "one JSON object per line"),
    "missing url": (json.dumps({"visit_type": "git"}), "url", "a non-empty URL"),
    "visit_type not text": (json.dumps(origin("https://x/y", 42)), "visit_type", "a visit type such as git, got 42"),
    "bad last_update": (json.dumps(origin("https://x/y", last_update="last tuesday")), "last_update", "an ISO 8601 time"),
    "last_update without zone": (json.dumps(origin("https://x/y", last_update="2026-01-01T00:00:00")), "last_update", "a time with a zone"),
    "not an object": ("[1, 2]", "record", "a JSON object"),
    "NaN": (json.dumps(origin("https://x/y", extra_loader_arguments={"x": float("nan")})), "record", "NaN is not a JSON value"),
    "unpaired surrogate": ('{"url": "https://x/\\ud800", "visit_type": "git"}', "url", "valid Unicode text"),
}


@pytest.mark.parametrize("case", BAD_ORIGINS, ids=list(BAD_ORIGINS))
def test_bad_origin_line_writes_nothing(url, case):
    bad, field, expected = BAD_ORIGINS[case]
    ok(url, "origin", "record", "--lister", "github/github", "-", input=lines(origin(A)))
    before = listed(url)
    result = run(url, "origin", "record", "--lister", "new-lister/new-lister", "--batch-size", "1", "-", input=lines(GOOD_ORIGIN, "", bad, GOOD_ORIGIN))
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert message.startswith(f"error: line 3: {field}: expected ") and expected in message, message
    assert "\n" not in message
    assert listed(url) == before
    assert [item["name"] for item in ok_json(url, "lister", "list")] == ["github"]


GOOD_STATUS = json.dumps(status(B, T0))
BAD_STATUSES = {
    "missing date": (json.dumps({k: v for k, v in status(A, T0).items() if k != "date"}), "date", "a value (the field is required)"),
    "missing origin": (json.dumps({k: v for k, v in status(A, T0).items() if k != "origin"}), "origin", "a value"),
    "unknown status": (json.dumps(status(A, T0, "exploded")), "status", "one of created, ongoing, full"),
    "bad date": (json.dumps({**status(A, T0), "date": "yesterday"}), "date", "an ISO 8601 time"),
    "date not text": (json.dumps({**status(A, T0), "date": 12}), "date", "an ISO 8601 time"),
    "bad snapshot": (json.dumps(status(A, T0, snapshot="xyz")), "snapshot", "hexadecimal text"),
    "bad visit": (json.dumps(status(A, T0, visit=-1)), "visit", "a whole number of 0 or more"),
    "JSON syntax error": ('{"origin": ', "record", "one JSON object per line"),
    "bad change time": (json.dumps({**status(A, T0), "change_times": [T0.isoformat(), "noon"]}), "change_times[1]",
                        "an ISO 8601 time"),
    "change time later than the date": (json.dumps({**status(A, T0), "change_times": [(T0 + timedelta(hours=2)).isoformat()]}),
                                        "change_times[0]", "a time at most 1h after the status's date"),
    "too many change times": (json.dumps({**status(A, T0), "change_times": [T0.isoformat()] * 65}), "change_times",
                              "at most 64 times"),
    "count below the times": (json.dumps({**status(A, T0), "changes": 0, "change_times": [T0.isoformat()]}), "changes",
                              "at least as many changes as change_times holds"),
    "newest older than a time": (json.dumps({**status(A, T0), "newest_change_at": (T0 - timedelta(days=1)).isoformat(),
                                             "change_times": [T0.isoformat()]}), "newest_change_at", "no older than"),
}


@pytest.mark.parametrize("case", BAD_STATUSES, ids=list(BAD_STATUSES))
def test_bad_status_line_writes_nothing(url, case):
    bad, field, expected = BAD_STATUSES[case]
    ok(url, "visit-status", "record", "-", input=lines(status(A, T0)))
    before = stats(url, (A, "git"), (B, "git"))
    good = json.dumps({**status(B, T0), "change_times": [T0.isoformat()]})
    result = run(url, "visit-status", "record", "--batch-size", "1", "-", input=lines(good, bad, good))
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert message.startswith(f"error: line 2: {field}: expected ") and expected in message, message
    assert "\n" not in message
    assert stats(url, (A, "git"), (B, "git")) == before and len(before) == 1
    assert changes_seen(url, (A, "git"), (B, "git")) == []


@pytest.mark.parametrize("args, field, expected", [
    (["--adjust-factor", "1"], "--adjust-factor", "a number greater than 1"),
    (["--adjust-factor", "fast"], "--adjust-factor", "a number"),
    (["--minimum-interval", "0s"], "--minimum-interval", "a positive duration"),
    (["--max-failures", "0"], "--max-failures", "a whole number of at least 1"),
    (["--batch-size", "0"], "--batch-size", "a whole number of at least 1"),
])
def test_bad_feedback_options(url, args, field, expected):
    result = run(url, "visit-status", "record", *args, "-", input=lines(status(A, T0)))
    assert result.exit_code == 2 and result.output.startswith(f"error: {field}: expected {expected}"), result.output
    assert stats(url, (A, "git")) == []


def test_missing_file_is_a_usage_error(url, tmp_path):
    result = run(url, "origin", "record", "--lister", "github/github", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2 and "No such file" in result.output
