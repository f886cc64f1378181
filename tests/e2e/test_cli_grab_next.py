"""End-to-end tests of ``ostinato origin grab-next`` and ``ostinato metrics`` on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from cli_helpers import add_loaders, ok, ok_json, run

ORIGINS = [
    {"url": "https://forge.example/old", "visit_type": "git", "last_update": "2024-01-01T00:00:00Z"},
    {"url": "https://forge.example/new", "visit_type": "git", "last_update": "2026-01-01T00:00:00Z"},
    {"url": "https://forge.example/fork", "visit_type": "git", "last_update": "2020-01-01T00:00:00Z", "is_fork": True},
    {"url": "https://forge.example/nodate", "visit_type": "git"},
    {"url": "https://forge.example/pkg", "visit_type": "pypi", "last_update": "2025-01-01T00:00:00Z"},
]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, fresh_url):
    if request.param == "sqlite":
        ok(fresh_url, "db", "init")
        url = fresh_url
    else:
        url = request.getfixturevalue("pg_dsn")
    add_loaders(url, "git", "pypi")
    return url


def record(url, origins=ORIGINS, lister="gh"):
    ok(url, "origin", "record", "--lister", f"{lister}/{lister}", "-", input="".join(json.dumps(o) + "\n" for o in origins))


def urls(data):
    return [v["url"].rsplit("/", 1)[1] for v in data["visits"]]


def test_grab_next_by_policy_with_dry_run(url):
    record(url)
    never = ["--policy", "never_visited_oldest_update_first"]
    dry = ok_json(url, "origin", "grab-next", "git", *never, "--dry-run")
    assert urls(dry) == ["old", "new", "fork"] and dry["dry_run"] is True
    assert {v["policy"] for v in dry["visits"]} == {"never_visited_oldest_update_first"}
    assert dry["visits"][0]["lister"] == "gh/gh"
    assert urls(ok_json(url, "origin", "grab-next", "git", *never, "--count", "2")) == ["old", "new"]
    # grabbed origins are in flight: not picked again
    assert urls(ok_json(url, "origin", "grab-next", "git", *never)) == ["fork"]
    assert urls(ok_json(url, "origin", "grab-next", "git", *never)) == []
    shown = ok_json(url, "origin", "show", "https://forge.example/old")
    assert shown["visit_types"][0]["stats"]["last_scheduled"] is not None
    # the default ratios of git still find the origin without last_update
    assert urls(ok_json(url, "origin", "grab-next", "git", "--dry-run")) == ["nodate"]
    assert urls(ok_json(url, "origin", "grab-next", "pypi")) == ["pkg"]
    out = ok(url, "origin", "grab-next", "git", "--dry-run").output
    assert "Would grab 1 git origin" in out and "gh/gh" in out


def test_grab_next_per_lister(url):
    record(url)
    record(url, [{"url": "https://forge.example/other", "visit_type": "git", "last_update": "2021-01-01T00:00:00Z"}],
           lister="gitlab")
    got = ok_json(url, "origin", "grab-next", "git", "--lister", "gitlab", "--policy", "never_visited_oldest_update_first")
    assert urls(got) == ["other"] and got["visits"][0]["lister"] == "gitlab/gitlab"
    result = run(url, "origin", "grab-next", "git", "--lister", "nobody")
    assert result.exit_code == 2 and "nobody" in result.output and "known: gh/gh, gitlab/gitlab" in result.output


@pytest.mark.parametrize("args, field", [
    (["--policy", "most_starred_first"], "policy"),
    (["--policy", "oldest_scheduled_first=-2"], "policy.oldest_scheduled_first"),
    (["--policy", "oldest_scheduled_first=0"], "policy"),
    (["--policy", "oldest_scheduled_first=lots"], "policy.oldest_scheduled_first"),
    (["--count", "-1"], "count"),
    (["--in-flight-timeout", "0s"], "--in-flight-timeout"),
])
def test_bad_grab_next_input_names_the_field_and_changes_nothing(url, args, field):
    record(url)
    result = run(url, "origin", "grab-next", "git", *args)
    assert result.exit_code == 2, result.output
    assert f"{field}:" in result.output
    assert urls(ok_json(url, "origin", "grab-next", "git", "--count", "9", "--dry-run")) == ["old", "new", "fork", "nodate"]


def test_metrics_update_and_show(url):
    record(url)
    assert "no metrics yet" in ok(url, "metrics", "show").output
    ok(url, "origin", "grab-next", "git", "--count", "1", "--policy", "never_visited_oldest_update_first")
    ok(url, "visit-status", "record", "-", input=json.dumps({
        "origin": "https://forge.example/old", "visit": 1, "type": "git", "status": "full",
        "date": "2025-06-01T00:00:00Z", "snapshot": "ab" * 20}) + "\n")
    updated = {m["visit_type"]: m for m in ok_json(url, "metrics", "update")}
    git = updated["git"]
    assert (git["origins_known"], git["origins_enabled"], git["origins_never_visited"],
            git["origins_with_pending_changes"]) == (4, 4, 3, 2)
    assert sum(git["lag_histogram"].values()) == 2 and git["lister"] == "gh/gh"
    assert updated["pypi"]["origins_known"] == 1
    assert [m["visit_type"] for m in ok_json(url, "metrics", "show", "--visit-type", "pypi")] == ["pypi"]
    assert len(ok_json(url, "metrics", "show", "--lister", "gh")) == 2
    assert "2 lister and visit type pairs" in ok(url, "metrics", "show").output


def test_unknown_visit_types_are_refused_with_the_line_and_field(url):
    bad_origin = [ORIGINS[0], {"url": "https://forge.example/typo", "visit_type": "gti"}]
    result = run(url, "origin", "record", "--lister", "gh/gh", "-", input="".join(json.dumps(o) + "\n" for o in bad_origin))
    assert result.exit_code == 2 and "line 2: visit_type:" in result.output and "'gti'" in result.output
    assert "load-git" not in result.output and "git, pypi" in result.output  # the known ones are named
    assert ok_json(url, "origin", "grab-next", "git", "--dry-run")["visits"] == []  # line 1 was not written either
    status = {"origin": "https://forge.example/old", "visit": 1, "type": "gti", "status": "full",
              "date": "2026-01-01T00:00:00Z", "snapshot": "ab" * 20}
    result = run(url, "visit-status", "record", "-", input=json.dumps(status) + "\n")
    assert result.exit_code == 2 and "line 1: type:" in result.output
    result = run(url, "origin", "grab-next", "gti")
    assert result.exit_code == 2 and "VISIT_TYPE:" in result.output
